package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/runs"
	runspg "github.com/trellis-go/trellis/runs/postgres"
	runssqlite "github.com/trellis-go/trellis/runs/sqlite"
)

// The runs layer's benchmarks start runs from this process and execute
// them in worker processes: this test binary, started again with
// workerEnv set, which TestMain turns into a worker (runsWorker).
const (
	workerEnv       = "TRELLIS_BENCH_RUNS_WORKER" // the backend: sqlite or postgres
	workerDSNEnv    = "TRELLIS_BENCH_RUNS_DSN"    // the SQLite file, or the Postgres URL
	workerSchemaEnv = "TRELLIS_BENCH_RUNS_SCHEMA" // the Postgres schema
	workerFetchEnv  = "TRELLIS_BENCH_RUNS_FETCH"  // "cooldown,poll" for runs.WithFetch; the defaults when empty
)

type runsState struct {
	N int `json:"n"`
}

func incrRuns(_ context.Context, s runsState) (runsState, error) {
	s.N++
	return s, nil
}

// registerChain3 registers Chain3, named chain3, with m.
func registerChain3(m *runs.Manager) error {
	g := graph.New[runsState](graph.WithName("chain3"))
	prev := graph.START
	for i := range 3 {
		name := fmt.Sprintf("n%d", i)
		g.AddNode(name, incrRuns).AddEdge(prev, name)
		prev = name
	}
	c, err := g.AddEdge(prev, graph.END).Compile(graph.WithCheckpointer(m.Saver()))
	if err != nil {
		return err
	}
	return m.Register(runs.Graph(c))
}

// fetch is a setting of runs.WithFetch; the zero fetch is the default.
type fetch struct{ cooldown, poll time.Duration }

func (f fetch) String() string {
	if f == (fetch{}) {
		return "default"
	}
	return fmt.Sprintf("cooldown=%v,poll=%v", f.cooldown, f.poll)
}

func parseFetch(s string) (fetch, error) {
	if s == "" {
		return fetch{}, nil
	}
	c, p, ok := strings.Cut(s, ",")
	if !ok {
		return fetch{}, fmt.Errorf("%s=%q: want cooldown,poll", workerFetchEnv, s)
	}
	var f fetch
	var err error
	if f.cooldown, err = time.ParseDuration(c); err == nil {
		f.poll, err = time.ParseDuration(p)
	}
	return f, err
}

