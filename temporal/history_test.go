package temporal_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/temporaltest"
)

func chainBuilder() *graph.Builder[flow] {
	b := graph.New[flow](appendLog())
	b.AddNode("a", logNode("a")).AddNode("b", logNode("b")).AddNode("c", logNode("c"))
	b.AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.END)
	return b
}

// branchBuilder picks a branch by N, then counts N up to 3 in a loop.
func branchBuilder() *graph.Builder[flow] {
	b := graph.New[flow](appendLog())
	b.AddNode("pick", logNode("pick")).AddNode("big", logNode("big")).AddNode("small", logNode("small"))
	b.AddNode("count", func(_ context.Context, s flow) (flow, error) {
		s.N++
		s.Log = append(s.Log, "count")
		return s, nil
	})
	b.AddEdge(graph.START, "pick")
	b.AddConditionalEdges("pick", func(_ context.Context, s flow) []string {
		if s.N > 0 {
			return []string{"big"}
		}
		return []string{"small"}
	}, "big", "small")
	b.AddEdge("big", "count").AddEdge("small", "count")
	b.AddConditionalEdges("count", func(_ context.Context, s flow) []string {
		if s.N < 3 {
			return []string{"count"}
		}
		return []string{graph.END}
	}, "count", graph.END)
	return b
}

// envQuerier reads a finished test environment's workflow.
type envQuerier struct {
	env *testsuite.TestWorkflowEnvironment
}

func (q envQuerier) QueryWorkflow(_ context.Context, _, _, name string, args ...any) (converter.EncodedValue, error) {
	return q.env.QueryWorkflow(name, args...)
}

// forkClient reads checkpoints from one environment and starts the fork in
// another.
type forkClient struct {
	envQuerier
	*temporaltest.Client
}

func (c forkClient) QueryWorkflow(ctx context.Context, id, run, name string, args ...any) (converter.EncodedValue, error) {
	return c.envQuerier.QueryWorkflow(ctx, id, run, name, args...)
}

// inProcessHistory runs b's graph with a checkpointer on thread "t".
func inProcessHistory(t *testing.T, b *graph.Builder[flow], input flow) (*graph.Graph[flow], []graph.Snapshot[flow]) {
	t.Helper()
	g, err := b.Compile(graph.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = g.Invoke(ctx, input, graph.WithThread("t"))
	require.NoError(t, err)
	hist, err := g.History(ctx, "t", 0)
	require.NoError(t, err)
	return g, hist
}

func TestHistoryListsSuperstepsAsACheckpointerDoes(t *testing.T) {
	for name, build := range map[string]func() *graph.Builder[flow]{"chain": chainBuilder, "branch": branchBuilder} {
		t.Run(name, func(t *testing.T) {
			_, want := inProcessHistory(t, build(), flow{})
			_, err, env := runWorkflow(t, compile(t, build()), flow{}, nil)
			require.NoError(t, err)
			got, err := temporal.History[flow](context.Background(), envQuerier{env}, "flow", temporal.HistoryFilter{})
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i, w := range want {
				c := got[i]
				require.Equal(t, w.Step, c.Step, "checkpoint %d", i)
				require.Equal(t, w.State, c.State, "checkpoint %d", i)
				require.ElementsMatch(t, w.Next, c.Next, "checkpoint %d", i)
				require.Equal(t, w.Source, c.Source, "checkpoint %d", i)
				require.Equal(t, "step-"+strconv.Itoa(w.Step+1), c.ID)
				if i+1 < len(got) {
					require.Equal(t, got[i+1].ID, c.Parent)
				}
			}
			require.Empty(t, got[len(got)-1].Parent)
		})
	}
}

func TestHistoryFilters(t *testing.T) {
	_, err, env := runWorkflow(t, compile(t, chainBuilder()), flow{}, nil)
	require.NoError(t, err)
	ctx := context.Background()
	ids := func(f temporal.HistoryFilter) []string {
		cps, err := temporal.History[flow](ctx, envQuerier{env}, "flow", f)
		require.NoError(t, err)
		var out []string
		for _, c := range cps {
			out = append(out, c.ID)
		}
		return out
	}
	require.Equal(t, []string{"step-3", "step-2", "step-1", "step-0"}, ids(temporal.HistoryFilter{}))
	require.Equal(t, []string{"step-3", "step-2"}, ids(temporal.HistoryFilter{Limit: 2}))
	require.Equal(t, []string{"step-1", "step-0"}, ids(temporal.HistoryFilter{Before: "step-2"}))
	require.Equal(t, []string{"step-1"}, ids(temporal.HistoryFilter{Before: "step-2", Limit: 1}))
	require.Equal(t, []string{"step-1"}, ids(temporal.HistoryFilter{ID: "step-1"}))

	cp, err := temporal.GetCheckpoint[flow](ctx, envQuerier{env}, "flow", "step-1")
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, cp.State.Log)
	require.Equal(t, []string{"b"}, cp.Next)
	_, err = temporal.GetCheckpoint[flow](ctx, envQuerier{env}, "flow", "step-9")
	require.ErrorIs(t, err, temporal.ErrNoCheckpoint)
	_, err = temporal.GetCheckpoint[flow](ctx, envQuerier{env}, "flow", "nope")
	require.ErrorIs(t, err, temporal.ErrNoCheckpoint)
}

