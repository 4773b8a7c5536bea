package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// statements are prepared once per store (and by database/sql once per
// connection), so no call pays for parsing SQL.
type statements struct {
	put          *sql.Stmt
	putIfLatest  *sql.Stmt // put, if the thread's latest checkpoint is ?10 ('' for none)
	latestID     *sql.Stmt
	checkpointID *sql.Stmt // does a checkpoint exist?
	getLatest    *sql.Stmt
	getByID      *sql.Stmt
	writesOf     *sql.Stmt
	upsertWrite  *sql.Stmt
	list         *sql.Stmt
	listBefore   *sql.Stmt
	deleteWrites *sql.Stmt
	deleteThread *sql.Stmt
	pruneWrites  *sql.Stmt
	pruneThread  *sql.Stmt
}

const checkpointColumns = `seq, thread_id, namespace, id, parent_id, step, source, created_at, metadata, payload`

// prunable selects the checkpoints of thread ?1 beyond the newest ?2 of
// each namespace.
const prunable = `SELECT seq FROM (
	SELECT seq, ROW_NUMBER() OVER (PARTITION BY namespace ORDER BY seq DESC) AS age
	FROM trellis_checkpoints WHERE thread_id = ?1
) WHERE age > ?2`

func (st *statements) prepare(ctx context.Context, db *sql.DB) error {
	queries := []struct {
		stmt  **sql.Stmt
		query string
	}{
		{&st.put, `INSERT INTO trellis_checkpoints
			(thread_id, namespace, id, parent_id, step, source, created_at, metadata, payload)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (thread_id, namespace, id) DO NOTHING`},
		// One statement checks and inserts, so that no other writer comes
		// in between; ON CONFLICT needs the WHERE clause before it.
		{&st.putIfLatest, `INSERT INTO trellis_checkpoints
			(thread_id, namespace, id, parent_id, step, source, created_at, metadata, payload)
			SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
			WHERE COALESCE((SELECT id FROM trellis_checkpoints
				WHERE thread_id = ?1 AND namespace = ?2 ORDER BY seq DESC LIMIT 1), '') = ?10
			ON CONFLICT (thread_id, namespace, id) DO NOTHING`},
		{&st.latestID, `SELECT COALESCE((SELECT id FROM trellis_checkpoints
			WHERE thread_id = ? AND namespace = ? ORDER BY seq DESC LIMIT 1), '')`},
		{&st.checkpointID, `SELECT seq FROM trellis_checkpoints WHERE thread_id = ? AND namespace = ? AND id = ?`},
		{&st.getLatest, `SELECT ` + checkpointColumns + ` FROM trellis_checkpoints
			WHERE thread_id = ? AND namespace = ? ORDER BY seq DESC LIMIT 1`},
		{&st.getByID, `SELECT ` + checkpointColumns + ` FROM trellis_checkpoints
			WHERE thread_id = ? AND namespace = ? AND id = ?`},
		{&st.writesOf, `SELECT task_id, node, payload FROM trellis_writes WHERE checkpoint_seq = ? ORDER BY seq`},
		// The write is the transaction's first statement, so even a deferred
		// transaction takes the write lock before it reads anything. WHERE
		// true keeps the parser from reading ON CONFLICT as a join clause.
		{&st.upsertWrite, `INSERT INTO trellis_writes (checkpoint_seq, task_id, node, payload)
			SELECT seq, ?4, ?5, ?6 FROM trellis_checkpoints WHERE thread_id = ?1 AND namespace = ?2 AND id = ?3 AND true
			ON CONFLICT (checkpoint_seq, task_id) DO UPDATE SET node = excluded.node, payload = excluded.payload`},
		{&st.list, `SELECT ` + checkpointColumns + ` FROM trellis_checkpoints
			WHERE thread_id = ? AND namespace = ? ORDER BY seq DESC LIMIT ?`},
		{&st.listBefore, `SELECT ` + checkpointColumns + ` FROM trellis_checkpoints
			WHERE thread_id = ?1 AND namespace = ?2
			AND seq < (SELECT seq FROM trellis_checkpoints WHERE thread_id = ?1 AND namespace = ?2 AND id = ?3)
			ORDER BY seq DESC LIMIT ?4`},
		{&st.deleteWrites, `DELETE FROM trellis_writes WHERE checkpoint_seq IN
			(SELECT seq FROM trellis_checkpoints WHERE thread_id = ?)`},
		{&st.deleteThread, `DELETE FROM trellis_checkpoints WHERE thread_id = ?`},
		{&st.pruneWrites, `DELETE FROM trellis_writes WHERE checkpoint_seq IN (` + prunable + `)`},
		{&st.pruneThread, `DELETE FROM trellis_checkpoints WHERE seq IN (` + prunable + `)`},
	}
	for _, q := range queries {
		stmt, err := db.PrepareContext(ctx, q.query)
		if err != nil {
			return errors.Join(fmt.Errorf("prepare statement: %w", err), st.close())
		}
		*q.stmt = stmt
	}
	return nil
}

func (st *statements) close() error {
	var errs []error
	for _, stmt := range []*sql.Stmt{
		st.put, st.putIfLatest, st.latestID, st.checkpointID, st.getLatest, st.getByID, st.writesOf, st.upsertWrite,
		st.list, st.listBefore, st.deleteWrites, st.deleteThread, st.pruneWrites, st.pruneThread,
	} {
		if stmt != nil {
			errs = append(errs, stmt.Close())
		}
	}
	*st = statements{}
	return errors.Join(errs...)
}
