package savertest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/state/savertest"
)

func TestMemorySaverConforms(t *testing.T) {
	savertest.Run(t, func(t *testing.T) state.Saver { return memory.New() })
}

// mutantEnv names the mutant TestMutant runs the suite against.
const mutantEnv = "TRELLIS_SAVERTEST_MUTANT"

// mutants are savers that each break one rule of the contract, with the
// subtest of the suite that must catch it.
var mutants = []struct {
	name    string
	catches string
	wrap    func(state.Saver) state.Saver
}{
	{"duplicate put accepted", "Put/DuplicateIsConflictAndKeepsOriginal", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, put: func(ctx context.Context, cp state.Checkpoint) error {
			if err := s.Put(ctx, cp); !errors.Is(err, state.ErrConflict) {
				return err
			}
			return nil
		}}
	}},
	{"conditional put ignores the condition", "PutIfLatest/StoresOnlyAfterTheExpectedLatest", func(s state.Saver) state.Saver {
		return &conditionalMutant{mutant: mutant{Saver: s}, putIfLatest: func(ctx context.Context, cp state.Checkpoint, _ string) error {
			return s.Put(ctx, cp)
		}}
	}},
	{"conditional put checks, then puts", "PutIfLatest/ConcurrentWritersOneWins", func(s state.Saver) state.Saver {
		var mu sync.Mutex
		passed := map[string]int{} // writers that passed the check, by the latest ID they named
		return &conditionalMutant{mutant: mutant{Saver: s}, putIfLatest: func(ctx context.Context, cp state.Checkpoint, latest string) error {
			found := ""
			if tup, err := s.Get(ctx, cp.ThreadID, cp.Namespace, ""); err == nil {
				found = tup.Checkpoint.ID
			}
			if found != latest {
				return state.NotLatest(found, latest)
			}
			if cp.ThreadID != "race" { // the thread of the suite's concurrent writers
				return s.Put(ctx, cp)
			}
			// Another writer checks meanwhile: wait, for a while at most,
			// until a second one has passed the same check.
			mu.Lock()
			passed[latest]++
			mu.Unlock()
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
				mu.Lock()
				n := passed[latest]
				mu.Unlock()
				if n >= 2 {
					break
				}
			}
			return s.Put(ctx, cp)
		}}
	}},
	{"latest by greatest ID", "Get/LatestIsLastPut", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, get: func(ctx context.Context, thread, ns, id string) (state.Tuple, error) {
			if id == "" {
				cps, _ := s.List(ctx, thread, ns, state.ListOptions{})
				for _, cp := range cps {
					id = max(id, cp.ID)
				}
			}
			return s.Get(ctx, thread, ns, id)
		}}
	}},
	{"unnamed not-found error", "Get/UnknownCheckpointIsNotFound", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, get: func(ctx context.Context, thread, ns, id string) (state.Tuple, error) {
			tup, err := s.Get(ctx, thread, ns, id)
			if errors.Is(err, state.ErrNotFound) {
				err = state.ErrNotFound
			}
			return tup, err
		}}
	}},
	{"list oldest first", "List/NewestFirstWithoutWrites", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, list: func(ctx context.Context, thread, ns string, o state.ListOptions) ([]state.Checkpoint, error) {
			cps, err := s.List(ctx, thread, ns, o)
			slices.Reverse(cps)
			return cps, err
		}}
	}},
	{"list ignores Before", "List/LimitAndBefore", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, list: func(ctx context.Context, thread, ns string, o state.ListOptions) ([]state.Checkpoint, error) {
			o.Before = ""
			return s.List(ctx, thread, ns, o)
		}}
	}},
	{"writes sorted by task ID", "PutWrites/UpsertByTaskIDKeepsFirstOrder", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, get: func(ctx context.Context, thread, ns, id string) (state.Tuple, error) {
			tup, err := s.Get(ctx, thread, ns, id)
			slices.SortFunc(tup.Writes, func(a, b state.PendingWrite) int { return strings.Compare(a.TaskID, b.TaskID) })
			return tup, err
		}}
	}},
	{"writes to unknown checkpoints ignored", "PutWrites/UnknownCheckpointIsNotFound", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, putWrites: func(ctx context.Context, thread, ns, id string, ws []state.PendingWrite) error {
			if err := s.PutWrites(ctx, thread, ns, id, ws); !errors.Is(err, state.ErrNotFound) {
				return err
			}
			return nil
		}}
	}},
	{"writes stored one at a time", "PutWrites/InvalidBatchStoresNothing", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, putWrites: func(ctx context.Context, thread, ns, id string, ws []state.PendingWrite) error {
			for _, w := range ws {
				if err := s.PutWrites(ctx, thread, ns, id, []state.PendingWrite{w}); err != nil {
					return err
				}
			}
			return s.PutWrites(ctx, thread, ns, id, nil)
		}}
	}},
	{"delete does nothing", "DeleteThread/RemovesOnlyThatThread", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, deleteThread: func(context.Context, string) error { return nil }}
	}},
	{"prune keeps one extra", "Prune/KeepsNewestPerNamespace", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, prune: func(ctx context.Context, thread string, keep int) error {
			return s.Prune(ctx, thread, keep+1)
		}}
	}},
	{"prune accepts keep 0 as a no-op", "Prune/RejectsKeepBelowOne", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, prune: func(ctx context.Context, thread string, keep int) error {
			if keep < 1 {
				return nil
			}
			return s.Prune(ctx, thread, keep)
		}}
	}},
	{"returned data shared between calls", "Isolation/CallerCannotMutateStoredData", func(s state.Saver) state.Saver {
		var mu sync.Mutex
		cache := map[string]state.Tuple{}
		return &mutant{Saver: s, get: func(ctx context.Context, thread, ns, id string) (state.Tuple, error) {
			mu.Lock()
			defer mu.Unlock()
			if tup, ok := cache[thread+"\x00"+ns]; ok {
				return tup, nil
			}
			tup, err := s.Get(ctx, thread, ns, id)
			if err == nil {
				cache[thread+"\x00"+ns] = tup
			}
			return tup, err
		}}
	}},
	{"context ignored", "Context/CanceledContextIsReported", func(s state.Saver) state.Saver {
		return &mutant{Saver: s, put: func(_ context.Context, cp state.Checkpoint) error {
			return s.Put(context.Background(), cp)
		}}
	}},
}