// fork runs g's workflow to its end, forks it at checkpoint in a second
// environment and returns the fork's result and history.
func fork(t *testing.T, g *graph.Graph[flow], input flow, checkpoint string, update func(flow) flow) (flow, []temporal.Checkpoint[flow]) {
	t.Helper()
	_, err, src := runWorkflow(t, g, input, nil)
	require.NoError(t, err)
	dst := newEnv()
	r := temporal.New("flow", g)
	r.Register(dst)
	c := temporaltest.NewClient(dst)
	ctx := context.Background()
	run, err := temporal.Fork(ctx, forkClient{envQuerier{src}, c}, "flow", checkpoint, temporal.ForkOptions[flow]{
		Workflow: r.Name(), Update: update, Start: client.StartWorkflowOptions{ID: "forked", TaskQueue: "q"},
	})
	require.NoError(t, err)
	var out flow
	require.NoError(t, run.Get(ctx, &out))
	hist, err := temporal.History[flow](ctx, envQuerier{dst}, "forked", temporal.HistoryFilter{})
	require.NoError(t, err)
	return out, hist
}

func TestForkGoesOnAsAnInProcessFork(t *testing.T) {
	for _, tc := range []struct {
		name       string
		build      func() *graph.Builder[flow]
		input      flow
		checkpoint string
	}{
		{"chain at step 1", chainBuilder, flow{}, "step-1"},
		{"after the branch", branchBuilder, flow{N: 1}, "step-1"},
		{"in the loop", branchBuilder, flow{}, "step-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// In process: fork the thread at the same checkpoint and resume.
			g, hist := inProcessHistory(t, tc.build(), tc.input)
			var at graph.Snapshot[flow]
			for _, s := range hist {
				if "step-"+strconv.Itoa(s.Step+1) == tc.checkpoint {
					at = s
				}
			}
			require.NotEmpty(t, at.CheckpointID)
			ctx := context.Background()
			_, err := g.Fork(ctx, "t", at.CheckpointID)
			require.NoError(t, err)
			want, err := g.Resume(ctx, "t")
			require.NoError(t, err)

			got, fhist := fork(t, compile(t, tc.build()), tc.input, tc.checkpoint, nil)
			require.Equal(t, want, got)
			last := fhist[len(fhist)-1]
			require.Equal(t, tc.checkpoint, last.ID, "the fork's first checkpoint is the one it forked")
			require.Equal(t, temporal.SourceFork, last.Source)
			require.Equal(t, at.State, last.State)
		})
	}
}

