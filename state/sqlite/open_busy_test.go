package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOpenWaitsForAFileBeingCreatedElsewhere opens a brand-new file while
// another connection holds a write lock on it, as a second process does
// when several start together on a file none has created yet. Switching
// the file to WAL then meets a lock SQLite does not wait for by itself;
// Open waits for it, within the busy timeout.
func TestOpenWaitsForAFileBeingCreatedElsewhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	other, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer other.Close()
	conn, err := other.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.NoError(t, err)
	_, err = conn.ExecContext(t.Context(), "CREATE TABLE other_app (x INTEGER)")
	require.NoError(t, err)

	opened := make(chan error, 1)
	var s *Saver
	go func() {
		var err error
		s, err = Open(path, WithBusyTimeout(time.Minute))
		opened <- err
	}()
	select {
	case err := <-opened:
		t.Fatalf("Open returned while the other connection held its lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	_, err = conn.ExecContext(t.Context(), "COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-opened)
	require.NoError(t, s.Close())
}

// TestOpenContextStopsWaitingWhenItsContextEnds opens a file another
// connection holds locked, with a busy timeout far longer than the test:
// OpenContext gives up when its context ends, with the context's error.
func TestOpenContextStopsWaitingWhenItsContextEnds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	other, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer other.Close()
	conn, err := other.Conn(t.Context())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(t.Context(), "BEGIN IMMEDIATE")
	require.NoError(t, err)
	_, err = conn.ExecContext(t.Context(), "CREATE TABLE other_app (x INTEGER)")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	s, err := OpenContext(ctx, path, WithBusyTimeout(time.Hour))
	if err == nil {
		_ = s.Close()
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), time.Minute, "OpenContext waited past its context")
	_, err = conn.ExecContext(t.Context(), "ROLLBACK")
	require.NoError(t, err)
}
