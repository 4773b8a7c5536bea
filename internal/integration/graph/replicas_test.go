package graph_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// Two replicas of a service — here two compiled graphs, each with its own
// handle on one store — may get a request for the same thread at once. The
// per-process guard (ErrThreadBusy) cannot see the other replica; the
// stores' conditional puts can: the run that finds the thread moved on
// fails, and stores nothing, instead of forking the thread silently.

type replicaState struct {
	Log []string
}

// replicaGraph is START → a → b → END; each node logs who ran it. When
// hold is not nil, a waits for it to close (after telling entered).
func replicaGraph(t *testing.T, saver state.Saver, who string, entered chan<- struct{}, hold <-chan struct{}) *graph.Graph[replicaState] {
	t.Helper()
	node := func(name string) graph.NodeFunc[replicaState] {
		return func(ctx context.Context, s replicaState) (replicaState, error) {
			if name == "a" && hold != nil {
				entered <- struct{}{}
				select {
				case <-hold:
				case <-ctx.Done():
					return s, ctx.Err()
				}
			}
			s.Log = append(s.Log, name+" by "+who)
			return s, nil
		}
	}
	return mustCompile(t, graph.New[replicaState]().
		AddNode("a", node("a")).AddNode("b", node("b")).
		AddEdge(graph.START, "a").AddEdge("a", "b"),
		graph.WithCheckpointer(saver))
}

// replicaStores names the kinds of store, each with a function that opens
// two handles on one new store of that kind (skipping the test, or failing
// it in CI, when the store's server is missing).
var replicaStores = []struct {
	kind string
	open func(t *testing.T) [2]state.Saver
}{
	{"memory", func(*testing.T) [2]state.Saver {
		shared := memory.New()
		return [2]state.Saver{shared, shared}
	}},
	{"sqlite", func(t *testing.T) [2]state.Saver {
		file := filepath.Join(t.TempDir(), "checkpoints.db")
		return [2]state.Saver{openCrashStore(t, "sqlite", file, ""), openCrashStore(t, "sqlite", file, "")}
	}},
	{"postgres", func(t *testing.T) [2]state.Saver {
		schema := fmt.Sprintf("replicas_%d", time.Now().UnixNano())
		first := openCrashStore(t, "postgres", postgresURL(), schema)
		t.Cleanup(func() { dropSchemaSQL(t, postgresURL(), schema) })
		return [2]state.Saver{first, openCrashStore(t, "postgres", postgresURL(), schema)}
	}},
}

func TestReplicasOnOneThread(t *testing.T) {
	if testing.Short() {
		t.Skip("runs replicas for seconds (skipped with -short)")
	}
	ctx := context.Background()
	for _, store := range replicaStores {
		for _, durability := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit} {
			t.Run(store.kind+"/"+durability.String(), func(t *testing.T) {
				pair := store.open(t)
				thread := "t-" + store.kind
				entered, hold := make(chan struct{}), make(chan struct{})
				first := replicaGraph(t, pair[0], "first", entered, hold)
				second := replicaGraph(t, pair[1], "second", nil, nil)

				type outcome struct {
					out replicaState
					err error
				}
				done := make(chan outcome, 1)
				go func() {
					out, err := first.Invoke(ctx, replicaState{Log: []string{"input first"}},
						graph.WithThread(thread), graph.WithDurability(durability))
					done <- outcome{out, err}
				}()
				<-entered // the first replica has read the thread and runs a
				if durability == graph.DurabilityAsync {
					// Its input checkpoint may still be on its way to the
					// store: the second request comes once it is there (had
					// it come before, the second run would be the one
					// refused).
					require.Eventually(t, func() bool {
						_, err := second.GetState(ctx, thread)
						return err == nil
					}, 10*time.Second, time.Millisecond)
				}

				out, err := second.Invoke(ctx, replicaState{Log: []string{"input second"}}, graph.WithThread(thread))
				require.NoError(t, err)
				want := []string{"input second", "a by second", "b by second"}
				require.Equal(t, want, out.Log)

				close(hold)
				res := <-done
				require.Error(t, res.err, "the first replica continued a thread that moved on")
				assert.ErrorIs(t, res.err, graph.ErrThreadBusy)
				assert.ErrorIs(t, res.err, state.ErrNotLatest)
				assert.Contains(t, res.err.Error(), fmt.Sprintf("thread %q", thread))

				// The thread holds the second replica's run, continued by
				// nothing of the first's after the first replica's read.
				snap, err := second.GetState(ctx, thread)
				require.NoError(t, err)
				assert.Equal(t, want, snap.State.Log)
				history, err := second.History(ctx, thread, 0)
				require.NoError(t, err)
				for _, h := range history {
					for _, line := range h.State.Log {
						assert.NotContains(t, []string{"a by first", "b by first"}, line,
							"checkpoint %s (%s) holds the refused run's work", h.CheckpointID, h.Source)
					}
				}

				// The thread goes on from the winner's checkpoint.
				first = replicaGraph(t, pair[0], "first", nil, nil)
				out, err = first.Invoke(ctx, replicaState{Log: []string{"input first"}}, graph.WithThread(thread))
				require.NoError(t, err)
				assert.Equal(t, []string{"input first", "a by first", "b by first"}, out.Log)
				snap, err = second.GetState(ctx, thread)
				require.NoError(t, err)
				assert.Equal(t, out.Log, snap.State.Log)
			})
		}
	}
}

// An UpdateState by another replica while a run goes on moves the thread
// on too.
func TestReplicaUpdateStateDuringRun(t *testing.T) {
	ctx := context.Background()
	for _, store := range replicaStores {
		t.Run(store.kind, func(t *testing.T) {
			pair := store.open(t)
			thread := "t-update-" + store.kind
			entered, hold := make(chan struct{}), make(chan struct{})
			first := replicaGraph(t, pair[0], "first", entered, hold)
			second := replicaGraph(t, pair[1], "second", nil, nil)

			done := make(chan error, 1)
			go func() {
				_, err := first.Invoke(ctx, replicaState{}, graph.WithThread(thread))
				done <- err
			}()
			<-entered
			_, err := second.UpdateState(ctx, thread, graph.END, func(s replicaState) replicaState {
				s.Log = append(s.Log, "edited")
				return s
			})
			require.NoError(t, err)
			close(hold)
			err = <-done
			require.ErrorIs(t, err, state.ErrNotLatest)
			assert.ErrorIs(t, err, graph.ErrThreadBusy)

			snap, err := second.GetState(ctx, thread)
			require.NoError(t, err)
			assert.Equal(t, []string{"edited"}, snap.State.Log)
			assert.Empty(t, snap.Next)
		})
	}
}
