package tool

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoMemory is the error of SearchMemory in a run that has no memory.
var ErrNoMemory = errors.New("tool: the run has no memory store")

type memoryKey struct{}

// WithMemory returns a context whose runs have r as their memory: what an
// application keeps for a user or an agent across runs (earlier
// conversations, facts, preferences), in a store that finds what is
// relevant to a query — a vector store, a search index. Run the graph with
// the returned context, or give an agent or a ToolsNode the store with
// their WithMemory options; tools then search it with SearchMemory.
func WithMemory(ctx context.Context, r Retriever) context.Context {
	return context.WithValue(ctx, memoryKey{}, r)
}

// Memory returns the memory store of the run behind ctx, if it has one.
func Memory(ctx context.Context) (Retriever, bool) {
	r, ok := ctx.Value(memoryKey{}).(Retriever)
	return r, ok && r != nil
}

// SearchMemory searches the memory of the run behind ctx (see WithMemory)
// for at most limit documents relevant to query, most relevant first; a
// limit of zero or less is DefaultRetrievalLimit. Outside a run with memory
// it returns ErrNoMemory.
func SearchMemory(ctx context.Context, query string, limit int) ([]Document, error) {
	r, ok := Memory(ctx)
	if !ok {
		return nil, ErrNoMemory
	}
	if limit <= 0 {
		limit = DefaultRetrievalLimit
	}
	docs, err := r.Retrieve(ctx, query, limit)
	if err != nil {
		return nil, fmt.Errorf("tool: searching memory: %w", err)
	}
	return docs, nil
}
