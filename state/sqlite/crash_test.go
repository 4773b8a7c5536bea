package sqlite_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/sqlite"
)

// Child processes are this test binary re-run with these variables set.
const (
	childModeEnv  = "TRELLIS_SQLITE_CHILD"
	childPathEnv  = "TRELLIS_SQLITE_CHILD_PATH"
	childStartEnv = "TRELLIS_SQLITE_CHILD_START"
	childCountEnv = "TRELLIS_SQLITE_CHILD_COUNT"
)

// payloadFor is the deterministic payload of checkpoint i, big enough that a
// kill often lands in the middle of writing one.
func payloadFor(thread string, i int) []byte {
	seed := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", thread, i)))
	return bytes.Repeat(seed[:], 2048) // 64 KiB
}

func checkpointID(i int) string { return fmt.Sprintf("cp-%06d", i) }

// TestChildProcess is the body of the child processes; it skips unless run
// as one. Each checkpoint i gets three writes; after both calls returned it
// prints "ok i".
func TestChildProcess(t *testing.T) {
	mode := os.Getenv(childModeEnv)
	if mode == "" {
		t.Skip("runs only as a child process of the crash and multi-process tests")
	}
	start, err := strconv.Atoi(os.Getenv(childStartEnv))
	require.NoError(t, err)
	count, err := strconv.Atoi(os.Getenv(childCountEnv))
	require.NoError(t, err)
	thread := mode

	s, err := sqlite.Open(os.Getenv(childPathEnv), sqlite.WithBusyTimeout(20*time.Second))
	require.NoError(t, err)
	defer s.Close()
	ctx := t.Context()
	out := bufio.NewWriter(os.Stdout)
	for i := start; count == 0 || i < start+count; i++ {
		id := checkpointID(i)
		require.NoError(t, s.Put(ctx, state.Checkpoint{ThreadID: thread, ID: id, Step: i, Source: "loop", Payload: payloadFor(thread, i)}))
		require.NoError(t, s.PutWrites(ctx, thread, "", id, []state.PendingWrite{
			{TaskID: "a", Node: "n", Payload: []byte(id + "/a")},
			{TaskID: "b", Node: "n", Payload: []byte(id + "/b")},
			{TaskID: "c", Node: "n", Payload: []byte(id + "/c")},
		}))
		fmt.Fprintf(out, "ok %d\n", i)
		require.NoError(t, out.Flush())
	}
}

func childCommand(t *testing.T, thread, path string, start, count int) *exec.Cmd {
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		childModeEnv+"="+thread, childPathEnv+"="+path,
		childStartEnv+"="+strconv.Itoa(start), childCountEnv+"="+strconv.Itoa(count))
	return cmd
}

// TestSurvivesSIGKILL kills a writing process at a random point, several
// times, and checks after each kill that the file is sound, that every
// acknowledged checkpoint is there with all its writes, and that a fresh
// process carries on from the latest checkpoint.
func TestSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	const thread, rounds = "crash", 3
	acknowledged := map[int]bool{} // checkpoints whose Put and PutWrites returned
	next := 0
	for round := range rounds {
		cmd := childCommand(t, thread, path, next, 0)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())

		acked := -1
		lines := bufio.NewScanner(stdout)
		readAck := func() bool {
			if !lines.Scan() {
				return false
			}
			if n, ok := strings.CutPrefix(lines.Text(), "ok "); ok {
				acked, err = strconv.Atoi(n)
				require.NoError(t, err)
				acknowledged[acked] = true
			}
			return true
		}
		for acked < next+40+round*17 && readAck() {
		}
		require.GreaterOrEqual(t, acked, next, "the child acknowledged nothing")
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		for readAck() { // acknowledgements written before the kill
		}
		err = cmd.Wait()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		require.Equal(t, "signal: killed", exit.Error())

		checkIntegrity(t, path)
		s, err := sqlite.Open(path)
		require.NoError(t, err)
		ctx := t.Context()
		cps, err := s.List(ctx, thread, "", state.ListOptions{})
		require.NoError(t, err)
		stored := map[int]bool{}
		for _, cp := range cps {
			i, err := strconv.Atoi(strings.TrimPrefix(cp.ID, "cp-"))
			require.NoError(t, err)
			stored[i] = true
			require.Equal(t, payloadFor(thread, i), cp.Payload, "checkpoint %s is damaged", cp.ID)
			tup, err := s.Get(ctx, thread, "", cp.ID)
			require.NoError(t, err)
			if acknowledged[i] {
				require.Len(t, tup.Writes, 3, "checkpoint %s lost acknowledged writes", cp.ID)
			} else {
				// Put in flight when a process was killed: its writes land
				// all or none.
				require.Contains(t, []int{0, 3}, len(tup.Writes), "checkpoint %s has partial writes", cp.ID)
			}
		}
		for i := range acknowledged {
			require.True(t, stored[i], "round %d: acknowledged checkpoint %s is missing", round, checkpointID(i))
		}
		require.LessOrEqual(t, len(stored), len(acknowledged)+round+1,
			"round %d: more checkpoints than acknowledged plus one in flight per killed process", round)

		latest, err := s.Get(ctx, thread, "", "")
		require.NoError(t, err)
		require.NoError(t, s.Close())
		next, err = strconv.Atoi(strings.TrimPrefix(latest.Checkpoint.ID, "cp-"))
		require.NoError(t, err)
		next++ // the next process resumes after the latest checkpoint
	}

	// A last process finishes cleanly from where the killed one stopped.
	out, err := childCommand(t, thread, path, next, 5).CombinedOutput()
	require.NoError(t, err, "%s", out)
	checkIntegrity(t, path)
}

func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var result string
	require.NoError(t, db.QueryRow(`PRAGMA integrity_check`).Scan(&result))
	require.Equal(t, "ok", result)
}

// TestProcessesShareOneFile runs writers in several processes at once on a
// new file: all of them create the schema concurrently and all their writes
// land.
func TestProcessesShareOneFile(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	const processes, count = 3, 30
	cmds := make([]*exec.Cmd, processes)
	outs := make([]*bytes.Buffer, processes)
	for i := range cmds {
		cmds[i] = childCommand(t, fmt.Sprintf("proc-%d", i), path, 0, count)
		outs[i] = new(bytes.Buffer)
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
		require.NoError(t, cmds[i].Start())
	}
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "process %d:\n%s", i, outs[i])
	}

	checkIntegrity(t, path)
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	for i := range processes {
		thread := fmt.Sprintf("proc-%d", i)
		cps, err := s.List(t.Context(), thread, "", state.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, cps, count, "thread %s", thread)
	}
}
