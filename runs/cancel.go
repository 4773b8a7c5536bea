package runs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Cancel stops a run. A run still waiting for its turn on a busy thread is
// cancelled at once; an active one is stopped by the worker that holds it,
// on whichever machine, within moments (at once where the backend has
// notifications, else at its next lease renewal), and with CancelRollback
// its thread returns to the state it had before the run began. Cancel
// returns once the cancellation is recorded; Wait follows the run to its
// end. Cancelling a run that has ended does nothing.
func (m *Manager) Cancel(ctx context.Context, id string, action CancelAction) error {
	if action == "" {
		action = CancelInterrupt
	}
	if action != CancelInterrupt && action != CancelRollback {
		return fmt.Errorf("runs: %w: unknown cancel action %s", ErrInvalid, quoteCut(string(action)))
	}
	var thread string
	err := m.tx(ctx, func(tx *sql.Tx) error {
		var status string
		err := m.queryRow(ctx, tx, `SELECT thread_id, status FROM {runs} WHERE run_id = $1 AND owner = $2`, id, OwnerOf(ctx)).
			Scan(&thread, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("runs: run %s: %w", quoteCut(id), ErrNotFound)
		}
		if err != nil {
			return err
		}
		// Lock the thread first, as Start does, then the run.
		var active string
		if err := m.queryRow(ctx, tx, `SELECT active_run FROM {threads} WHERE thread_id = $1{lock}`, thread).Scan(&active); err != nil {
			return err
		}
		if active != id {
			return m.cancelQueued(ctx, tx, id)
		}
		return m.requestCancel(ctx, tx, id, action, "cancelled")
	})
	if err != nil {
		return fmt.Errorf("runs: cancel run %s: %w", quoteCut(id), err)
	}
	m.cancelLocal(id) // the transaction notified the other processes
	m.hub.signal(id)
	return nil
}

// cancelQueued cancels a run that is not its thread's active run: it is
// waiting for its turn, or it has ended.
func (m *Manager) cancelQueued(ctx context.Context, tx *sql.Tx, id string) error {
	res, err := m.exec(ctx, tx, `UPDATE {runs} SET status = 'cancelled', error = 'cancelled before it started',
		ended_at = {now}, updated_at = {now} WHERE run_id = $1 AND status = 'pending'`, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // it has ended
	}
	return m.endEvent(ctx, tx, id, StatusCancelled, "cancelled before it started")
}

// requestCancel asks the active run id to stop with action (a rollback
// wins over an interrupt). A run that no worker has taken yet and that
// has written nothing is cancelled at once, and its thread goes to its
// next run; otherwise the worker that takes or holds it stops it.
func (m *Manager) requestCancel(ctx context.Context, tx *sql.Tx, id string, action CancelAction, why string) error {
	var (
		status, thread string
		wrote          bool
		job            int64
	)
	err := m.queryRow(ctx, tx, `SELECT status, thread_id, wrote, job_id FROM {runs} WHERE run_id = $1{lock}`, id).
		Scan(&status, &thread, &wrote, &job)
	if err != nil {
		return err
	}
	if Status(status).Final() {
		return nil
	}
	if status == string(StatusPending) && !wrote {
		if _, err := m.exec(ctx, tx, `UPDATE {runs} SET status = 'cancelled', error = $2, ended_at = {now}, updated_at = {now}
			WHERE run_id = $1`, id, why); err != nil {
			return err
		}
		if err := m.queue.cancel(ctx, tx, job); err != nil {
			return err
		}
		if err := m.endEvent(ctx, tx, id, StatusCancelled, why); err != nil {
			return err
		}
		return m.advance(ctx, tx, thread, StatusCancelled)
	}
	_, err = m.exec(ctx, tx, `UPDATE {runs} SET cancel = CASE WHEN cancel = 'rollback' THEN cancel ELSE $2 END,
		updated_at = {now} WHERE run_id = $1`, id, string(action))
	if err != nil {
		return err
	}
	return m.notifyTx(ctx, tx, "c", id)
}

// endEvent records the last event of a run that ended without a worker.
func (m *Manager) endEvent(ctx context.Context, tx *sql.Tx, id string, status Status, why string) error {
	var seq int64
	if err := m.queryRow(ctx, tx, `SELECT COALESCE(MAX(seq), 0) FROM {events} WHERE run_id = $1`, id).Scan(&seq); err != nil {
		return err
	}
	end := Event{Seq: seq + 1, Run: id, Kind: KindRunEnd, Time: time.Now(), Status: status, Error: why}
	data, _ := json.Marshal(&end)
	if err := insertEvents(ctx, tx, m, id, []int64{end.Seq}, [][]byte{data}); err != nil {
		return err
	}
	return m.notifyTx(ctx, tx, "e", id)
}
