package temporalruns_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/mocks"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/temporalruns"
)

// jsonValue is a query's answer.
type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return j.v != nil }

func (j jsonValue) Get(ptr any) error {
	b, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}

func described(status enumspb.WorkflowExecutionStatus) *workflowservice.DescribeWorkflowExecutionResponse {
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: status}}
}

// A run that continued as new holds only its own events: a stream from
// the start reads the earlier ones from the run it continued (the SDK's
// mock client plays a server's answers).
func TestStreamReadsTheEventsOfTheRunsItContinued(t *testing.T) {
	c := mocks.NewClient(t)
	c.On("DescribeWorkflowExecution", mock.Anything, "t", "").Return(described(enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED), nil)
	first := temporal.EventPage{First: 1, Done: true, Events: []temporal.Event{
		{Seq: 1, Kind: graph.KindUpdate, Node: "a"}, {Seq: 2, Kind: graph.KindValues},
	}}
	second := temporal.EventPage{First: 3, Previous: "run-1", Done: true, Events: []temporal.Event{
		{Seq: 3, Kind: graph.KindUpdate, Node: "b"}, {Seq: 4, Kind: temporal.KindRunEnd, Status: temporal.StatusSuccess},
	}}
	c.On("QueryWorkflow", mock.Anything, "t", "", temporal.QueryEvents, int64(0)).Return(jsonValue{second}, nil)
	c.On("QueryWorkflow", mock.Anything, "t", "run-1", temporal.QueryEvents, int64(0)).Return(jsonValue{first}, nil)
	c.On("QueryWorkflow", mock.Anything, "t", "", temporal.QueryEvents, int64(2)).Return(jsonValue{second}, nil)
	m := temporalruns.New(c, "q")
	var seqs []int64
	for ev, err := range m.Stream(context.Background(), "t", 0) {
		require.NoError(t, err)
		seqs = append(seqs, ev.Seq)
	}
	require.Equal(t, []int64{1, 2, 3, 4}, seqs)
}

// A run that ended without recording its end (terminated from outside)
// ends its stream with an end made from its status.
func TestStreamOfATerminatedRunEndsWithItsStatus(t *testing.T) {
	c := mocks.NewClient(t)
	c.On("DescribeWorkflowExecution", mock.Anything, "t", "").Return(described(enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED), nil)
	c.On("QueryWorkflow", mock.Anything, "t", "", temporal.QueryEvents, int64(0)).
		Return(jsonValue{temporal.EventPage{First: 1, Events: []temporal.Event{{Seq: 1, Kind: graph.KindValues}}}}, nil)
	c.On("QueryWorkflow", mock.Anything, "t", "", temporal.QueryEvents, int64(1)).Return(jsonValue{temporal.EventPage{First: 1}}, nil)
	run := mocks.NewWorkflowRun(t)
	run.On("Get", mock.Anything, nil).Return(errors.New("workflow terminated by an operator"))
	c.On("GetWorkflow", mock.Anything, "t", "").Return(run)
	m := temporalruns.New(c, "q")
	var evs []runs.Event
	for ev, err := range m.Stream(context.Background(), "t", 0) {
		require.NoError(t, err)
		evs = append(evs, ev)
	}
	require.Len(t, evs, 2)
	require.Equal(t, runs.KindRunEnd, evs[1].Kind)
	require.Equal(t, runs.StatusError, evs[1].Status)
	require.Contains(t, evs[1].Error, "terminated by an operator")
}
