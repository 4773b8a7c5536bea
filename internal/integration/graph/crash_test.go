package graph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/postgres"
	"github.com/trellis-go/trellis/state/sqlite"
)

// The crash test runs a ten-node graph in a child process, kills the child
// with SIGKILL while one of two parallel nodes is still working (its sibling
// has finished), and resumes the thread in a fresh process. Every node
// records its start and end in a side-effect file, which the test reads.

type crashState struct {
	Log   []string
	Count int
}

var crashNodes = []string{"n1", "n2", "n3", "n4", "n5a", "n5b", "n6", "n7", "n8", "n9"}

func crashGraph(t testing.TB, saver state.Saver, effects string, slow time.Duration) *graph.Graph[crashState] {
	node := func(name string) graph.NodeFunc[crashState] {
		return func(ctx context.Context, s crashState) (crashState, error) {
			effect(t, effects, "start "+name)
			d := 5 * time.Millisecond
			if name == "n5b" {
				d = slow
			}
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return s, ctx.Err()
			}
			s.Log = append(s.Log, name)
			s.Count++
			effect(t, effects, "end "+name)
			return s, nil
		}
	}
	b := graph.New[crashState](
		graph.WithName("crash"),
		graph.WithReducer(func(s *crashState) *[]string { return &s.Log }, state.Append[string]()),
		graph.WithReducer(func(s *crashState) *int { return &s.Count }, state.Sum[int]()),
	)
	for _, n := range crashNodes {
		b.AddNode(n, node(n))
	}
	b.AddEdge(graph.START, "n1").AddEdge("n1", "n2").AddEdge("n2", "n3").AddEdge("n3", "n4").
		AddEdge("n4", "n5a").AddEdge("n4", "n5b").AddEdge("n5a", "n6").AddEdge("n5b", "n6").
		AddEdge("n6", "n7").AddEdge("n7", "n8").AddEdge("n8", "n9")
	var opts []graph.CompileOption
	if saver != nil {
		opts = append(opts, graph.WithCheckpointer(saver))
	}
	g, err := b.Compile(opts...)
	require.NoError(t, err)
	return g
}

