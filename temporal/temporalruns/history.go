package temporalruns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/temporal"
)

// ThreadState returns the thread's state at its latest checkpoint, or at
// checkpoint: the checkpoints its workflow holds (the query
// temporal.QueryHistory, reaching back to the runs it continued as new).
// Interrupts are those the run waits for, or waited for, at that
// checkpoint. A checkpoint the workflow does not hold matches
// runs.ErrNotFound.
func (m *Manager) ThreadState(ctx context.Context, graphName, thread, checkpoint string) (runs.ThreadState, error) {
	f := temporal.HistoryFilter{Limit: 1, ID: checkpoint}
	cps, err := temporal.History[json.RawMessage](ctx, m.c, thread, f)
	if err != nil {
		return runs.ThreadState{}, historyError(thread, checkpoint, err)
	}
	if len(cps) == 0 {
		return runs.ThreadState{}, fmt.Errorf("temporalruns: thread %q: checkpoint %q: %w", thread, checkpoint, runs.ErrNotFound)
	}
	return threadState(thread, cps[0]), nil
}

// History returns the thread's checkpoints, newest first, narrowed by q, as
// runs.Manager.History does (it is not part of runs.Client): one for the
// run's input and one after each superstep, read from the workflow's
// memory (temporal.QueryHistory) and from the runs it continued as new.
// A thread started by Fork begins its history with the checkpoint it was
// forked from (Source "fork"); the ones before are the other thread's.
func (m *Manager) History(ctx context.Context, graphName, thread string, q runs.HistoryQuery) ([]runs.ThreadState, error) {
	switch {
	case q.Limit < 0 || q.Limit > runs.MaxLimit:
		return nil, fmt.Errorf("temporalruns: %w: limit %d is not in 0..%d", runs.ErrInvalid, q.Limit, runs.MaxLimit)
	case q.Limit == 0:
		q.Limit = runs.DefaultLimit
	}
	f := temporal.HistoryFilter{Before: q.Before, Limit: q.Limit}
	if q.Source != "" || q.Step != nil {
		f.Limit = 0 // filtered here
	}
	cps, err := temporal.History[json.RawMessage](ctx, m.c, thread, f)
	if err != nil {
		return nil, historyError(thread, q.Before, err)
	}
	out := []runs.ThreadState{}
	for _, c := range cps {
		if q.Source != "" && c.Source != q.Source || q.Step != nil && c.Step != *q.Step {
			continue
		}
		out = append(out, threadState(thread, c))
		if len(out) == q.Limit {
			break
		}
	}
	return out, nil
}

func historyError(thread, checkpoint string, err error) error {
	if errors.Is(err, temporal.ErrNoCheckpoint) {
		return fmt.Errorf("temporalruns: thread %q: checkpoint %q: %w (%w)", thread, checkpoint, runs.ErrNotFound, err)
	}
	return fmt.Errorf("temporalruns: history of thread %q: %w", thread, notFound(err))
}

func threadState(thread string, c temporal.Checkpoint[json.RawMessage]) runs.ThreadState {
	next := c.Next
	if next == nil {
		next = []string{}
	}
	return runs.ThreadState{
		Values: c.State, Next: next, Interrupts: c.Interrupts, Thread: thread,
		CheckpointID: c.ID, ParentID: c.Parent, Step: c.Step, Source: c.Source, CreatedAt: c.Time,
	}
}

// Fork starts a run on a new thread, newThread (a new UUID when empty),
// that goes on from the checkpoint of thread (temporal.Fork): its state
// and the nodes due there. It is the counterpart of runs.Manager.ForkThread
// (not part of runs.Client), which puts the same thread back at the
// checkpoint instead: a workflow ID holds one run here. thread's run is
// not changed. graphName, when empty, is thread's; the new run has
// thread's metadata and stream modes.
func (m *Manager) Fork(ctx context.Context, graphName, thread, checkpoint, newThread string) (runs.Run, error) {
	if checkpoint == "" {
		return runs.Run{}, fmt.Errorf("temporalruns: %w: a fork names its checkpoint", runs.ErrInvalid)
	}
	src, err := m.Get(ctx, thread)
	if err != nil {
		return runs.Run{}, err
	}
	if graphName == "" {
		graphName = src.Graph
	}
	memo := map[string]any{memoModes: uint16(src.Modes)}
	if len(src.Metadata) > 0 {
		memo[memoMetadata] = src.Metadata
	}
	if newThread == "" {
		newThread = uuid.NewString()
	}
	run, err := temporal.Fork[json.RawMessage](ctx, m.c, thread, checkpoint, temporal.ForkOptions[json.RawMessage]{
		Workflow: graphName,
		Start: client.StartWorkflowOptions{
			ID: newThread, TaskQueue: m.queue,
			WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
			Memo:                     memo,
		},
	})
	if err != nil {
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &started) {
			return runs.Run{}, fmt.Errorf("temporalruns: fork to thread %q: %w", newThread, runs.ErrThreadBusy)
		}
		return runs.Run{}, historyError(thread, checkpoint, err)
	}
	now := time.Now().UTC()
	return runs.Run{
		ID: run.GetID(), Thread: run.GetID(), Graph: graphName, Status: runs.StatusPending,
		Strategy: runs.StrategyReject, Metadata: src.Metadata, Modes: src.Modes, CreatedAt: now, StartAt: now, UpdatedAt: now,
	}, nil
}