// openRuns opens a Manager on backend (sqlite: the file dsn; postgres: the
// URL dsn, in schema) with fetch.
func openRuns(ctx context.Context, backend, dsn, schema string, f fetch) (*runs.Manager, error) {
	var opts []runs.Option
	if f != (fetch{}) {
		opts = append(opts, runs.WithFetch(f.cooldown, f.poll))
	}
	var (
		m   *runs.Manager
		err error
	)
	switch backend {
	case "sqlite":
		m, err = runssqlite.Open(ctx, dsn, runssqlite.WithRuns(opts...))
	case "postgres":
		m, err = runspg.Open(ctx, dsn, runspg.WithSchema(schema), runspg.WithRuns(opts...))
	default:
		return nil, fmt.Errorf("unknown backend %q", backend)
	}
	if err != nil {
		return nil, err
	}
	if err := registerChain3(m); err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

// runsWorker is the worker process: it works runs until its standard
// input closes (or SIGTERM), hands them back and exits. It prints "ready"
// once it is about to work.
func runsWorker(backend string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	f, err := parseFetch(os.Getenv(workerFetchEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	m, err := openRuns(ctx, backend, os.Getenv(workerDSNEnv), os.Getenv(workerSchemaEnv), f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Println("ready")
	if err := m.Work(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// runsSetup is a database with workers running on it and a Manager of
// this process (which works no runs) to start them from.
type runsSetup struct {
	m       *runs.Manager
	workers []*worker
}

// setUpRuns opens a database of backend for tb, starts n worker processes
// on it with fetch, opens the Manager runs are started from, and runs one
// run through to warm up. Everything stops when tb ends.
func setUpRuns(tb testing.TB, backend string, n int, f fetch) *runsSetup {
	tb.Helper()
	var dsn, schema string
	switch backend {
	case "sqlite":
		dsn = filepath.Join(tb.TempDir(), "runs.db")
	case "postgres":
		base := postgresURL()
		schema = pgSchema(tb, base, "bench_runs_")
		// Three processes share the server with whatever else runs here.
		dsn = withParam(tb, base, "pool_max_conns", "8")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := openRuns(ctx, backend, dsn, schema, f)
	if err != nil {
		if backend == "postgres" {
			pgUnreachable(tb, err)
		}
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = m.Close() })
	s := &runsSetup{m: m}
	for range n {
		s.workers = append(s.workers, startWorker(tb, backend, dsn, schema, f))
	}
	s.run(tb, ctx)
	return s
}

// A worker is a worker process.
type worker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	done   chan struct{}
	stderr *strings.Builder
	once   sync.Once
}

// startWorker starts a worker process and waits for it to be ready; it is
// stopped when tb ends, if not before.
func startWorker(tb testing.TB, backend, dsn, schema string, f fetch) *worker {
	tb.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), workerEnv+"="+backend, workerDSNEnv+"="+dsn, workerSchemaEnv+"="+schema)
	if f != (fetch{}) {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%s,%s", workerFetchEnv, f.cooldown, f.poll))
	}
	w := &worker{cmd: cmd, done: make(chan struct{}), stderr: &strings.Builder{}}
	cmd.Stderr = w.stderr
	var err error
	if w.in, err = cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && sc.Text() == "ready"
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		_ = cmd.Wait()
		close(w.done)
	}()
	tb.Cleanup(func() { w.stop(tb) })
	select {
	case ok := <-ready:
		if !ok {
			<-w.done
			tb.Fatalf("worker did not start: %v\n%s", cmd.ProcessState, w.stderr.String())
		}
	case <-time.After(time.Minute):
		tb.Fatalf("worker not ready within a minute\n%s", w.stderr.String())
	}
	return w
}

// stop closes the worker's input, on which it hands its runs back and
// exits, and waits for it to exit (killing it after 30 seconds).
func (w *worker) stop(tb testing.TB) {
	w.once.Do(func() {
		_ = w.in.Close()
		select {
		case <-w.done:
		case <-time.After(30 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.done
			tb.Errorf("worker %d did not exit within 30s of its input closing\n%s", w.cmd.Process.Pid, w.stderr.String())
		}
		if !w.cmd.ProcessState.Success() {
			tb.Errorf("worker %d: %v\n%s", w.cmd.Process.Pid, w.cmd.ProcessState, w.stderr.String())
		}
	})
}

// start starts a run of Chain3 and returns it with the time Start was
// called.
func (s *runsSetup) start(tb testing.TB, ctx context.Context) (runs.Run, time.Time) {
	tb.Helper()
	t0 := time.Now()
	r, err := s.m.Start(ctx, runs.Request{Graph: "chain3", Input: []byte(`{"n":0}`)})
	if err != nil {
		tb.Fatal(err)
	}
	return r, t0
}

// ended waits for run id to end, reading it every millisecond, and
// returns it. (Manager.Wait would do, but it is woken by notifications
// only in a Manager that works runs; see BenchmarkRunsWait.)
func (s *runsSetup) ended(tb testing.TB, ctx context.Context, id string) runs.Run {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r, err := s.m.Get(ctx, id)
		if err != nil {
			tb.Fatal(err)
		}
		if r.Status.Final() {
			if r.Status != runs.StatusSuccess {
				tb.Fatalf("run %s ended %s: %s", id, r.Status, r.Error)
			}
			return r
		}
		if time.Now().After(deadline) {
			tb.Fatalf("run %s still %s after a minute", id, r.Status)
		}
		time.Sleep(time.Millisecond)
	}
}

// run starts a run and waits for it to end.
func (s *runsSetup) run(tb testing.TB, ctx context.Context) {
	tb.Helper()
	r, _ := s.start(tb, ctx)
	s.ended(tb, ctx, r.ID)
}

// firstEvent is the time of run id's first recorded event (the worker's
// clock; the processes share the machine's).
func (s *runsSetup) firstEvent(tb testing.TB, ctx context.Context, id string) time.Time {
	tb.Helper()
	for ev, err := range s.m.Stream(ctx, id, 0) {
		if err != nil {
			tb.Fatal(err)
		}
		return ev.Time
	}
	tb.Fatalf("run %s recorded no event", id)
	return time.Time{}
}

// percentile is the p-th percentile (0–100) of sorted ds, nearest rank.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds))*p/100+0.5) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// dispatch starts runs one at a time, each after the previous ended, and
// reports the latency from Start to the run's first event (dispatch) and
// to its end (done), as p50 and p99 in milliseconds.
func dispatch(b *testing.B, s *runsSetup) {
	ctx := context.Background()
	type sample struct {
		id string
		t0 time.Time
		r  runs.Run
	}
	var samples []sample
	for b.Loop() {
		r, t0 := s.start(b, ctx)
		samples = append(samples, sample{id: r.ID, t0: t0, r: s.ended(b, ctx, r.ID)})
	}
	var disp, done []time.Duration
	for _, x := range samples {
		disp = append(disp, s.firstEvent(b, ctx, x.id).Sub(x.t0))
		done = append(done, x.r.EndedAt.Sub(x.t0))
	}
	slices.Sort(disp)
	slices.Sort(done)
	b.ReportMetric(ms(percentile(disp, 50)), "dispatch-p50-ms")
	b.ReportMetric(ms(percentile(disp, 99)), "dispatch-p99-ms")
	b.ReportMetric(ms(percentile(done, 50)), "done-p50-ms")
	b.ReportMetric(ms(percentile(done, 99)), "done-p99-ms")
}

var runsBackends = []string{"sqlite", "postgres"}

// BenchmarkRunsDispatch measures how long a run started on an idle
// system takes to reach a worker (Start to its first event) and to end,
// with the default fetch settings and one or two worker processes; runs
// go one at a time. ns/op is the round trip as this process sees it,
// reading the run every millisecond.
func BenchmarkRunsDispatch(b *testing.B) {
	for _, backend := range runsBackends {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", backend, n), func(b *testing.B) {
				dispatch(b, setUpRuns(b, backend, n, fetch{}))
			})
		}
	}
}

