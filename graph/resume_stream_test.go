package graph_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// ResumeStream continues an interrupted thread and streams its events,
// ending with KindDone and the final state.
func TestResumeStream(t *testing.T) {
	var runs atomic.Int32
	g := mustCompile(t, graph.New[sampleState](graph.WithName("ask")).
		AddNode("ask", func(ctx context.Context, s sampleState) (sampleState, error) {
			runs.Add(1)
			v, err := graph.Interrupt[string](ctx, "ok?")
			if err != nil {
				return s, err
			}
			s.Answer = v
			return s, nil
		}).
		AddNode("after", sampleIncr).
		AddEdge(graph.START, "ask").AddEdge("ask", "after"),
		graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err := g.Invoke(ctx, sampleState{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	var updates []string
	var last graph.Event
	n := 0
	for ev, err := range g.ResumeStream(ctx, "t", graph.WithResumeValue("yes")) {
		require.NoError(t, err)
		n++
		if ev.Kind == graph.KindUpdate {
			updates = append(updates, ev.Node)
		}
		last = ev
	}
	assert.Greater(t, n, 1)
	assert.Equal(t, []string{"ask", "after"}, updates)
	require.Equal(t, graph.KindDone, last.Kind)
	assert.Equal(t, "ask", last.Graph)
	assert.Equal(t, sampleState{Answer: "yes", Count: 1}, last.State)
	assert.Equal(t, int32(2), runs.Load())

	// An unknown thread ends the stream with an error.
	var errs []error
	for _, err := range g.ResumeStream(ctx, "nope") {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], state.ErrNotFound)
}

var errDiskFull = errors.New("disk full")
