package runs

import (
	"context"
	"encoding/json"
	"iter"
)

// Client is the part of a Manager that starts runs, follows them and
// answers them: what a program needs to drive runs it does not execute
// itself. *Manager implements it on River; package
// github.com/trellis-go/trellis/temporal/temporalruns implements it over a
// Temporal client, so that code written against Client runs its graphs on
// either. Where the other implementation cannot do what a Manager does, it
// says so with an error rather than doing something else (see its
// documentation).
type Client interface {
	// Start accepts a run, or, with Request.Resume, answers the interrupts
	// its thread waits for (see Manager.Start).
	Start(ctx context.Context, req Request) (Run, error)
	// Get returns a run.
	Get(ctx context.Context, id string) (Run, error)
	// Wait waits for a run to end (or to be interrupted) and returns it.
	Wait(ctx context.Context, id string) (Run, error)
	// Output returns the final state of a run that succeeded, as JSON.
	Output(ctx context.Context, id string) (json.RawMessage, error)
	// Cancel stops a run.
	Cancel(ctx context.Context, id string, action CancelAction) error
	// Stream yields a run's events after the one numbered after, until
	// its last (KindRunEnd).
	Stream(ctx context.Context, id string, after int64) iter.Seq2[Event, error]
	// ThreadState returns a thread's state at its latest checkpoint, or
	// at checkpoint.
	ThreadState(ctx context.Context, graphName, thread, checkpoint string) (ThreadState, error)
}

var _ Client = (*Manager)(nil)
