package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/trellis-go/trellis/tool"
)

// The names of the tools Tools returns, and of their toolset by default.
const (
	AddName            = "memory_add"
	SearchName         = "memory_search"
	DeleteName         = "memory_delete"
	DefaultToolsetName = "memory"
)

// MaxSearchLimit is the most memories one memory_search call returns.
const MaxSearchLimit = 50

// AddArgs are the arguments of memory_add.
type AddArgs struct {
	Text   string   `json:"text" jsonschema:"description=What to remember: one fact\\, preference or decision\\, as a short statement that makes sense on its own,minLength=1"`
	Topics []string `json:"topics,omitempty" jsonschema:"description=A few keywords that help find it again"`
}

// AddResult is what memory_add returns.
type AddResult struct {
	// ID is the new memory's ID, which memory_delete takes.
	ID string `json:"id"`
}

// SearchArgs are the arguments of memory_search.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"description=What to look for,minLength=1"`
	Limit int    `json:"limit,omitempty" jsonschema:"description=How many memories to return at most (default 5),minimum=1,maximum=50"`
}

// Found is one memory memory_search returns. The entries' metadata is the
// application's and is not shown.
type Found struct {
	ID        string   `json:"id"`
	Text      string   `json:"text"`
	Topics    []string `json:"topics,omitempty"`
	CreatedAt string   `json:"created_at"`
	// Score is the relevance, rounded to four decimals; higher is more
	// relevant.
	Score float64 `json:"score,omitempty"`
}

// DeleteArgs are the arguments of memory_delete.
type DeleteArgs struct {
	ID string `json:"id" jsonschema:"description=The id of the memory to delete\\, as memory_search shows it,minLength=1"`
}

// ToolsOption configures the toolset Tools returns.
type ToolsOption func(*toolsConfig)

type toolsConfig struct {
	name     string
	readOnly bool
	problems []string
}

// WithReadOnly offers memory_search alone: the model can recall but not
// add or delete.
func WithReadOnly() ToolsOption { return func(c *toolsConfig) { c.readOnly = true } }

// WithToolsetName names the toolset (DefaultToolsetName unless set), for
// errors and logs; the tools keep their names (rename them with
// tool.WithPrefix).
func WithToolsetName(name string) ToolsOption {
	return func(c *toolsConfig) {
		if name == "" {
			c.problems = append(c.problems, "WithToolsetName: the name is empty")
		}
		c.name = name
	}
}

// Tools returns a toolset that gives a model the store: memory_add (text
// and topics; it answers with the new memory's id), memory_search (query
// and limit; it answers with the memories found, most relevant first, each
// with its id, text, topics, creation time and score) and memory_delete
// (an id). With WithReadOnly it holds memory_search alone.
//
// Every call works in the scope of the call's context, as the store's own
// methods do: run the agent with a context from WithScope (or whatever the
// store's WithScopeFunc reads) to give each user memories of their own.
// memory_search is read-only and search-or-read, memory_delete destructive
// (a permission policy can ask before it); all three are concurrency-safe.
// A call the store refuses (a memory too large, an unknown id) is an error
// result that says why.
func Tools(store *Store, opts ...ToolsOption) (*tool.Static, error) {
	c := toolsConfig{name: DefaultToolsetName}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if store == nil {
		c.problems = append(c.problems, "the store is nil")
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: memory toolset %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	search, err := searchTool(store)
	if err != nil {
		return nil, err
	}
	if c.readOnly {
		return tool.NewStatic(c.name, search), nil
	}
	add, err := addTool(store)
	if err != nil {
		return nil, err
	}
	del, err := deleteTool(store)
	if err != nil {
		return nil, err
	}
	return tool.NewStatic(c.name, add, search, del), nil
}

func addTool(store *Store) (tool.Tool, error) {
	return tool.NewFunc(AddName,
		"Save a memory for later conversations: a fact about the user or the task, a preference, a decision. "+
			"Write one self-contained statement per memory. Returns the memory's id.",
		func(ctx context.Context, in AddArgs) (AddResult, error) {
			id, err := store.Add(ctx, Entry{Text: in.Text, Topics: in.Topics})
			if err != nil {
				return AddResult{}, err
			}
			return AddResult{ID: id}, nil
		},
		tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}),
		tool.WithTitle("Save memory"))
}

func searchTool(store *Store) (tool.Tool, error) {
	how := "Matching is by words, not meaning: use the words the memory would contain."
	if store.cfg.embed != nil {
		how = "Matching is by meaning."
	}
	return tool.NewFunc(SearchName,
		"Search the memories saved in earlier conversations; returns the best matches, most relevant first, "+
			"each with the id memory_delete takes. "+how,
		func(ctx context.Context, in SearchArgs) ([]Found, error) {
			limit := in.Limit
			if limit <= 0 {
				limit = tool.DefaultRetrievalLimit
			}
			docs, err := store.Retrieve(ctx, in.Query, min(limit, MaxSearchLimit))
			if err != nil {
				return nil, err
			}
			out := make([]Found, len(docs))
			for i, d := range docs {
				out[i] = Found{ID: d.ID, Text: d.Content, Score: math.Round(d.Score*1e4) / 1e4}
				out[i].Topics, _ = d.Metadata[TopicsKey].([]string)
				out[i].CreatedAt, _ = d.Metadata[CreatedAtKey].(string)
			}
			return out, nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}),
		tool.WithTitle("Search memories"))
}

func deleteTool(store *Store) (tool.Tool, error) {
	return tool.NewFunc(DeleteName,
		"Delete a memory by its id (memory_search shows the ids), when it is wrong or no longer wanted.",
		func(ctx context.Context, in DeleteArgs) (string, error) {
			if err := store.Delete(ctx, in.ID); err != nil {
				if errors.Is(err, ErrNotFound) {
					return "", fmt.Errorf("%w; memory_search shows the ids of the memories", err)
				}
				return "", err
			}
			return fmt.Sprintf("Deleted memory %s.", in.ID), nil
		},
		tool.WithMetadata(tool.Metadata{Destructive: true, ConcurrencySafe: true}),
		tool.WithTitle("Delete memory"))
}
