package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/supervisor/system"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/internal/testserver"
)

// The tests of this file run graphs on a real Temporal server (the
// program of internal/devserver, started as a child process) with workers
// connected to it over gRPC, where workflow_test.go runs them in the SDK's
// test environment, which has no server.

// devserverDir holds the test server's sources, relative to this package.
const devserverDir = "internal/devserver"

// startServer starts a Temporal server for t and stops it when t ends. It
// skips t under -short, and when the server is not built (failing it
// instead when CI is "true").
func startServer(t testing.TB) *testserver.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a Temporal server (-short)")
	}
	bin, err := testserver.Binary(devserverDir)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := testserver.Start(ctx, bin, filepath.Join(t.TempDir(), "server.log"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Stop()) })
	return s
}

// dial connects a client to s, closed when t ends.
func dial(t testing.TB, s *testserver.Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: s.HostPort, Namespace: s.Namespace, Logger: quiet()})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// registrar is a temporal.Runner of any state.
type registrar interface{ Register(temporal.Registry) }

// startWorker starts a worker of runners on queue, stopped when t ends.
func startWorker(t testing.TB, c client.Client, queue string, runners ...registrar) {
	t.Helper()
	w := worker.New(c, queue, worker.Options{})
	for _, r := range runners {
		r.Register(w)
	}
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
}

// history returns the events of a workflow's history.
func history(t testing.TB, c client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		events = append(events, ev)
	}
	return events
}

// loopGraph fans out and joins, loops twice through a conditional edge,
// and ends with a node that fails its first attempt (counted in flakyCalls).
func loopGraph(t *testing.T, flakyCalls *atomic.Int32) *graph.Graph[flow] {
	b := graph.New[flow](appendLog())
	b.AddNode("split", logNode("split")).AddNode("left", logNode("left")).AddNode("right", logNode("right"))
	b.AddNode("count", func(_ context.Context, s flow) (flow, error) {
		s.N++
		return s, nil
	})
	b.AddNode("flaky", func(_ context.Context, s flow) (flow, error) {
		if flakyCalls.Add(1) == 1 {
			return s, errors.New("the first attempt fails")
		}
		s.Log = append(s.Log, "flaky")
		return s, nil
	}, graph.WithRetry(graph.RetryPolicy{MaxAttempts: 3, InitialInterval: 100 * time.Millisecond}))
	b.AddEdge(graph.START, "split").AddEdge("split", "left").AddEdge("split", "right")
	b.AddJoin([]string{"left", "right"}, "count")
	b.AddConditionalEdges("count", func(_ context.Context, s flow) []string {
		if s.N < 2 {
			return []string{"split"}
		}
		return []string{"flaky"}
	}, "split", "flaky")
	b.AddEdge("flaky", graph.END)
	return compile(t, b)
}

func TestServerRunsGraphAsInProcess(t *testing.T) {
	s := startServer(t)
	c := dial(t, s)

	var localCalls, calls atomic.Int32
	want, err := loopGraph(t, &localCalls).Invoke(context.Background(), flow{})
	require.NoError(t, err)
	require.Equal(t, []string{"split", "left", "right", "split", "left", "right", "flaky"}, want.Log)

	r := temporal.New("loop", loopGraph(t, &calls))
	startWorker(t, c, "loop", r)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "loop-thread", TaskQueue: "loop"}, r.Name(), flow{})
	require.NoError(t, err)
	var out flow
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, want, out, "the workflow's result is the in-process run's")
	assert.EqualValues(t, 2, calls.Load())

	// One activity per task (two rounds of split, left, right and count,
	// then flaky), run as the graph runs them: left and right side by
	// side; flaky's retry is the server's, within one activity.
	events := history(t, c, "loop-thread")
	var scheduled []string
	starts := map[int64]*historypb.ActivityTaskStartedEventAttributes{}
	sched := map[int64]string{}
	for _, ev := range events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			var in temporal.TaskInput[flow]
			require.NoError(t, json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &in))
			scheduled = append(scheduled, in.Task.Node)
			sched[ev.GetEventId()] = in.Task.Node
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			starts[a.GetScheduledEventId()] = a
		}
	}
	assert.Equal(t, []string{"split", "left", "right", "count", "split", "left", "right", "count", "flaky"}, scheduled)
	for id, node := range sched {
		want := int32(1)
		if node == "flaky" {
			want = 2
		}
		assert.Equal(t, want, starts[id].GetAttempt(), "attempt of %s", node)
	}

	// The real server's history replays without a nondeterminism error.
	replayer := worker.NewWorkflowReplayer()
	r.RegisterWorkflow(replayer)
	require.NoError(t, replayer.ReplayWorkflowHistory(quiet(), &historypb.History{Events: events}))
}

