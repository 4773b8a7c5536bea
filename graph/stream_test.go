package graph_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
)

// chatty is a graph whose only node emits more custom events than a stream
// buffers, and closes done when it returns.
func chatty(t *testing.T, done chan struct{}) *graph.Graph[doc] {
	return mustCompile(t, graph.New[doc]().
		AddNode("talk", func(ctx context.Context, s doc) (doc, error) {
			defer close(done)
			for i := range 500 {
				graph.EmitCustom(ctx, "tick", i)
			}
			return s, nil
		}).
		AddEdge(graph.START, "talk"))
}

// A loop body that panics, or that calls runtime.Goexit (t.FailNow does),
// leaves the stream as a break does: the run is stopped and waited for,
// instead of staying blocked on events no one reads.
func TestLeavingAStreamByPanicOrGoexitStopsTheRun(t *testing.T) {
	t.Run("panic", func(t *testing.T) {
		done := make(chan struct{})
		g := chatty(t, done)
		assert.PanicsWithValue(t, "consumer failed", func() {
			for range g.Stream(context.Background(), doc{}) {
				panic("consumer failed")
			}
		})
		select {
		case <-done:
		default:
			t.Fatal("the run is still going after the loop panicked")
		}
	})
	t.Run("goexit", func(t *testing.T) {
		done := make(chan struct{})
		g := chatty(t, done)
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			for range g.Stream(context.Background(), doc{}) {
				runtime.Goexit()
			}
		}()
		<-exited
		select {
		case <-done:
		default:
			t.Fatal("the run is still going after the loop's goroutine exited")
		}
	})
}

// KindInterrupt reaches the stream whatever modes it selects, WithModes(0)
// included.
func TestStreamReportsInterruptsWhateverTheModes(t *testing.T) {
	var c counts
	g := mustCompile(t, graph.New[doc]().AddNode("approve", approval(&c)).AddEdge(graph.START, "approve"),
		graph.WithCheckpointer(memory.New()))
	for _, m := range []graph.Mode{0, graph.ModeCustom, graph.ModeAll} {
		var kinds []graph.EventKind
		var last error
		for ev, err := range g.Stream(context.Background(), doc{}, graph.WithThread("t"), graph.WithModes(m)) {
			if err != nil {
				last = err
				continue
			}
			kinds = append(kinds, ev.Kind)
		}
		require.ErrorIs(t, last, graph.ErrInterrupted, "modes %b", m)
		require.NotEmpty(t, kinds, "modes %b", m)
		assert.Equal(t, graph.KindInterrupt, kinds[len(kinds)-1], "modes %b", m)
	}
}

// ResumeStream adds the thread to the options it is given without writing
// into the caller's slice.
func TestResumeStreamLeavesTheCallersOptionsAlone(t *testing.T) {
	var c counts
	g := mustCompile(t, graph.New[doc]().AddNode("approve", approval(&c)).AddEdge(graph.START, "approve"),
		graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err := g.Invoke(ctx, doc{}, graph.WithThread("t"))
	require.ErrorIs(t, err, graph.ErrInterrupted)

	backing := make([]graph.RunOption, 2)
	backing[0] = graph.WithResumeValue("yes")
	for _, err := range g.ResumeStream(ctx, "t", backing[:1]...) {
		require.NoError(t, err)
	}
	assert.Nil(t, backing[1], "the spare capacity of the caller's slice was written")
}
