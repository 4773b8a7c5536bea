package bench

import (
	"bufio"
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/cputime"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/memory"
	"github.com/trellis-go/trellis/runs/postgres"
	"github.com/trellis-go/trellis/runs/sqlite"
	"github.com/trellis-go/trellis/server"
)

// The LangGraph Server API over HTTP (package server) on each runs
// backend, with the workload: a graph of three nodes in a row, one
// stateless run per request, over a plain HTTP client on 127.0.0.1.
// BenchmarkServerRun measures sequential runs (one client) and runs with
// 32 concurrent clients; BenchmarkServerFirstEvent the time from sending a
// streamed run to its first event and to its first state (median and 99th
// percentile). Both report cpu-ms/run: the CPU time (user and system) the
// process spent per run, server and client together, a figure that moves
// far less than runs/s with the load of a shared machine.

type chainState struct {
	N int `json:"n"`
}

// The runs backends the server benchmarks run on.
const (
	backendMemory   = "memory"   // runs/memory
	backendSQLite   = "sqlite"   // runs/sqlite, on a file
	backendPostgres = "postgres" // runs/postgres, on the test server
)

var serverBackends = []string{backendMemory, backendSQLite, backendPostgres}

// openBackend opens a Manager on backend, closed when tb ends. Without a
// PostgreSQL server, the postgres backend skips tb (and fails it when
// CI=true).
func openBackend(tb testing.TB, backend string) *runs.Manager {
	tb.Helper()
	ctx := context.Background()
	var (
		m   *runs.Manager
		err error
	)
	switch backend {
	case backendMemory:
		m, err = memory.Open(ctx)
	case backendSQLite:
		m, err = sqlite.Open(ctx, filepath.Join(tb.TempDir(), "runs.db"), sqlite.WithRuns(runs.WithFetch(time.Millisecond, 5*time.Millisecond)))
	case backendPostgres:
		dsn := postgresURL()
		schema := pgSchema(tb, dsn, "bench_server_")
		m, err = postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	default:
		tb.Fatalf("unknown backend %q", backend)
	}
	if err != nil {
		tb.Fatalf("opening the %s backend: %v", backend, err)
	}
	tb.Cleanup(func() { _ = m.Close() })
	return m
}

// oneHop is a scripted model of the ReAct shape: a call to the echo tool,
// then, once the tool has answered, "done" — model → tool → model. It
// decides from the request alone, so one instance serves every run, as
// node/reactgraph.mjs's model does on the reference server.
type oneHop struct{}

func (oneHop) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			return &model.Response{Message: model.Assistant("done"), FinishReason: "stop"}, nil
		}
	}
	call := model.ToolCall{ID: "hop_1", Name: "echo", Arguments: []byte(`{"text":"hop 1"}`)}
	return &model.Response{Message: model.Assistant("", call), FinishReason: "tool_calls"}, nil
}

func (m oneHop) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return trellisHops{}.streamOf(m.Generate(ctx, req))
}

// serverUnderTest serves, on backend, Chain3 as "chain3" and a ReAct agent
// on oneHop with the echo tool as "react", with a worker in the process.
func serverUnderTest(b *testing.B, backend string) (*httptest.Server, func()) {
	b.Helper()
	ctx := context.Background()
	m := openBackend(b, backend)
	inc := func(_ context.Context, s chainState) (chainState, error) { s.N++; return s, nil }
	g, err := graph.New[chainState](graph.WithName("chain3")).AddNode("a", inc).AddNode("b", inc).AddNode("c", inc).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").Compile(graph.WithCheckpointer(m.Saver()))
	if err != nil {
		b.Fatal(err)
	}
	react, err := agent.NewReAct(oneHop{}, agent.WithName("react"), agent.WithTools(trellisEcho()), agent.WithCheckpointer(m.Saver()))
	if err != nil {
		b.Fatal(err)
	}
	if err := m.Register(runs.Graph(g), runs.Graph(react)); err != nil {
		b.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Work(wctx) }()
	api, err := server.New(m)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api)
	return srv, func() {
		srv.Close()
		_ = api.Close()
		stop()
		<-done
	}
}

func runOnce(b *testing.B, c *http.Client, url string) {
	resp, err := c.Post(url+"/runs/wait", "application/json", strings.NewReader(`{"assistant_id":"chain3","input":{"n":0}}`))
	if err != nil {
		b.Fatal(err)
	}
	var buf [256]byte
	n, _ := resp.Body.Read(buf[:])
	resp.Body.Close()
	if !strings.Contains(string(buf[:n]), `"n":3`) {
		b.Fatalf("unexpected answer %q", buf[:n])
	}
}

func BenchmarkServerRun(b *testing.B) {
	for _, backend := range serverBackends {
		b.Run(backend, func(b *testing.B) { benchmarkServerRun(b, backend) })
	}
}

func benchmarkServerRun(b *testing.B, backend string) {
	b.Run("sequential", func(b *testing.B) {
		srv, stop := serverUnderTest(b, backend)
		defer stop()
		c := srv.Client()
		b.ResetTimer()
		cpu := startCPU()
		for b.Loop() {
			runOnce(b, c, srv.URL)
		}
		cpu.report(b)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	})
	b.Run("32clients", func(b *testing.B) {
		srv, stop := serverUnderTest(b, backend)
		defer stop()
		c := srv.Client()
		c.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
		b.SetParallelism(16) // 32 goroutines on 2 cores
		b.ResetTimer()
		start := time.Now()
		cpu := startCPU()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				runOnce(b, c, srv.URL)
			}
		})
		cpu.report(b)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "runs/s")
	})
}

func BenchmarkServerFirstEvent(b *testing.B) {
	for _, backend := range serverBackends {
		b.Run(backend, func(b *testing.B) { benchmarkServerFirstEvent(b, backend) })
	}
}

func benchmarkServerFirstEvent(b *testing.B, backend string) {
	srv, stop := serverUnderTest(b, backend)
	defer stop()
	c := srv.Client()
	var first, values []time.Duration
	b.ResetTimer()
	cpu := startCPU()
	for b.Loop() {
		start := time.Now()
		resp, err := c.Post(srv.URL+"/runs/stream", "application/json", strings.NewReader(`{"assistant_id":"chain3","input":{"n":0},"stream_mode":"values"}`))
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if line == "event: metadata" && len(first) < len(values)+1 {
				first = append(first, time.Since(start))
			}
			if line == "event: values" {
				values = append(values, time.Since(start))
				break
			}
		}
		for sc.Scan() {
		}
		resp.Body.Close()
	}
	b.StopTimer()
	cpu.report(b)
	report := func(name string, ds []time.Duration) {
		if len(ds) == 0 {
			return
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, name+"-p99-ms")
	}
	report("first", first)
	report("values", values)
}

// cpuMeter measures the process's CPU time over a benchmark's runs.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	t, ok := cputime.Self()
	return cpuMeter{start: t, ok: ok}
}

// report adds the CPU time per run (b.N runs) since startCPU, in
// milliseconds, when the platform gives it.
func (c cpuMeter) report(b *testing.B) {
	t, ok := cputime.Self()
	if !c.ok || !ok || b.N == 0 {
		return
	}
	b.ReportMetric(float64(t-c.start)/float64(b.N)/1e6, "cpu-ms/run")
}