// BenchmarkRunsFetch measures dispatch as BenchmarkRunsDispatch does, with
// one worker, for several settings of River's fetch cooldown and poll
// interval (runs.WithFetch), River's own defaults (100ms, 1s) first.
func BenchmarkRunsFetch(b *testing.B) {
	settings := map[string][]fetch{
		"sqlite": {
			{100 * time.Millisecond, time.Second},
			{time.Millisecond, 100 * time.Millisecond},
			{time.Millisecond, 50 * time.Millisecond},
			{time.Millisecond, 20 * time.Millisecond},
			{time.Millisecond, 10 * time.Millisecond},
		},
		"postgres": {
			{100 * time.Millisecond, time.Second},
			{10 * time.Millisecond, time.Second},
			{time.Millisecond, time.Second},
			{time.Millisecond, 100 * time.Millisecond},
			{time.Millisecond, 50 * time.Millisecond},
		},
	}
	for _, backend := range runsBackends {
		for _, f := range settings[backend] {
			b.Run(backend+"/"+f.String(), func(b *testing.B) {
				dispatch(b, setUpRuns(b, backend, 1, f))
			})
		}
	}
}

// throughputBatch is how many runs one operation of BenchmarkRunsThroughput
// starts.
const throughputBatch = 100

// BenchmarkRunsThroughput starts batches of runs from four goroutines and
// reports runs/s: the batch's runs over the time from the first Start to
// the last run's end, with one or two worker processes (each working up
// to 100 runs at once, the default).
func BenchmarkRunsThroughput(b *testing.B) {
	for _, backend := range runsBackends {
		for _, n := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/workers=%d", backend, n), func(b *testing.B) {
				s := setUpRuns(b, backend, n, fetch{})
				ctx := context.Background()
				var total time.Duration
				for b.Loop() {
					ids := make(chan string, throughputBatch)
					errs := make(chan error, throughputBatch)
					first := time.Now()
					var wg sync.WaitGroup
					for range 4 {
						wg.Go(func() {
							for range throughputBatch / 4 {
								r, err := s.m.Start(ctx, runs.Request{Graph: "chain3", Input: []byte(`{"n":0}`)})
								if err != nil {
									errs <- err
									return
								}
								ids <- r.ID
							}
						})
					}
					wg.Wait()
					close(ids)
					close(errs)
					for err := range errs {
						b.Fatal(err)
					}
					var last time.Time
					for id := range ids {
						if r := s.ended(b, ctx, id); r.EndedAt.After(last) {
							last = r.EndedAt
						}
					}
					total += last.Sub(first)
				}
				b.ReportMetric(float64(b.N*throughputBatch)/total.Seconds(), "runs/s")
			})
		}
	}
}