func TestForkAppliesAnUpdate(t *testing.T) {
	// After "pick" chose "small", the loop counts from the updated N.
	got, hist := fork(t, compile(t, branchBuilder()), flow{}, "step-1", func(s flow) flow {
		s.N = 2
		s.Answer = "edited"
		return s
	})
	require.Equal(t, flow{Log: []string{"pick", "small", "count"}, N: 3, Answer: "edited"}, got)
	require.Equal(t, "step-1", hist[len(hist)-1].ID)
	require.Equal(t, 2, hist[len(hist)-1].State.N)
	require.Equal(t, []string{"small"}, hist[len(hist)-1].Next)
}

func TestHistoryShowsTheInterruptARunWaitsFor(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("a", logNode("a")).AddNode("ask", askNode("your name?"))
	b.AddEdge(graph.START, "a").AddEdge("a", "ask").AddEdge("ask", graph.END)
	var waiting []temporal.Checkpoint[flow]
	out, err, env := runWorkflow(t, compile(t, b), flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			var err error
			waiting, err = temporal.History[flow](context.Background(), envQuerier{env}, "flow", temporal.HistoryFilter{Limit: 1})
			require.NoError(t, err)
			env.SignalWorkflow(temporal.SignalResume, temporal.Resume{Value: "grace"})
		}, time.Minute)
	})
	require.NoError(t, err)
	require.Equal(t, "grace", out.Answer)
	require.Len(t, waiting, 1)
	require.Equal(t, "step-1", waiting[0].ID)
	require.Equal(t, []string{"ask"}, waiting[0].Next)
	require.Len(t, waiting[0].Interrupts, 1)
	require.Equal(t, "ask", waiting[0].Interrupts[0].Node)

	all, err := temporal.History[flow](context.Background(), envQuerier{env}, "flow", temporal.HistoryFilter{})
	require.NoError(t, err)
	require.Len(t, all, 3)
	require.Len(t, all[1].Interrupts, 1, "the checkpoint keeps the interrupt it waited for")
}

// runsQuerier answers QueryHistory with a page per run ID.
type runsQuerier map[string]temporal.HistoryPage[flow]

func (q runsQuerier) QueryWorkflow(_ context.Context, _, run, _ string, args ...any) (converter.EncodedValue, error) {
	f := args[0].(temporal.HistoryFilter)
	p := q[run]
	var keep []temporal.Checkpoint[flow]
	for _, c := range p.Checkpoints {
		if f.ID == "" || c.ID == f.ID {
			keep = append(keep, c)
		}
	}
	p.Checkpoints = keep
	v, err := converter.GetDefaultDataConverter().ToPayloads(p)
	if err != nil {
		return nil, err
	}
	return encoded{v}, nil
}

type encoded struct{ p *commonpb.Payloads }

func (e encoded) HasValue() bool { return true }
func (e encoded) Get(v any) error {
	return converter.GetDefaultDataConverter().FromPayloads(e.p, v)
}

func TestHistoryReadsTheRunsContinuedAsNew(t *testing.T) {
	cp := func(n int, interrupts ...graph.PendingInterrupt) temporal.Checkpoint[flow] {
		return temporal.Checkpoint[flow]{ID: "step-" + strconv.Itoa(n), Step: n - 1, Interrupts: interrupts}
	}
	ask := graph.PendingInterrupt{ID: "i", Node: "n"}
	q := runsQuerier{
		"":   {Checkpoints: []temporal.Checkpoint[flow]{cp(4), cp(3), cp(2)}, Previous: "r1"},
		"r1": {Checkpoints: []temporal.Checkpoint[flow]{cp(2, ask), cp(1), cp(0)}},
	}
	ctx := context.Background()
	all, err := temporal.History[flow](ctx, q, "w", temporal.HistoryFilter{})
	require.NoError(t, err)
	var ids []string
	for _, c := range all {
		ids = append(ids, c.ID)
	}
	require.Equal(t, []string{"step-4", "step-3", "step-2", "step-1", "step-0"}, ids, "step-2, held by both runs, is listed once")
	require.Equal(t, []graph.PendingInterrupt{ask}, all[2].Interrupts, "with the interrupt the older run paused for there")

	c, err := temporal.GetCheckpoint[flow](ctx, q, "w", "step-1")
	require.NoError(t, err)
	require.Equal(t, "step-1", c.ID)
	limited, err := temporal.History[flow](ctx, q, "w", temporal.HistoryFilter{Limit: 4})
	require.NoError(t, err)
	require.Len(t, limited, 4)
}

