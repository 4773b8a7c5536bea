package temporal_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/cputime"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/sqlite"
	"github.com/trellis-go/trellis/temporal"
	"github.com/trellis-go/trellis/temporal/internal/testserver"
)

// counter is the state of the benchmark's chains.
type counter struct {
	N int `json:"n"`
}

// chain returns a graph of n nodes in a row, each incrementing N, named
// chain<n>.
func chain(b *testing.B, n int, opts ...graph.CompileOption) *graph.Graph[counter] {
	inc := func(_ context.Context, s counter) (counter, error) { s.N++; return s, nil }
	g := graph.New[counter](graph.WithName(fmt.Sprintf("chain%d", n)))
	prev := graph.START
	for i := range n {
		node := fmt.Sprintf("n%d", i)
		g.AddNode(node, inc).AddEdge(prev, node)
		prev = node
	}
	c, err := g.Compile(opts...)
	require.NoError(b, err)
	return c
}

// selfCPU returns the CPU time (user and system) this process has used.
func selfCPU(b *testing.B) time.Duration {
	t, ok := cputime.Self()
	require.True(b, ok, "the platform reports no CPU time")
	return t
}

// BenchmarkSuperstepOverhead measures what one more superstep costs a run
// as a Temporal workflow and as a run of the runs layer (runs/sqlite), on
// the same graphs: chains of 1 and of 11 nodes, each node incrementing a
// counter. Each iteration runs the four (two chains on each side), one
// after the other, so that both sides see the same load; a superstep's cost
// is the difference between the chains divided by 10, which leaves out
// what a run costs once (its start, its dispatch to a worker, its end).
//
// Both keep their state in memory: the Temporal server of the integration
// tests (its test server: every service in one process, in-memory
// persistence), with a worker in this process; the runs layer on an
// in-memory SQLite database, worked by the Manager that starts the runs.
//
// Metrics, for each side: the median wall time of a run of chain1
// (ms/run1) and of a superstep (ms/step: the difference of the chains'
// medians, over 10); the CPU time, this process's and, for Temporal, the
// server's, of a run of chain1 (cpu-ms/run1) and of a superstep
// (cpu-ms/step; the server's part, server-cpu-ms/step), from the totals
// of all iterations.
func BenchmarkSuperstepOverhead(b *testing.B) {
	s := startServer(b)
	c := dial(b, s)
	ctx := context.Background()

	r1, r11 := temporal.New("chain1", chain(b, 1)), temporal.New("chain11", chain(b, 11))
	startWorker(b, c, "bench", r1, r11)

	m, err := sqlite.Open(ctx, ":memory:")
	require.NoError(b, err)
	defer m.Close()
	require.NoError(b, m.Register(runs.Graph(chain(b, 1, graph.WithCheckpointer(m.Saver()))), runs.Graph(chain(b, 11, graph.WithCheckpointer(m.Saver())))))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Work(wctx) }()
	defer func() { stop(); <-done }()

	var ids []string // of the chain11 workflows
	runTemporal := func(name string, want int) {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "bench"}, name, counter{})
		require.NoError(b, err)
		if name == "chain11" {
			ids = append(ids, run.GetID())
		}
		var out counter
		require.NoError(b, run.Get(ctx, &out))
		require.Equal(b, want, out.N)
	}
	runRuns := func(name string, want int) {
		r, err := m.Start(ctx, runs.Request{Graph: name, Input: []byte(`{"n":0}`)})
		require.NoError(b, err)
		end, err := m.Wait(ctx, r.ID)
		require.NoError(b, err)
		require.Equal(b, runs.StatusSuccess, end.Status, end.Error)
	}
	type side struct {
		name      string
		run       func(string, int)
		server    bool          // count the Temporal server's CPU
		t1, t11   []float64     // wall ms of the chain1 and chain11 runs
		cpu1, cpu time.Duration // CPU of the chain1 and chain11 runs
		srv1, srv time.Duration // the server's part of it
	}
	sides := []*side{{name: "temporal", run: runTemporal, server: true}, {name: "runs-sqlite", run: runRuns}}
	// cpu returns the CPU time of this process and the server's part.
	cpu := func(sd *side) (time.Duration, time.Duration) {
		if !sd.server {
			return selfCPU(b), 0
		}
		sv, err := testserver.CPUTime(s.Pid())
		require.NoError(b, err)
		return selfCPU(b) + sv, sv
	}
	// One run of each first: connections, caches, the workflow's code.
	for _, sd := range sides {
		sd.run("chain1", 1)
		sd.run("chain11", 11)
	}
	ids = nil
	b.ResetTimer()
	for b.Loop() {
		for _, sd := range sides {
			c0, s0 := cpu(sd)
			t0 := time.Now()
			sd.run("chain1", 1)
			c1, s1 := cpu(sd)
			t1 := time.Now()
			sd.run("chain11", 11)
			c2, s2 := cpu(sd)
			t2 := time.Now()
			sd.cpu1 += c1 - c0
			sd.cpu += c2 - c1
			sd.srv1 += s1 - s0
			sd.srv += s2 - s1
			sd.t1 = append(sd.t1, float64(t1.Sub(t0))/float64(time.Millisecond))
			sd.t11 = append(sd.t11, float64(t2.Sub(t1))/float64(time.Millisecond))
		}
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	b.StopTimer()
	// Where a Temporal superstep's time goes, from the chain11 runs'
	// histories: a workflow task waits in its task queue, then runs; the
	// activity it schedules is handed to the worker with the task's
	// answer (eager execution) and runs.
	var queued, decided, activity []float64
	ms := func(from, to *historypb.HistoryEvent) float64 {
		return float64(to.GetEventTime().AsTime().Sub(from.GetEventTime().AsTime())) / float64(time.Millisecond)
	}
	for _, id := range ids {
		events := history(b, c, id)
		for i, ev := range events[1:] {
			prev := events[i]
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
				queued = append(queued, ms(prev, ev))
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				decided = append(decided, ms(prev, ev))
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				activity = append(activity, ms(prev, ev))
			}
		}
	}
	b.ReportMetric(median(queued), "temporal-wftask-queued-ms")
	b.ReportMetric(median(decided), "temporal-wftask-run-ms")
	b.ReportMetric(median(activity), "temporal-activity-ms")
	for _, sd := range sides {
		n := float64(len(sd.t1))
		m1, m11 := median(sd.t1), median(sd.t11)
		b.ReportMetric(m1, sd.name+"-ms/run1")
		b.ReportMetric((m11-m1)/10, sd.name+"-ms/step")
		b.ReportMetric(float64(sd.cpu1)/float64(time.Millisecond)/n, sd.name+"-cpu-ms/run1")
		b.ReportMetric(float64(sd.cpu-sd.cpu1)/float64(time.Millisecond)/10/n, sd.name+"-cpu-ms/step")
		if sd.server {
			b.ReportMetric(float64(sd.srv-sd.srv1)/float64(time.Millisecond)/10/n, sd.name+"-server-cpu-ms/step")
		}
	}
}
