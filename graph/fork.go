package graph

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/store"
)

// Store returns the store the graph was compiled with (WithStore), nil for
// a graph without one.
func (g *Graph[S]) Store() store.Store { return g.store }

// Checkpointer returns the saver the graph was compiled with
// (WithCheckpointer), nil for a graph without one.
func (g *Graph[S]) Checkpointer() state.Saver { return g.saver }

// Fork makes a copy of one of a thread's checkpoints the thread's latest
// (Source "fork"), without running anything: the thread is back at that
// checkpoint's state with its nodes due. What its superstep's tasks saved
// is not copied: they all run again when the thread resumes, and one that
// had paused for an answer asks for it again then (under a new interrupt
// ID). The checkpoints written after it stay in the history. Fork returns the copy's ID. Like a run, it fails with
// ErrThreadBusy while a run of g on the thread is in progress, and it
// stores nothing if another writer moved the thread on while it worked
// (state.ConditionalSaver).
func (g *Graph[S]) Fork(ctx context.Context, thread, checkpointID string) (string, error) {
	if checkpointID == "" {
		return "", fmt.Errorf("graph %q: Fork: no checkpoint named", g.name)
	}
	c, err := g.checkpointer(thread)
	if err != nil {
		return "", err
	}
	if _, busy := g.running.LoadOrStore(thread, struct{}{}); busy {
		return "", fmt.Errorf("graph %q: thread %q: %w", g.name, thread, ErrThreadBusy)
	}
	defer g.running.Delete(thread)
	if _, err := c.followLatest(ctx); err != nil {
		return "", err
	}
	tup, snap, _, err := c.load(ctx, checkpointID)
	if err != nil {
		return "", err
	}
	if err := g.checkJoins(thread, tup.Checkpoint.ID, snap.Joins); err != nil {
		return "", err
	}
	id := newID()
	fork := *snap
	fork.Branch = id
	fork.Tasks = make([]taskRef[S], len(snap.Tasks))
	for i, t := range snap.Tasks {
		t.ID = checkpointTaskID(id, i)
		fork.Tasks[i] = t
	}
	if err := c.put(ctx, id, tup.Checkpoint.Step, "fork", &fork); err != nil {
		return "", err
	}
	return id, c.flush(ctx)
}
