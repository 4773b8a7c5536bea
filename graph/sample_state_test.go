package graph_test

import (
	"context"
)

// sampleState is the state of the small graphs several test files build. Each field is written by
// at most one task per superstep, so no reducer is needed.
type sampleState struct {
	Count  int
	A, B   int
	Answer string
	Top    []string
	Mid    []string
	Leaf   []string
	Thread string
}

func sampleNoop(_ context.Context, s sampleState) (sampleState, error) { return s, nil }

func sampleIncr(_ context.Context, s sampleState) (sampleState, error) {
	s.Count++
	return s, nil
}
