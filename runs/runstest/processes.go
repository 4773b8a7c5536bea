package runstest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/state"
)

// The environment of a worker process the process test starts.
const (
	envWorker = "TRELLIS_RUNSTEST_WORKER" // the backend's address (a path, a URL)
	envLease  = "TRELLIS_RUNSTEST_LEASE"
)

// Opener opens a Manager on the database at addr with opts, for a worker
// process of the process test.
type Opener func(ctx context.Context, addr string, opts ...runs.Option) (*runs.Manager, error)

// WorkerMain runs a worker process of the process test when this process
// is one (its environment says so), and exits; otherwise it returns at
// once. Call it first in the backend test package's TestMain.
func WorkerMain(open Opener) {
	addr := os.Getenv(envWorker)
	if addr == "" {
		return
	}
	lease, _ := time.ParseDuration(os.Getenv(envLease))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	// Runs tried again after a failure of the store (a busy database, on
	// a loaded machine) print "RETRY <thread>": their superstep had not
	// committed, so running it again is expected.
	retries := slog.New(slog.NewTextHandler(retryWriter{os.Stdout}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	m, err := open(context.Background(), addr, runs.WithLease(lease), runs.WithDrain(runs.DrainAtBoundary, 20*time.Second),
		runs.WithConcurrency(25), runs.WithLogger(retries))
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker: open:", err)
		os.Exit(2)
	}
	g, err := pipeline(m.Saver(), os.Stdout)
	if err == nil {
		err = m.Register(runs.Graph(g))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(2)
	}
	fmt.Fprintln(os.Stdout, "READY")
	if err := m.Work(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker: work:", err)
		os.Exit(3)
	}
	_ = m.Close()
	os.Exit(0)
}

// pipeline is the process test's graph: split → (left, right) → join →
// ask (an interrupt) → finish. Each node takes a few milliseconds and
// prints a line for each execution: "EXEC <pid> <thread> <node> <unix ns>".
func pipeline(saver state.Saver, out io.Writer) (*graph.Graph[Chat], error) {
	var mu sync.Mutex
	node := func(name string) graph.NodeFunc[Chat] {
		return func(ctx context.Context, s Chat) (Chat, error) {
			mu.Lock()
			fmt.Fprintf(out, "EXEC %d %s %s %d\n", os.Getpid(), graph.ThreadID(ctx), name, time.Now().UnixNano())
			mu.Unlock()
			if err := pause.Sleep(ctx, 20*time.Millisecond); err != nil {
				return s, err
			}
			if name == "ask" {
				note, err := graph.Interrupt[string](ctx, "a note?")
				if err != nil {
					return s, err
				}
				s.Messages = append(s.Messages, "note:"+note)
				return s, nil
			}
			s.Messages = append(s.Messages, name)
			return s, nil
		}
	}
	b := graph.New[Chat](graph.WithName("pipeline"),
		graph.WithReducer(func(s *Chat) *[]string { return &s.Messages }, state.Append[string]()))
	for _, n := range []string{"split", "left", "right", "join", "ask", "finish"} {
		b.AddNode(n, node(n))
	}
	return b.AddEdge(graph.START, "split").AddEdge("split", "left").AddEdge("split", "right").
		AddJoin([]string{"left", "right"}, "join").AddEdge("join", "ask").AddEdge("ask", "finish").
		Compile(graph.WithCheckpointer(saver))
}

// ProcessConfig sizes the process test.
type ProcessConfig struct {
	// Addr is the database's address, as the backend's Opener reads it.
	Addr string
	// Open opens a Manager on Addr in the test's own process.
	Open Opener
	// Runs is how many runs to start (500 by default).
	Runs int
	// Lease is the workers' lease (2s by default).
	Lease time.Duration
	// Dump, when set, prints what the database holds about stalled runs.
	Dump func(t *testing.T)
	// Freeze also freezes a worker (SIGSTOP) past its leases and thaws
	// it. Not for SQLite: a process frozen inside a write transaction
	// holds the file's lock, and every writer waits for it.
	Freeze bool
}

// worker is a worker process.
type workerProc struct {
	cmd  *exec.Cmd
	pid  int
	done chan error
	// signal, when set, is sent to the worker as soon as it prints that
	// it began a node: the worker is stopped inside a superstep.
	signal atomic.Pointer[pendingSignal]
}

// pendingSignal is a signal to send a worker inside a node, and where to
// say when it was sent.
type pendingSignal struct {
	sig  syscall.Signal
	sent chan time.Time
}

// signalInNode arms sig for w (see workerProc.signal) and returns the
// channel that says when it was sent.
func (w *workerProc) signalInNode(sig syscall.Signal) <-chan time.Time {
	p := &pendingSignal{sig: sig, sent: make(chan time.Time, 1)}
	w.signal.Store(p)
	return p.sent
}

// Processes runs the process test: three worker processes execute
// cfg.Runs runs of a graph with a parallel superstep and an interrupt,
// while one worker is stopped with SIGTERM (a deploy: a new one starts),
// one is killed with SIGKILL (a new one starts), and, with cfg.Freeze,
// one is frozen with SIGSTOP past its leases and thawed (a worker
// presumed dead that comes back); each signal reaches its worker inside a
// node. Every run must end with the state of an uninterrupted run; a node
// may run again only where its execution was on the killed or the frozen
// worker before it stopped and that worker had not gone on to a later
// superstep of the thread (a superstep that had not committed); the
// drained worker's supersteps never run twice. It logs the runs per
// second, the dispatch latency (p50, p99) and the recovery time after
// each signal.
func Processes(t *testing.T, cfg ProcessConfig) {
	if cfg.Runs == 0 {
		cfg.Runs = 500
	}
	if cfg.Lease == 0 {
		cfg.Lease = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	m, err := cfg.Open(ctx, cfg.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	g, err := pipeline(m.Saver(), io.Discard)
	require.NoError(t, err)
	require.NoError(t, m.Register(runs.Graph(g)))

	var (
		logMu   sync.Mutex
		execs   []execLine
		retried = map[string]int{} // threads whose runs were tried again after a store failure
	)
	var workers []*workerProc
	start := func() *workerProc {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envWorker+"="+cfg.Addr, envLease+"="+cfg.Lease.String())
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		w := &workerProc{cmd: cmd, pid: cmd.Process.Pid, done: make(chan error, 1)}
		ready := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				line := sc.Text()
				if line == "READY" {
					close(ready)
					continue
				}
				if th, ok := strings.CutPrefix(line, "RETRY "); ok {
					logMu.Lock()
					retried[th]++
					logMu.Unlock()
					continue
				}
				if e, ok := parseExec(line); ok {
					if p := w.signal.Swap(nil); p != nil {
						at := time.Now()
						_ = cmd.Process.Signal(p.sig)
						p.sent <- at
					}
					logMu.Lock()
					execs = append(execs, e)
					logMu.Unlock()
				}
			}
			w.done <- cmd.Wait()
		}()
		select {
		case <-ready:
		case <-time.After(60 * time.Second):
			t.Fatal("a worker process did not start within 60s")
		}
		workers = append(workers, w)
		return w
	}
	t.Cleanup(func() {
		for _, w := range workers {
			_ = w.cmd.Process.Signal(syscall.SIGCONT)
			_ = w.cmd.Process.Kill()
		}
	})
	begin := time.Now()
	ids := make([]string, cfg.Runs)
	threads := make([]string, cfg.Runs)
	for i := range cfg.Runs {
		r, err := m.Start(ctx, runs.Request{Graph: "pipeline", Thread: fmt.Sprintf("p%04d", i), Input: input(fmt.Sprintf("in%d", i))})
		require.NoError(t, err)
		ids[i], threads[i] = r.ID, r.Thread
	}
	accepted := time.Since(begin)
	// The workers start once every run waits: the stops below hit runs in flight.
	w1, w2, w3 := start(), start(), start()
	dump := cfg.Dump

	begin = time.Now()

	// The signals, one after the other, each sent to its worker inside a
	// node (see workerProc.signal) once the workers have executed
	// cfg.Runs more nodes (of about seven a run): a deploy's SIGTERM, then
	// a SIGKILL, then, with cfg.Freeze, a SIGSTOP. The main loop below
	// starts a worker in place of the first two and thaws the frozen one
	// once its leases expired.
	type stop struct {
		w   *workerProc
		sig syscall.Signal
		at  time.Time
	}
	plan := []stop{{w: w2, sig: syscall.SIGTERM}, {w: w1, sig: syscall.SIGKILL}}
	if cfg.Freeze {
		plan = append(plan, stop{w: w3, sig: syscall.SIGSTOP})
	}
	stopped := make(chan stop, len(plan))
	go func() {
		for i, st := range plan {
			for {
				logMu.Lock()
				n := len(execs)
				logMu.Unlock()
				if n >= (i+1)*cfg.Runs {
					break
				}
				if pause.Sleep(ctx, 10*time.Millisecond) != nil {
					return
				}
			}
			select {
			case st.at = <-st.w.signalInNode(st.sig):
				stopped <- st
			case <-ctx.Done():
				return
			}
		}
	}()
	var (
		termAt, killAt, stopAt time.Time
		done                   int // stops seen by the loop
		thaw                   *time.Timer
	)
	onStops := func() {
		for {
			select {
			case st := <-stopped:
				done++
				switch st.sig {
				case syscall.SIGTERM:
					termAt = st.at
					start()
				case syscall.SIGKILL:
					killAt = st.at
					start()
				case syscall.SIGSTOP:
					stopAt = st.at
					thaw = time.AfterFunc(2*cfg.Lease+cfg.Lease/2, func() { // frozen past its leases: taken for dead
						_ = w3.cmd.Process.Signal(syscall.SIGCONT)
					})
				}
			default:
				return
			}
		}
	}
	defer func() {
		if thaw != nil && thaw.Stop() {
			_ = w3.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	resumed := map[string]bool{}
	lastReport, lastProgress := time.Now(), -1
	for {
		require.NoError(t, ctx.Err(), "the runs did not finish in time")
		paused, err := m.SearchThreads(ctx, runs.ThreadQuery{Status: runs.ThreadInterrupted, Limit: runs.MaxLimit})
		require.NoError(t, err)
		for _, th := range paused {
			if resumed[th.ID] {
				continue
			}
			list, err := m.Runs(ctx, th.ID, runs.RunQuery{Limit: 1})
			require.NoError(t, err)
			require.NotEmpty(t, list)
			last := list[0]
			require.Len(t, last.Interrupts, 1, "run %s", last.ID)
			_, err = m.Start(ctx, runs.Request{Graph: "pipeline", Thread: th.ID,
				Resume: &runs.Resume{ByID: map[string]json.RawMessage{last.Interrupts[0].ID: json.RawMessage(`"ok"`)}}})
			require.NoError(t, err)
			resumed[th.ID] = true
		}
		idle, err := m.SearchThreads(ctx, runs.ThreadQuery{Status: runs.ThreadIdle, Limit: runs.MaxLimit})
		require.NoError(t, err)
		progress := len(resumed) + len(idle)
		if time.Since(lastReport) > 5*time.Second {
			lastReport = time.Now()
			busy, _ := m.SearchThreads(ctx, runs.ThreadQuery{Status: runs.ThreadBusy, Limit: runs.MaxLimit})
			t.Logf("%v: %d paused, %d resumed, %d idle, %d busy", time.Since(begin).Round(time.Second), len(paused), len(resumed), len(idle), len(busy))
			if progress == lastProgress && len(busy) > 0 && len(busy) < 5 {
				for _, th := range busy {
					list, _ := m.Runs(ctx, th.ID, runs.RunQuery{})
					for _, r := range list {
						t.Logf("stalled? thread %s (active %s): run %s %s attempts %d created %v updated %v error %q", th.ID, th.ActiveRun, r.ID, r.Status, r.Attempts, r.CreatedAt.Format("15:04:05.000"), r.UpdatedAt.Format("15:04:05.000"), r.Error)
					}
				}
				if dump != nil {
					dump(t)
				}
			}
			lastProgress = progress
		}
		onStops()
		failed, err := m.SearchThreads(ctx, runs.ThreadQuery{Status: runs.ThreadError, Limit: 3})
		require.NoError(t, err)
		for _, th := range failed {
			list, _ := m.Runs(ctx, th.ID, runs.RunQuery{Limit: 1})
			if len(list) > 0 {
				t.Fatalf("thread %s: run %s failed: %s", th.ID, list[0].ID, list[0].Error)
			}
		}
		if len(idle) == cfg.Runs {
			require.Equal(t, len(plan), done, "every run ended before the workers were stopped inside a node")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(begin)

	// Every run ended with the state of an uninterrupted run.
	resumedAt := map[string]int64{} // when each thread's resuming run was accepted
	for i, th := range threads {
		snap, err := g.GetState(ctx, th)
		require.NoError(t, err)
		want := []string{fmt.Sprintf("in%d", i), "split", "left", "right", "join", "note:ok", "finish"}
		require.Equal(t, want, snap.State.Messages, "thread %s", th)
		r, err := m.Get(ctx, ids[i])
		require.NoError(t, err)
		require.Equal(t, runs.StatusInterrupted, r.Status, "run %s: %s", r.ID, r.Error)
		last, err := m.Runs(ctx, th, runs.RunQuery{Limit: 1})
		require.NoError(t, err)
		require.Equal(t, runs.StatusSuccess, last[0].Status, "the resuming run of thread %s: %s", th, last[0].Error)
		resumedAt[th] = last[0].CreatedAt.UnixNano()
	}

	// The drained worker exited cleanly; stop the others.
	select {
	case err := <-w2.done:
		assert.NoError(t, err, "the worker stopped with SIGTERM exits cleanly")
	case <-time.After(30 * time.Second):
		t.Error("the worker stopped with SIGTERM did not exit within 30s")
	}

	logMu.Lock()
	defer logMu.Unlock()
	type key struct{ thread, node string }
	seen := map[key][]execLine{}
	for _, e := range execs {
		k := key{e.thread, e.node}
		seen[k] = append(seen[k], e)
	}
	// The workers whose supersteps may be lost: the killed one, and the
	// frozen one, up to the moment they stopped.
	cut := map[int]int64{w1.pid: killAt.UnixNano()}
	if cfg.Freeze {
		cut[w3.pid] = stopAt.UnixNano()
	}
	again := 0
	for k, es := range seen {
		expected := 1
		if k.node == "ask" {
			expected = 2 // it pauses, and runs again when resumed
		}
		lost := 0 // executions on the killed or the frozen worker whose superstep may not have committed
		for _, e := range es {
			if until, ok := cut[e.pid]; ok && e.at < until && !followed(execs, e, until) {
				lost++
			}
		}
		if len(es) > expected {
			again += len(es) - expected
		}
		assert.LessOrEqual(t, len(es), expected+lost+retried[k.thread],
			"node %s of thread %s ran %d times; only a superstep that had not committed (the last one the killed or the frozen worker began on the thread), or of a run tried again after a failure of the store, may run again", k.node, k.thread, len(es))
	}
	dispatch := dispatchLatencies(seen, ids, threads, m, ctx, begin)
	signals := "a SIGTERM and a SIGKILL"
	if cfg.Freeze {
		signals = "a SIGTERM, a SIGKILL and a SIGSTOP"
	}
	t.Logf("%d runs (each paused once and resumed) on 3 worker processes, with %s: %.1f runs/s (%v from the workers' start; %v to accept the runs before)",
		cfg.Runs, signals, float64(cfg.Runs)/elapsed.Seconds(), elapsed.Round(time.Millisecond), accepted.Round(time.Millisecond))
	t.Logf("from the workers' start to each run's first node (a backlog of %d runs): p50 %v, p99 %v", cfg.Runs, pct(dispatch, 50), pct(dispatch, 99))
	resumes := resumeLatencies(execs, resumedAt)
	t.Logf("dispatch of the resuming runs, started while the workers ran (from Start to the run's first node): p50 %v, p99 %v", pct(resumes, 50), pct(resumes, 99))
	perWorker := map[int]int{}
	for _, e := range execs {
		perWorker[e.pid]++
	}
	t.Logf("node executions per worker: killed %d, drained %d, frozen %d, all %v", perWorker[w1.pid], perWorker[w2.pid], perWorker[w3.pid], perWorker)
	frozen := "no freeze"
	if cfg.Freeze {
		frozen = "after SIGSTOP " + recovery(execs, w3.pid, stopAt).String()
	}
	t.Logf("recovery (until another worker ran the threads the stopped one held; includes waiting for a free slot): after SIGTERM %v, after SIGKILL %v, %s (lease %v); %d node executions repeated after the kill and the freeze",
		recovery(execs, w2.pid, termAt), recovery(execs, w1.pid, killAt), frozen, cfg.Lease, again)
}

// stepOf numbers the supersteps of the pipeline graph, in order.
var stepOf = map[string]int{"split": 0, "left": 1, "right": 1, "join": 2, "ask": 3, "finish": 4}

// followed says whether the worker that executed e went on, before until,
// to a later superstep of the same thread: then e's superstep had
// committed (each superstep's checkpoint commits before the next one
// starts), and it must never run again.
func followed(execs []execLine, e execLine, until int64) bool {
	for _, x := range execs {
		if x.pid == e.pid && x.thread == e.thread && x.at > e.at && x.at < until && stepOf[x.node] > stepOf[e.node] {
			return true
		}
	}
	return false
}

type execLine struct {
	pid          int
	thread, node string
	at           int64
}

func parseExec(line string) (execLine, bool) {
	f := strings.Fields(line)
	if len(f) != 5 || f[0] != "EXEC" {
		return execLine{}, false
	}
	pid, err1 := strconv.Atoi(f[1])
	at, err2 := strconv.ParseInt(f[4], 10, 64)
	if err1 != nil || err2 != nil {
		return execLine{}, false
	}
	return execLine{pid: pid, thread: f[2], node: f[3], at: at}, true
}

// dispatchLatencies is, for each run, the time from its acceptance to its
// first node.
func dispatchLatencies[K comparable](seen map[K][]execLine, ids, threads []string, m *runs.Manager, ctx context.Context, since time.Time) []time.Duration {
	first := map[string]int64{}
	for _, es := range seen {
		for _, e := range es {
			if e.node == "split" && (first[e.thread] == 0 || e.at < first[e.thread]) {
				first[e.thread] = e.at
			}
		}
	}
	var out []time.Duration
	for i, id := range ids {
		r, err := m.Get(ctx, id)
		if err != nil || first[threads[i]] == 0 {
			continue
		}
		from := max(r.CreatedAt.UnixNano(), since.UnixNano())
		out = append(out, time.Duration(first[threads[i]]-from))
	}
	slices.Sort(out)
	return out
}

// resumeLatencies is, for each thread, the time from its resuming run's
// acceptance (acceptedAt) to the first execution of "ask" after it.
func resumeLatencies(execs []execLine, acceptedAt map[string]int64) []time.Duration {
	first := map[string]int64{}
	for _, e := range execs {
		at, ok := acceptedAt[e.thread]
		if ok && e.node == "ask" && e.at >= at && (first[e.thread] == 0 || e.at < first[e.thread]) {
			first[e.thread] = e.at
		}
	}
	out := make([]time.Duration, 0, len(first))
	for th, at := range first {
		out = append(out, time.Duration(at-acceptedAt[th]))
	}
	slices.Sort(out)
	return out
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, len(ds)*p/100)].Round(100 * time.Microsecond)
}

// recovery is how long after at the threads the worker pid was executing
// at that moment saw a node of another worker.
func recovery(execs []execLine, pid int, at time.Time) time.Duration {
	if at.IsZero() {
		return 0
	}
	cut := at.UnixNano()
	held := map[string]bool{}
	for _, e := range execs {
		if e.pid == pid && e.at <= cut && e.at > cut-int64(time.Second) {
			held[e.thread] = true
		}
	}
	var worst int64
	for th := range held {
		var next int64
		for _, e := range execs {
			if e.thread == th && e.pid != pid && e.at > cut && (next == 0 || e.at < next) {
				next = e.at
			}
		}
		if next-cut > worst {
			worst = next - cut
		}
	}
	return time.Duration(worst).Round(time.Millisecond)
}

// retryWriter prints "RETRY <thread>" for each log record of a run tried
// again, and drops the rest.
type retryWriter struct{ w io.Writer }

var threadAttr = regexp.MustCompile(`thread=(\S+)`)

func (r retryWriter) Write(p []byte) (int, error) {
	line := string(p)
	if strings.Contains(line, "tried again") {
		if m := threadAttr.FindStringSubmatch(line); m != nil {
			fmt.Fprintf(r.w, "RETRY %s\n", m[1])
		}
	}
	return len(p), nil
}