func TestServerReadsHistoryAndForksAcrossContinueAsNew(t *testing.T) {
	s := startServer(t)
	c := dial(t, s)
	g := countingGraph(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// In process: the thread's history, and a fork at step-2 resumed.
	ref, err := countingBuilder().Compile(graph.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	_, err = ref.Invoke(ctx, flow{}, graph.WithThread("t"))
	require.NoError(t, err)
	want, err := ref.History(ctx, "t", 0)
	require.NoError(t, err)

	r := temporal.New("counting", g, temporal.WithContinueAsNew(3))
	startWorker(t, c, "counting", r)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "counting-thread", TaskQueue: "counting"}, r.Name(), flow{})
	require.NoError(t, err)
	var out flow
	require.NoError(t, run.Get(ctx, &out))

	v, err := c.QueryWorkflow(ctx, "counting-thread", "", temporal.QueryHistory, temporal.HistoryFilter{})
	require.NoError(t, err)
	var last temporal.HistoryPage[flow]
	require.NoError(t, v.Get(&last))
	require.NotEmpty(t, last.Previous, "the run continued as new")
	require.Equal(t, "step-6", last.Checkpoints[len(last.Checkpoints)-1].ID, "the last run holds its own checkpoints only")

	got, err := temporal.History[flow](ctx, c, "counting-thread", temporal.HistoryFilter{})
	require.NoError(t, err)
	require.Len(t, got, len(want), "every superstep's checkpoint, from the three runs")
	for i, w := range want {
		require.Equal(t, w.Step, got[i].Step)
		require.Equal(t, w.State, got[i].State)
		require.ElementsMatch(t, w.Next, got[i].Next)
	}
	older, err := temporal.History[flow](ctx, c, "counting-thread", temporal.HistoryFilter{Before: "step-4", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, "step-3", older[0].ID)
	require.Equal(t, "step-2", older[1].ID)

	// Fork at step-2, held by the first run only.
	var at graph.Snapshot[flow]
	for _, w := range want {
		if w.Step == 1 {
			at = w
		}
	}
	_, err = ref.Fork(ctx, "t", at.CheckpointID)
	require.NoError(t, err)
	wantFork, err := ref.Resume(ctx, "t")
	require.NoError(t, err)
	frun, err := temporal.Fork(ctx, c, "counting-thread", "step-2", temporal.ForkOptions[flow]{
		Workflow: r.Name(), Start: client.StartWorkflowOptions{ID: "counting-fork", TaskQueue: "counting"},
	})
	require.NoError(t, err)
	var forked flow
	require.NoError(t, frun.Get(ctx, &forked))
	require.Equal(t, wantFork, forked)
	fh, err := temporal.History[flow](ctx, c, "counting-fork", temporal.HistoryFilter{})
	require.NoError(t, err)
	require.Equal(t, "step-2", fh[len(fh)-1].ID)
	require.Equal(t, temporal.SourceFork, fh[len(fh)-1].Source)
}

func TestForkOfAnInterruptedCheckpointAsksAgain(t *testing.T) {
	b := graph.New[flow](appendLog())
	b.AddNode("a", logNode("a")).AddNode("ask", askNode("your name?"))
	b.AddEdge(graph.START, "a").AddEdge("a", "ask").AddEdge("ask", graph.END)
	g := compile(t, b)
	out, err, src := runWorkflow(t, g, flow{}, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			env.SignalWorkflow(temporal.SignalResume, temporal.Resume{Value: "grace"})
		}, time.Minute)
	})
	require.NoError(t, err)
	require.Equal(t, "grace", out.Answer)
	asked, err := temporal.GetCheckpoint[flow](context.Background(), envQuerier{src}, "flow", "step-1")
	require.NoError(t, err)
	require.Len(t, asked.Interrupts, 1)

	dst := newEnv()
	temporal.New("flow", g).Register(dst)
	c := temporaltest.NewClient(dst)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := temporal.Fork(ctx, forkClient{envQuerier{src}, c}, "flow", "step-1", temporal.ForkOptions[flow]{
		Workflow: "flow", Start: client.StartWorkflowOptions{ID: "forked", TaskQueue: "q"},
	})
	require.NoError(t, err)
	// The fork waits for an answer again, under the same interrupt ID.
	var st temporal.Status[flow]
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(ctx, "forked", "", temporal.QueryState)
		if err != nil || v.Get(&st) != nil {
			return false
		}
		return len(st.Interrupts) == 1
	}, 5*time.Second, time.Millisecond)
	require.Equal(t, asked.Interrupts[0].ID, st.Interrupts[0].ID)
	require.NoError(t, c.SignalWorkflow(ctx, "forked", "", temporal.SignalResume, temporal.Resume{Value: "ada"}))
	var forked flow
	require.NoError(t, run.Get(ctx, &forked))
	require.Equal(t, flow{Log: []string{"a"}, Answer: "ada"}, forked)
}

