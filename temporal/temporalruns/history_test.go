package temporalruns_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/temporal/temporalruns"
	"github.com/trellis-go/trellis/temporal/temporaltest"
)

func chain(b *graph.Builder[flow]) {
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c"))
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.END)
}

func ids(sts []runs.ThreadState) []string {
	out := make([]string, len(sts))
	for i, s := range sts {
		out[i] = s.CheckpointID
	}
	return out
}

func TestManagerReadsAThreadsHistoryAndCheckpoints(t *testing.T) {
	ctx := ctxWithDeadline(t)
	m, _ := setup(t, chain)
	run, err := m.Start(ctx, runs.Request{Graph: "flow", Thread: "t", Input: json.RawMessage(`{"log":["in"]}`)})
	require.NoError(t, err)
	_, err = m.Wait(ctx, run.ID)
	require.NoError(t, err)
	h := m.(*temporalruns.Manager)

	all, err := h.History(ctx, "flow", "t", runs.HistoryQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{"step-3", "step-2", "step-1", "step-0"}, ids(all))
	require.Equal(t, "input", all[3].Source)
	require.Equal(t, -1, all[3].Step)
	require.Equal(t, []string{"a"}, all[3].Next)
	require.Equal(t, "loop", all[1].Source)
	require.Equal(t, 0, all[2].Step)
	require.Equal(t, "step-1", all[1].ParentID)
	require.JSONEq(t, `{"log":["in","a","b"],"answer":""}`, string(all[1].Values))
	require.Empty(t, all[0].Next)

	page, err := h.History(ctx, "flow", "t", runs.HistoryQuery{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []string{"step-3", "step-2"}, ids(page))
	page, err = h.History(ctx, "flow", "t", runs.HistoryQuery{Before: "step-2"})
	require.NoError(t, err)
	require.Equal(t, []string{"step-1", "step-0"}, ids(page))
	page, err = h.History(ctx, "flow", "t", runs.HistoryQuery{Source: "input"})
	require.NoError(t, err)
	require.Equal(t, []string{"step-0"}, ids(page))
	one := 1
	page, err = h.History(ctx, "flow", "t", runs.HistoryQuery{Step: &one})
	require.NoError(t, err)
	require.Equal(t, []string{"step-2"}, ids(page))
	_, err = h.History(ctx, "flow", "t", runs.HistoryQuery{Limit: -1})
	require.ErrorIs(t, err, runs.ErrInvalid)

	latest, err := m.ThreadState(ctx, "flow", "t", "")
	require.NoError(t, err)
	require.Equal(t, all[0], latest)
	at, err := m.ThreadState(ctx, "flow", "t", "step-1")
	require.NoError(t, err)
	require.Equal(t, all[2], at)
	require.JSONEq(t, `{"log":["in","a"],"answer":""}`, string(at.Values))
	require.Equal(t, []string{"b"}, at.Next)
	_, err = m.ThreadState(ctx, "flow", "t", "step-9")
	require.ErrorIs(t, err, runs.ErrNotFound)
	_, err = m.ThreadState(ctx, "flow", "nope", "")
	require.ErrorIs(t, err, runs.ErrNotFound)
}

// router sends each workflow ID's calls to its own test environment.
type router struct {
	client.Client
	envs map[string]*temporaltest.Client
}

// pick returns id's environment; the first's for an unknown ID, which
// answers NotFound.
func (r router) pick(id string) *temporaltest.Client {
	if c, ok := r.envs[id]; ok {
		return c
	}
	return r.envs["t"]
}

func (r router) ExecuteWorkflow(ctx context.Context, opts client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	return r.pick(opts.ID).ExecuteWorkflow(ctx, opts, wf, args...)
}

func (r router) QueryWorkflow(ctx context.Context, id, run, name string, args ...any) (converter.EncodedValue, error) {
	return r.pick(id).QueryWorkflow(ctx, id, run, name, args...)
}

func (r router) DescribeWorkflowExecution(ctx context.Context, id, run string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	return r.pick(id).DescribeWorkflowExecution(ctx, id, run)
}

func (r router) GetWorkflow(ctx context.Context, id, run string) client.WorkflowRun {
	return r.pick(id).GetWorkflow(ctx, id, run)
}

func TestManagerForksAThreadIntoANewOne(t *testing.T) {
	ctx := ctxWithDeadline(t)
	_, src := setup(t, chain)
	_, dst := setup(t, chain)
	m := temporalruns.New(router{Client: src, envs: map[string]*temporaltest.Client{"t": src, "t2": dst}}, "flows")
	run, err := m.Start(ctx, runs.Request{Graph: "flow", Thread: "t", Input: json.RawMessage(`{"log":["in"]}`), Metadata: map[string]any{"user": "ada"}})
	require.NoError(t, err)
	_, err = m.Wait(ctx, run.ID)
	require.NoError(t, err)
	want, err := m.Output(ctx, "t")
	require.NoError(t, err)

	_, err = m.Fork(ctx, "", "t", "step-9", "t2")
	require.ErrorIs(t, err, runs.ErrNotFound)
	_, err = m.Fork(ctx, "", "nope", "step-1", "t2")
	require.ErrorIs(t, err, runs.ErrNotFound)
	forked, err := m.Fork(ctx, "", "t", "step-1", "t2")
	require.NoError(t, err)
	require.Equal(t, "t2", forked.Thread)
	require.Equal(t, "flow", forked.Graph)
	done, err := m.Wait(ctx, "t2")
	require.NoError(t, err)
	require.Equal(t, runs.StatusSuccess, done.Status)
	require.Equal(t, map[string]any{"user": "ada"}, done.Metadata, "the fork keeps the thread's metadata")
	got, err := m.Output(ctx, "t2")
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got), "the fork goes on as the run went on from there")

	hist, err := m.History(ctx, "flow", "t2", runs.HistoryQuery{})
	require.NoError(t, err)
	require.Equal(t, []string{"step-3", "step-2", "step-1"}, ids(hist), "the fork's history starts at its checkpoint")
	require.Equal(t, "fork", hist[2].Source)
	require.JSONEq(t, `{"log":["in","a"],"answer":""}`, string(hist[2].Values))
}
