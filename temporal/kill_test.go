package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/temporal"
)

// envWorker makes the test binary a worker of slowGraph's workflow
// (TestWorkerProcess); its value is a workerSpec in JSON.
const envWorker = "TRELLIS_TEMPORAL_TEST_WORKER"

// workerSpec tells a worker process where to work.
type workerSpec struct {
	HostPort  string `json:"hostPort"`
	Namespace string `json:"namespace"`
	Queue     string `json:"queue"`
	Dir       string `json:"dir"` // where the nodes leave their marks
}

// slowGraph is START → fast → slow → last → END. Each node, when it
// starts, leaves a file in dir named for the node and the process it runs
// in; slow then waits, heartbeating, until dir holds a file "release".
// The nodes' outputs depend on their input only.
func slowGraph(t *testing.T, dir string) *graph.Graph[flow] {
	mark := func(node string) error {
		return os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d", node, os.Getpid())), nil, 0o600)
	}
	step := func(node string) graph.NodeFunc[flow] {
		return func(_ context.Context, s flow) (flow, error) {
			if err := mark(node); err != nil {
				return s, err
			}
			s.Log = append(s.Log, node)
			s.N++
			return s, nil
		}
	}
	b := graph.New[flow](appendLog())
	b.AddNode("fast", step("fast")).AddNode("last", step("last"))
	b.AddNode("slow", func(ctx context.Context, s flow) (flow, error) {
		if err := mark("slow"); err != nil {
			return s, err
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
				break
			}
			temporal.Heartbeat(ctx)
			select {
			case <-ctx.Done():
				return s, ctx.Err()
			case <-tick.C:
			}
		}
		s.Log = append(s.Log, "slow")
		s.N *= 10
		return s, nil
	}) // no retry policy: a lost worker's task is still tried again
	b.AddEdge(graph.START, "fast").AddEdge("fast", "slow").AddEdge("slow", "last").AddEdge("last", graph.END)
	return compile(t, b)
}

// slowRunner is the Runner of slowGraph the worker processes register: a
// task whose worker died is retried once it has not heartbeaten for 2 s.
func slowRunner(t *testing.T, dir string) *temporal.Runner[flow] {
	return temporal.New("slow", slowGraph(t, dir), temporal.WithHeartbeatTimeout(2*time.Second))
}

// TestWorkerProcess is the worker process of
// TestServerFinishesRunOfKilledWorker, which runs the test binary again
// with envWorker set; otherwise it is skipped. It works until SIGTERM.
func TestWorkerProcess(t *testing.T) {
	raw := os.Getenv(envWorker)
	if raw == "" {
		t.Skip("runs only as a worker process of TestServerFinishesRunOfKilledWorker")
	}
	var spec workerSpec
	require.NoError(t, json.Unmarshal([]byte(raw), &spec))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	c, err := client.Dial(client.Options{
		HostPort: spec.HostPort, Namespace: spec.Namespace, Logger: quiet(),
		Identity: "worker-" + strconv.Itoa(os.Getpid()),
	})
	require.NoError(t, err)
	defer c.Close()
	// A workflow task that went to a worker's own (sticky) queue goes to
	// the shared queue if that worker has not taken it within a second: a
	// dead worker's workflows move on sooner than after the default 5 s.
	w := worker.New(c, spec.Queue, worker.Options{StickyScheduleToStartTimeout: time.Second})
	slowRunner(t, spec.Dir).Register(w)
	require.NoError(t, w.Start())
	defer w.Stop()
	<-ctx.Done()
}

// startWorkerProcess runs the test binary as a worker (TestWorkerProcess),
// killed when t ends if it still runs.
func startWorkerProcess(t *testing.T, spec workerSpec) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	logf, err := os.CreateTemp(t.TempDir(), "worker-*.log")
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestWorkerProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envWorker+"="+string(raw))
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("worker %d's output:\n%s", cmd.Process.Pid, b)
		}
	})
	return cmd
}

// marks returns the marks the nodes left in dir: node → processes.
func marks(t *testing.T, dir string) map[string][]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	out := map[string][]string{}
	for _, e := range entries {
		if node, pid, ok := strings.Cut(e.Name(), "-"); ok {
			out[node] = append(out[node], pid)
		}
	}
	return out
}

func TestServerFinishesRunOfKilledWorker(t *testing.T) {
	s := startServer(t)
	c := dial(t, s)
	dir := t.TempDir()
	spec := workerSpec{HostPort: s.HostPort, Namespace: s.Namespace, Queue: "slow", Dir: dir}

	// What the run gives when nothing goes wrong.
	refDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(refDir, "release"), nil, 0o600))
	want, err := slowGraph(t, refDir).Invoke(context.Background(), flow{})
	require.NoError(t, err)
	require.Equal(t, flow{Log: []string{"fast", "slow", "last"}, N: 11}, want)

	first := startWorkerProcess(t, spec)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "slow-thread", TaskQueue: "slow"}, "slow", flow{})
	require.NoError(t, err)

	// The first worker is inside slow: kill it there, without a chance
	// to say anything to the server.
	firstPid := strconv.Itoa(first.Process.Pid)
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "slow-"+firstPid))
		return err == nil
	}, time.Minute, 10*time.Millisecond, "the first worker starts slow")
	require.NoError(t, first.Process.Signal(syscall.SIGKILL))
	require.Error(t, first.Wait(), "killed")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o600))

	second := startWorkerProcess(t, spec)
	var out flow
	require.NoError(t, run.Get(ctx, &out))
	assert.Equal(t, want, out, "the run ends as it would have without the kill")

	// fast ran once, on the first worker: its output was in the history.
	// slow ran on both; last on the second only.
	secondPid := strconv.Itoa(second.Process.Pid)
	m := marks(t, dir)
	assert.Equal(t, []string{firstPid}, m["fast"])
	assert.ElementsMatch(t, []string{firstPid, secondPid}, m["slow"])
	assert.Equal(t, []string{secondPid}, m["last"])

	// The history says the same: slow's task finished on its second
	// attempt, by the second worker.
	nodes := map[int64]string{}
	for _, ev := range history(t, c, "slow-thread") {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			var in temporal.TaskInput[flow]
			require.NoError(t, json.Unmarshal(a.GetInput().GetPayloads()[0].GetData(), &in))
			nodes[ev.GetEventId()] = in.Task.Node
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && nodes[a.GetScheduledEventId()] == "slow" {
			assert.EqualValues(t, 2, a.GetAttempt())
			assert.Equal(t, "worker-"+secondPid, a.GetIdentity())
		}
	}

	require.NoError(t, second.Process.Signal(syscall.SIGTERM))
	require.NoError(t, second.Wait(), "the second worker stops cleanly on SIGTERM")
}
