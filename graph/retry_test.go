package graph_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
)

// A task whose retry is cut short because another task of the superstep
// failed did not fail for good: the superstep reports the other task's
// error, even when the retried task comes first.
func TestAbandonedRetryDoesNotHideTheFailureThatStoppedIt(t *testing.T) {
	firstTry := make(chan struct{})
	fatal := errors.New("fatal")
	g := mustCompile(t, graph.New[doc]().
		AddNode("flaky", func(_ context.Context, s doc) (doc, error) {
			select {
			case <-firstTry:
				return s, nil
			default:
				close(firstTry)
				return s, errors.New("transient")
			}
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: time.Hour})).
		AddNode("broken", func(_ context.Context, s doc) (doc, error) {
			<-firstTry
			return s, fatal
		}).
		AddEdge(graph.START, "flaky").AddEdge(graph.START, "broken"))

	var flakyEnd error
	var last error
	for ev, err := range g.Stream(context.Background(), doc{}, graph.WithModes(graph.ModeEvents)) {
		if err != nil {
			last = err
			continue
		}
		if ev.Kind == graph.KindNodeEnd && ev.Node == "flaky" {
			flakyEnd = ev.Err
		}
	}
	require.ErrorIs(t, last, fatal)
	var ne *graph.NodeError
	require.ErrorAs(t, last, &ne)
	assert.Equal(t, "broken", ne.Node)

	// The retried task's own report says why it stopped.
	require.Error(t, flakyEnd)
	assert.ErrorIs(t, flakyEnd, context.Canceled)
	assert.ErrorContains(t, flakyEnd, "transient")
}

// RetryOn decides about the node's error even when the run is being
// cancelled; an error it refuses is reported as the node's, unchanged.
func TestRetryOnRefusalIsReportedAsIs(t *testing.T) {
	permanent := errors.New("permanent")
	calls := 0
	g := mustCompile(t, graph.New[doc]().
		AddNode("a", func(_ context.Context, s doc) (doc, error) {
			calls++
			return s, permanent
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Hour,
			RetryOn: func(err error) bool { return !errors.Is(err, permanent) }})).
		AddEdge(graph.START, "a"))
	_, err := g.Invoke(context.Background(), doc{})
	require.ErrorIs(t, err, permanent)
	assert.Equal(t, `graph: node "a": permanent`, err.Error())
	assert.Equal(t, 1, calls)
}

// A node that gives up with an error of its own once its timeout expires
// fails with an error matching both ErrNodeTimeout and
// context.DeadlineExceeded, as one that returns ctx.Err() does.
func TestNodeTimeoutMatchesDeadlineWhateverTheNodeReturns(t *testing.T) {
	gaveUp := errors.New("gave up waiting")
	g := mustCompile(t, graph.New[doc]().
		AddNode("slow", func(ctx context.Context, s doc) (doc, error) {
			<-ctx.Done()
			return s, gaveUp
		}, graph.WithTimeout(time.Millisecond)).
		AddEdge(graph.START, "slow"))
	_, err := g.Invoke(context.Background(), doc{})
	require.ErrorIs(t, err, graph.ErrNodeTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, gaveUp)
	assert.Equal(t, `graph: node "slow": node timed out after 1ms: gave up waiting`, err.Error())
}

// RetryOn is the application's code: one that panics ends the retries, and
// the node fails with its own error and the panic, not an internal panic.
func TestRetryOnThatPanicsFailsTheNode(t *testing.T) {
	flaky := errors.New("flaky")
	calls := 0
	g := mustCompile(t, graph.New[doc]().
		AddNode("a", func(_ context.Context, s doc) (doc, error) {
			calls++
			return s, flaky
		}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 5, InitialInterval: time.Millisecond,
			RetryOn: func(error) bool { panic("policy bug") }})).
		AddEdge(graph.START, "a"))
	var err error
	require.NotPanics(t, func() { _, err = g.Invoke(context.Background(), doc{}) })
	require.ErrorIs(t, err, flaky)
	assert.Contains(t, err.Error(), `graph: node "a": flaky (not retried: RetryOn panicked: policy bug)`)
	assert.NotContains(t, err.Error(), "internal panic")
	assert.Equal(t, 1, calls)
}