func effect(t testing.TB, path, line string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteString(line + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
}

func readEffects(t *testing.T, path string) []string {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// openCrashStore opens the store named by kind; it skips (or fails in CI)
// when the store's server is missing.
func openCrashStore(t testing.TB, kind, dsn, schema string) state.Saver {
	switch kind {
	case "sqlite":
		s, err := sqlite.Open(dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	case "postgres":
		pgtest.SkipShort(t)
		ctx := context.Background()
		s, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
		if err != nil {
			pgtest.Unreachable(t, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	t.Fatalf("unknown store %q", kind)
	return nil
}

func postgresURL() string { return pgtest.URL() }

// writeLogger records in the effects file, as "saved NODE", the nodes
// whose pending writes the store has taken.
type writeLogger struct {
	state.ConditionalSaver
	t       testing.TB
	effects string
}

func (w writeLogger) PutWrites(ctx context.Context, threadID, namespace, checkpointID string, writes []state.PendingWrite) error {
	if err := w.ConditionalSaver.PutWrites(ctx, threadID, namespace, checkpointID, writes); err != nil {
		return err
	}
	for _, pw := range writes {
		effect(w.t, w.effects, "saved "+pw.Node)
	}
	return nil
}

// TestCrashChild is the child process of TestCrashAndResume; it does nothing
// when run directly.
func TestCrashChild(t *testing.T) {
	mode := os.Getenv("TRELLIS_CRASH_MODE")
	if mode == "" {
		t.Skip("run by TestCrashAndResume in a child process")
	}
	saver := openCrashStore(t, os.Getenv("TRELLIS_CRASH_STORE"), os.Getenv("TRELLIS_CRASH_DSN"), os.Getenv("TRELLIS_CRASH_SCHEMA"))
	effects := os.Getenv("TRELLIS_CRASH_EFFECTS")
	ctx := context.Background()
	var (
		out crashState
		err error
	)
	switch mode {
	case "run":
		cs, ok := saver.(state.ConditionalSaver)
		require.True(t, ok, "%T is not a state.ConditionalSaver", saver)
		logged := writeLogger{ConditionalSaver: cs, t: t, effects: effects}
		g := crashGraph(t, logged, effects, time.Minute) // killed long before
		out, err = g.Invoke(ctx, crashState{}, graph.WithThread("crash"))
	case "resume":
		g := crashGraph(t, saver, effects, 5*time.Millisecond)
		out, err = g.Resume(ctx, "crash")
	}
	require.NoError(t, err)
	data, err := json.Marshal(out)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(os.Getenv("TRELLIS_CRASH_RESULT"), data, 0o644))
}

func TestCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			dsn := filepath.Join(dir, "checkpoints.db")
			schema := fmt.Sprintf("crash_%d", time.Now().UnixNano())
			if kind == "postgres" {
				dsn = postgresURL()
				// Probe the server in this process, and drop the schema after.
				openCrashStore(t, kind, dsn, schema)
				t.Cleanup(func() { dropSchemaSQL(t, dsn, schema) })
			}
			effects := filepath.Join(dir, "effects.log")
			result := filepath.Join(dir, "result.json")
			child := func(mode string) *exec.Cmd {
				cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
				cmd.Env = append(os.Environ(),
					"TRELLIS_CRASH_MODE="+mode, "TRELLIS_CRASH_STORE="+kind, "TRELLIS_CRASH_DSN="+dsn,
					"TRELLIS_CRASH_SCHEMA="+schema, "TRELLIS_CRASH_EFFECTS="+effects, "TRELLIS_CRASH_RESULT="+result)
				return cmd
			}

			// First process: killed while n5b works, once the store holds
			// the output of n5a, which has finished.
			run := child("run")
			var runOut strings.Builder
			run.Stdout, run.Stderr = &runOut, &runOut
			require.NoError(t, run.Start())
			deadline := time.Now().Add(30 * time.Second)
			for {
				lines := readEffects(t, effects)
				if contains(lines, "saved n5a") && contains(lines, "start n5b") {
					break
				}
				if time.Now().After(deadline) {
					_ = run.Process.Kill()
					_ = run.Wait()
					t.Fatalf("the child never reached n5; effects %v; output:\n%s", lines, runOut.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			require.NoError(t, run.Process.Signal(syscall.SIGKILL))
			err := run.Wait()
			require.Error(t, err, "the child was killed")
			killedAt := readEffects(t, effects)
			_, statErr := os.Stat(result)
			require.True(t, os.IsNotExist(statErr), "the first run never finished")

			// Second, fresh process: resumes the thread.
			resume := child("resume")
			out, err := resume.CombinedOutput()
			require.NoError(t, err, "resume failed:\n%s", out)

			var got crashState
			data, err := os.ReadFile(result)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &got))

			want, err := crashGraph(t, nil, "", 5*time.Millisecond).Invoke(context.Background(), crashState{})
			require.NoError(t, err)
			assert.Equal(t, want, got, "the resumed run ends in the state of an uninterrupted run")

			lines := readEffects(t, effects)
			starts, ends := map[string]int{}, map[string]int{}
			for _, l := range lines {
				if n, ok := strings.CutPrefix(l, "start "); ok {
					starts[n]++
				}
				if n, ok := strings.CutPrefix(l, "end "); ok {
					ends[n]++
				}
			}
			for _, n := range crashNodes {
				assert.Equal(t, 1, ends[n], "node %s finished once", n)
				if contains(killedAt, "end "+n) {
					assert.Equal(t, 1, starts[n], "node %s had finished before the crash and must not run again", n)
				}
			}
			assert.Equal(t, 2, starts["n5b"], "the node cut off by the crash runs again")
			assert.Equal(t, 1, starts["n5a"], "its sibling had finished and its output was kept")
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}