// mutant overrides some of a Saver's methods.
type mutant struct {
	state.Saver
	put          func(context.Context, state.Checkpoint) error
	putWrites    func(context.Context, string, string, string, []state.PendingWrite) error
	get          func(context.Context, string, string, string) (state.Tuple, error)
	list         func(context.Context, string, string, state.ListOptions) ([]state.Checkpoint, error)
	deleteThread func(context.Context, string) error
	prune        func(context.Context, string, int) error
}

// conditionalMutant is a mutant that is a state.ConditionalSaver.
type conditionalMutant struct {
	mutant
	putIfLatest func(context.Context, state.Checkpoint, string) error
}

func (m *conditionalMutant) PutIfLatest(ctx context.Context, cp state.Checkpoint, latest string) error {
	return m.putIfLatest(ctx, cp, latest)
}

func (m *mutant) Put(ctx context.Context, cp state.Checkpoint) error {
	if m.put != nil {
		return m.put(ctx, cp)
	}
	return m.Saver.Put(ctx, cp)
}

func (m *mutant) PutWrites(ctx context.Context, thread, ns, id string, ws []state.PendingWrite) error {
	if m.putWrites != nil {
		return m.putWrites(ctx, thread, ns, id, ws)
	}
	return m.Saver.PutWrites(ctx, thread, ns, id, ws)
}

func (m *mutant) Get(ctx context.Context, thread, ns, id string) (state.Tuple, error) {
	if m.get != nil {
		return m.get(ctx, thread, ns, id)
	}
	return m.Saver.Get(ctx, thread, ns, id)
}

func (m *mutant) List(ctx context.Context, thread, ns string, o state.ListOptions) ([]state.Checkpoint, error) {
	if m.list != nil {
		return m.list(ctx, thread, ns, o)
	}
	return m.Saver.List(ctx, thread, ns, o)
}

func (m *mutant) DeleteThread(ctx context.Context, thread string) error {
	if m.deleteThread != nil {
		return m.deleteThread(ctx, thread)
	}
	return m.Saver.DeleteThread(ctx, thread)
}

func (m *mutant) Prune(ctx context.Context, thread string, keep int) error {
	if m.prune != nil {
		return m.prune(ctx, thread, keep)
	}
	return m.Saver.Prune(ctx, thread, keep)
}

// TestMutant runs the suite against the mutant named by the environment; it
// is a child process of TestSuiteCatchesBrokenSavers and skips otherwise.
func TestMutant(t *testing.T) {
	name := os.Getenv(mutantEnv)
	if name == "" {
		t.Skip("runs only as a child of TestSuiteCatchesBrokenSavers")
	}
	for _, m := range mutants {
		if m.name == name {
			savertest.Run(t, func(t *testing.T) state.Saver { return m.wrap(memory.New()) })
			return
		}
	}
	t.Fatalf("unknown mutant %q", name)
}

// TestSuiteCatchesBrokenSavers runs the suite against savers that each break
// one rule, in child processes (a failing suite fails its *testing.T), and
// checks that the subtest for that rule fails.
func TestSuiteCatchesBrokenSavers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite in a process per broken saver, seconds (skipped with -short)")
	}
	if os.Getenv(mutantEnv) != "" {
		t.Skip("already a child process")
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMutant$", "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), mutantEnv+"="+m.name)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the suite passed a broken saver; output:\n%s", out)
			assert.Contains(t, string(out), "--- FAIL: TestMutant/"+m.catches+" ",
				"subtest %s did not catch the mutant; output:\n%s", m.catches, out)
		})
	}
}