// BenchmarkRunsWait is a run's round trip through Manager.Wait from a
// Manager that starts runs but does not work them (as a web front end
// would), against one worker process.
func BenchmarkRunsWait(b *testing.B) {
	for _, backend := range runsBackends {
		b.Run(backend, func(b *testing.B) {
			s := setUpRuns(b, backend, 1, fetch{})
			ctx := context.Background()
			for b.Loop() {
				r, _ := s.start(b, ctx)
				end, err := s.m.Wait(ctx, r.ID)
				if err != nil || end.Status != runs.StatusSuccess {
					b.Fatalf("run %s: %v, %v", r.ID, end.Status, err)
				}
			}
		})
	}
}

// BenchmarkRunsCommits counts the transactions PostgreSQL commits per run
// of Chain3 through the runs layer, from Start to the run's end, with one
// worker process (in a database of their own; the benchmark's own reads,
// which wait for the runs to end, are not counted). River's periodic work
// in the worker adds a few transactions a second, so the figure is within
// a few tenths. ns/op is the time the counting takes per run.
func BenchmarkRunsCommits(b *testing.B) {
	b.Run("postgres", func(b *testing.B) {
		base := commitsURL(b)
		dsn := withParam(b, base, "pool_max_conns", "8")
		schema := pgSchema(b, base, "bench_runs_commits_")
		ctx := context.Background()
		var commits float64
		for b.Loop() {
			commits = commitsPerRunExcept(b, base, 20, func(n int) int64 {
				m, err := openRuns(ctx, "postgres", dsn, schema, fetch{})
				if err != nil {
					pgUnreachable(b, err)
				}
				w := startWorker(b, "postgres", dsn, schema, fetch{})
				conn := pgConnect(b, base)
				for range n {
					if _, err := m.Start(ctx, runs.Request{Graph: "chain3", Input: []byte(`{"n":0}`)}); err != nil {
						b.Fatal(err)
					}
				}
				var own int64
				deadline := time.Now().Add(time.Minute)
				for {
					var left int
					own++
					err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "trellis_runs"}.Sanitize()+
						` WHERE status <> 'success'`).Scan(&left)
					if err != nil {
						b.Fatal(err)
					}
					if left == 0 {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("%d runs not done after a minute", left)
					}
					time.Sleep(20 * time.Millisecond)
				}
				_ = conn.Close(ctx)
				_ = m.Close()
				w.stop(b)
				return own
			})
		}
		b.ReportMetric(commits, "commits/run")
	})
}
