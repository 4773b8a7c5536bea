package temporal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/temporaltest"
)

// newEnv returns a test environment whose SDK logs are dropped.
func newEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet())
	return suite.NewTestWorkflowEnvironment()
}

// startLive runs a workflow while the test acts as its caller.
func startLive(t *testing.T, env *testsuite.TestWorkflowEnvironment, workflow string, args ...any) *temporaltest.Live {
	t.Helper()
	l := temporaltest.Start(env, workflow, args...)
	t.Cleanup(func() {
		select {
		case <-l.Done():
		case <-time.After(10 * time.Second):
			t.Error("the workflow did not end")
		}
	})
	return l
}

// events reads the run's events after the cursor.
func events(t *testing.T, l *temporaltest.Live, after int64) temporal.EventPage {
	t.Helper()
	v, err := l.Query(temporal.QueryEvents, after)
	if err != nil && strings.Contains(err.Error(), "unknown queryType") {
		// The environment answers no handler in the moment a run starts
		// or completes: the next poll asks again.
		return temporal.EventPage{}
	}
	require.NoError(t, err)
	var p temporal.EventPage
	require.NoError(t, v.Get(&p))
	return p
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
