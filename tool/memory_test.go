package tool

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSearchMemory(t *testing.T) {
	ctx := context.Background()
	_, err := SearchMemory(ctx, "anything", 3)
	require.ErrorIs(t, err, ErrNoMemory)
	_, ok := Memory(ctx)
	assert.False(t, ok)

	var gotLimit int
	store := RetrieverFunc(func(_ context.Context, query string, limit int) ([]Document, error) {
		gotLimit = limit
		if query == "broken" {
			return nil, errors.New("index offline")
		}
		return []Document{{ID: "m1", Content: "Ada prefers window seats."}}, nil
	})
	ctx = WithMemory(ctx, store)
	docs, err := SearchMemory(ctx, "seat preference", 0)
	require.NoError(t, err)
	assert.Equal(t, "Ada prefers window seats.", docs[0].Content)
	assert.Equal(t, DefaultRetrievalLimit, gotLimit, "no limit is the default limit")
	_, err = SearchMemory(ctx, "seat", 2)
	require.NoError(t, err)
	assert.Equal(t, 2, gotLimit)
	_, err = SearchMemory(ctx, "broken", 1)
	assert.ErrorContains(t, err, "searching memory: index offline")

	_, err = SearchMemory(WithMemory(context.Background(), nil), "x", 1)
	assert.ErrorIs(t, err, ErrNoMemory, "a nil store is no store")
}
