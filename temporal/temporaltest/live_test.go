package temporaltest_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/trellis-go/trellis/temporal/temporaltest"
)

// waiting waits for a signal and returns its value.
func waiting(ctx workflow.Context) (string, error) {
	var v string
	workflow.GetSignalChannel(ctx, "go").Receive(ctx, &v)
	return v, nil
}

func newEnv() *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(waiting, workflow.RegisterOptions{Name: "waiting"})
	return env
}

// A workflow waiting for its caller waits (it does not reach its run
// timeout while the test looks away), and the caller's calls reach it.
func TestClientDrivesAWaitingWorkflow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := temporaltest.NewClient(newEnv())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w"}, "waiting")
	require.NoError(t, err)
	_, err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "w"}, "waiting")
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	require.ErrorAs(t, err, &started)
	_, err = c.DescribeWorkflowExecution(ctx, "other", "")
	var nf *serviceerror.NotFound
	require.ErrorAs(t, err, &nf)

	// Real time passes while the workflow waits (the environment's clock
	// would otherwise skip to its run timeout): it is still running.
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
		d, err := c.DescribeWorkflowExecution(ctx, "w", "")
		require.NoError(t, err)
		require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, d.GetWorkflowExecutionInfo().GetStatus())
		time.Sleep(5 * time.Millisecond)
	}
	require.NoError(t, c.SignalWorkflow(ctx, "w", "", "go", "now"))
	var out string
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, "now", out)
	d, err := c.DescribeWorkflowExecution(ctx, "w", "")
	require.NoError(t, err)
	require.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.GetWorkflowExecutionInfo().GetStatus())
}