// A worker whose graph differs from the one a run began with does not
// replay the run's history as its own: the activities are named for their
// nodes, and a replay that schedules another node fails as nondeterministic
// rather than taking one node's recorded result for another's.
func TestServerReplayRefusesAChangedGraph(t *testing.T) {
	s := startServer(t)
	c := dial(t, s)
	chain := func(second string) *graph.Graph[flow] {
		b := graph.New[flow](appendLog())
		b.AddNode("a", logNode("a")).AddNode(second, logNode(second))
		b.AddEdge(graph.START, "a").AddEdge("a", second).AddEdge(second, graph.END)
		return compile(t, b)
	}
	r := temporal.New("chain", chain("b"))
	startWorker(t, c, "chain", r)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "chain-thread", TaskQueue: "chain"}, r.Name(), flow{})
	require.NoError(t, err)
	var out flow
	require.NoError(t, run.Get(ctx, &out))
	require.Equal(t, []string{"a", "b"}, out.Log)

	events := history(t, c, "chain-thread")
	var ids []string
	for _, ev := range events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			ids = append(ids, a.GetActivityId())
		}
	}
	assert.Equal(t, []string{"a@0.0.0", "b@1.0.0"}, ids, "activity IDs name node, step, index and round")

	same := worker.NewWorkflowReplayer()
	temporal.New("chain", chain("b")).RegisterWorkflow(same)
	require.NoError(t, same.ReplayWorkflowHistory(quiet(), &historypb.History{Events: events}))

	changed := worker.NewWorkflowReplayer()
	temporal.New("chain", chain("c")).RegisterWorkflow(changed)
	err = changed.ReplayWorkflowHistory(quiet(), &historypb.History{Events: events})
	require.Error(t, err, "a graph that schedules c where the history holds b")
	assert.Contains(t, strings.ToLower(err.Error()), "nondetermin")
}

func TestServerAnswersInterruptByUpdate(t *testing.T) {
	s := startServer(t)
	c := dial(t, s)
	b := graph.New[flow](appendLog())
	b.AddNode("ask", askNode("your name?")).AddNode("greet", logNode("greet"))
	b.AddEdge(graph.START, "ask").AddEdge("ask", "greet").AddEdge("greet", graph.END)
	r := temporal.New("ask", compile(t, b))
	startWorker(t, c, "ask", r)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "ask-thread", TaskQueue: "ask"}, r.Name(), flow{})
	require.NoError(t, err)

	var status temporal.Status[flow]
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(ctx, "ask-thread", "", temporal.QueryState)
		if err != nil {
			return false
		}
		require.NoError(t, v.Get(&status))
		return len(status.Interrupts) == 1
	}, time.Minute, 20*time.Millisecond, "the run waits for an answer")
	assert.Equal(t, "ask", status.Interrupts[0].Node)
	payload, err := json.Marshal(status.Interrupts[0].Payload) // a json.RawMessage once it has been through the history
	require.NoError(t, err)
	assert.JSONEq(t, `"your name?"`, string(payload))
	assert.False(t, status.Done)

	update := func(in temporal.Resume) error {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: "ask-thread", UpdateName: temporal.UpdateResume, Args: []any{in},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err != nil {
			return err
		}
		return h.Get(ctx, nil)
	}
	err = update(temporal.Resume{ID: "no-such-interrupt", Value: "eve"})
	require.ErrorContains(t, err, temporal.ErrNotPending.Error(), "an answer to no pending interrupt is rejected")
	require.NoError(t, update(temporal.Resume{Value: "ada"}))

	var out flow
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, flow{Log: []string{"greet"}, Answer: "ada"}, out)
}

func TestServerRunsSupervisorExample(t *testing.T) {
	s := startServer(t)
	c := dial(t, s)

	// The example's system on its offline models, in process, then as a
	// workflow: the same conversation, and the same work done by the
	// tools (the first search fails and is retried; the writer's second
	// read of the style guide comes from the cache).
	var localStats system.Stats
	local, err := system.Build(system.Scripted(), &localStats)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	want, err := local.Invoke(ctx, agent.Ask(system.Question))
	require.NoError(t, err)

	var st system.Stats
	g, err := system.Build(system.Scripted(), &st)
	require.NoError(t, err)
	r := temporal.New("supervisor", g)
	startWorker(t, c, "supervisor", r)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "supervisor-thread", TaskQueue: "supervisor"}, r.Name(), agent.Ask(system.Question))
	require.NoError(t, err)
	var out agent.State
	require.NoError(t, run.Get(ctx, &out))

	answer := agent.FinalText(out.Messages)
	assert.Contains(t, answer, "Meet the goroutine\n\nA goroutine is a function running concurrently")
	assert.Equal(t, agent.FinalText(want.Messages), answer)
	// Message IDs are drawn at random.
	for _, msgs := range [][]model.Message{want.Messages, out.Messages} {
		for i := range msgs {
			msgs[i].ID = ""
		}
	}
	wantJSON, err := json.Marshal(want)
	require.NoError(t, err)
	outJSON, err := json.Marshal(out)
	require.NoError(t, err)
	assert.JSONEq(t, string(wantJSON), string(outJSON), "the workflow's conversation is the in-process run's")
	assert.Equal(t, localStats.Searches.Load(), st.Searches.Load())
	assert.EqualValues(t, 3, st.Searches.Load())
	assert.EqualValues(t, 1, st.GuideReads.Load())

	// The supervisor's turns are the workflow's supersteps: one activity
	// per model call and per batch of tool calls (the handoffs, whose
	// workers run whole inside the batch's task).
	var nodes []string
	for _, ev := range history(t, c, "supervisor-thread") {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			var in struct {
				Task struct{ Node string } `json:"task"`
			}
			require.NoError(t, json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &in))
			nodes = append(nodes, in.Task.Node)
		}
	}
	assert.Len(t, nodes, 5, "%v", nodes)
}
