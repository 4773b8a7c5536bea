package tool

import (
	"context"
	"fmt"
)

// Document is a piece of text a Retriever found.
type Document struct {
	// ID identifies the document in its store.
	ID string `json:"id,omitempty"`
	// Content is the text the model reads.
	Content string `json:"content"`
	// Score is the retriever's relevance score; higher is more relevant.
	Score float64 `json:"score,omitempty"`
	// Metadata holds the document's attributes (source, title, ...).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Retriever finds documents relevant to a query: a vector store, a search
// index, a database.
type Retriever interface {
	// Retrieve returns at most limit documents, most relevant first.
	Retrieve(ctx context.Context, query string, limit int) ([]Document, error)
}

// RetrieverFunc adapts a function to Retriever.
type RetrieverFunc func(ctx context.Context, query string, limit int) ([]Document, error)

// Retrieve calls f.
func (f RetrieverFunc) Retrieve(ctx context.Context, query string, limit int) ([]Document, error) {
	return f(ctx, query, limit)
}

// RetrievalArgs are the arguments of a retrieval tool.
type RetrievalArgs struct {
	Query string `json:"query" jsonschema:"description=What to search for,minLength=1"`
	Limit int    `json:"limit,omitempty" jsonschema:"description=How many documents to return at most (default 5),minimum=1,maximum=50"`
}

// DefaultRetrievalLimit is the number of documents a retrieval tool returns
// when the model does not say.
const DefaultRetrievalLimit = 5

// NewRetrieval returns a tool that queries r and gives the model the
// documents found, as a JSON array. Its metadata says it is read-only,
// search-or-read and concurrency-safe unless opts set other metadata.
func NewRetrieval(name, description string, r Retriever, opts ...Option) (*FuncTool[RetrievalArgs, []Document], error) {
	if r == nil {
		return nil, fmt.Errorf("%w: retrieval tool %q has a nil retriever", ErrInvalidTool, name)
	}
	opts = append([]Option{WithMetadata(Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true})}, opts...)
	return NewFunc(name, description, func(ctx context.Context, in RetrievalArgs) ([]Document, error) {
		limit := in.Limit
		if limit <= 0 {
			limit = DefaultRetrievalLimit
		}
		docs, err := r.Retrieve(ctx, in.Query, limit)
		if err != nil {
			return nil, err
		}
		if len(docs) > limit {
			docs = docs[:limit]
		}
		if docs == nil {
			docs = []Document{}
		}
		return docs, nil
	}, opts...)
}