func TestForkAsANodeGoesOnAsInProcessUpdateState(t *testing.T) {
	for _, tc := range []struct {
		name       string
		build      func() *graph.Builder[flow]
		checkpoint string
		asNode     string
		update     func(flow) flow
	}{
		{"chain, written as b", chainBuilder, "step-1", "b", func(s flow) flow {
			s.Log = append(s.Log, "B")
			return s
		}},
		{"branch taken again by pick", branchBuilder, "step-1", "pick", func(s flow) flow {
			s.N = 1
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, hist := inProcessHistory(t, tc.build(), flow{})
			var at graph.Snapshot[flow]
			for _, s := range hist {
				if "step-"+strconv.Itoa(s.Step+1) == tc.checkpoint {
					at = s
				}
			}
			ctx := context.Background()
			_, err := g.UpdateState(ctx, "t", tc.asNode, tc.update, graph.FromCheckpoint(at.CheckpointID))
			require.NoError(t, err)
			updated, err := g.GetState(ctx, "t")
			require.NoError(t, err)
			want, err := g.Resume(ctx, "t")
			require.NoError(t, err)

			orig, err, src := runWorkflow(t, compile(t, tc.build()), flow{}, nil)
			require.NoError(t, err)
			require.NotEqual(t, orig, want, "the update changes the run's outcome")
			dst := newEnv()
			temporal.New("flow", compile(t, tc.build())).Register(dst)
			c := temporaltest.NewClient(dst)
			run, err := temporal.Fork(ctx, forkClient{envQuerier{src}, c}, "flow", tc.checkpoint, temporal.ForkOptions[flow]{
				Workflow: "flow", Start: client.StartWorkflowOptions{ID: "forked", TaskQueue: "q"},
				Update: tc.update, AsNode: tc.asNode,
			})
			require.NoError(t, err)
			var got flow
			require.NoError(t, run.Get(ctx, &got))
			require.Equal(t, want, got)

			fh, err := temporal.History[flow](ctx, envQuerier{dst}, "forked", temporal.HistoryFilter{})
			require.NoError(t, err)
			first, update := fh[len(fh)-1], fh[len(fh)-2]
			require.Equal(t, tc.checkpoint, first.ID)
			require.Equal(t, temporal.SourceFork, first.Source)
			require.Equal(t, at.State, first.State, "the fork's first checkpoint is the one forked, as is")
			require.Equal(t, temporal.SourceUpdate, update.Source)
			require.Equal(t, updated.State, update.State)
			require.ElementsMatch(t, updated.Next, update.Next)
		})
	}
}
