package temporal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/temporal"
)

// liveEnv runs a workflow in a test environment on a goroutine of its
// own, so that the test can act as a caller while the run goes on. Calls
// reach the environment through its main loop (RegisterDelayedCallback
// with no delay posts to it from any goroutine), as a server would
// serialize them; once the run has ended they are made directly.
type liveEnv struct {
	env  *testsuite.TestWorkflowEnvironment
	done chan struct{}
}

// newEnv returns a test environment whose SDK logs are dropped.
func newEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet())
	return suite.NewTestWorkflowEnvironment()
}

func startLive(t *testing.T, env *testsuite.TestWorkflowEnvironment, workflow string, args ...any) *liveEnv {
	t.Helper()
	l := &liveEnv{env: env, done: make(chan struct{})}
	// A callback posted before the run starts would run before it: this
	// timer's fires after the start, which ExecuteWorkflow posts first.
	started := make(chan struct{})
	env.RegisterDelayedCallback(func() { close(started) }, time.Nanosecond)
	go func() {
		defer close(l.done)
		env.ExecuteWorkflow(workflow, args...)
	}()
	select {
	case <-started:
	case <-l.done:
	}
	t.Cleanup(func() {
		select {
		case <-l.done:
		case <-time.After(10 * time.Second):
			t.Error("the workflow did not end")
		}
	})
	return l
}

// do runs f on the environment's main loop, or here once the run has
// ended.
func (l *liveEnv) do(f func()) {
	select {
	case <-l.done:
		f()
		return
	default:
	}
	ran := make(chan struct{})
	l.env.RegisterDelayedCallback(func() {
		defer close(ran)
		f()
	}, 0)
	select {
	case <-ran:
	case <-l.done:
		select {
		case <-ran:
		default:
			f() // the run ended before the loop took f
		}
	}
}

func (l *liveEnv) query(name string, args ...any) (converter.EncodedValue, error) {
	var v converter.EncodedValue
	var err error
	l.do(func() { v, err = l.env.QueryWorkflow(name, args...) })
	return v, err
}

// events reads the events after the cursor.
func (l *liveEnv) events(t *testing.T, after int64) temporal.EventPage {
	t.Helper()
	v, err := l.query(temporal.QueryEvents, after)
	require.NoError(t, err)
	var p temporal.EventPage
	require.NoError(t, v.Get(&p))
	return p
}

func (l *liveEnv) ended() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// envSignaler delivers the signals of SignalSink to the test environment's
// workflow.
type envSignaler struct {
	env *testsuite.TestWorkflowEnvironment
}

func (s envSignaler) SignalWorkflow(_ context.Context, _, _, name string, arg any) error {
	s.env.SignalWorkflow(name, arg)
	return nil
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
