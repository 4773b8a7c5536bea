package sqlite_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/savertest"
	"github.com/trellis-go/trellis/state/sqlite"
)

func openTemp(t *testing.T, opts ...sqlite.Option) (*sqlite.Saver, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s, err := sqlite.Open(path, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, path
}

func TestConformance(t *testing.T) {
	savertest.Run(t, func(t *testing.T) state.Saver {
		s, _ := openTemp(t)
		return s
	})
}

func TestConformanceInMemory(t *testing.T) {
	savertest.Run(t, func(t *testing.T) state.Saver {
		s, err := sqlite.Open(":memory:")
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

func TestConformanceSynchronousFull(t *testing.T) {
	if testing.Short() {
		t.Skip("the suite again with a sync to disk per commit, seconds (skipped with -short; TestConformance runs it)")
	}
	savertest.Run(t, func(t *testing.T) state.Saver {
		s, _ := openTemp(t, sqlite.WithSynchronous(sqlite.SynchronousFull))
		return s
	})
}

func TestConformanceNew(t *testing.T) {
	savertest.Run(t, func(t *testing.T) state.Saver {
		db := openDB(t, filepath.Join(t.TempDir(), "owned.db"))
		s, err := sqlite.New(db)
		require.NoError(t, err)
		return s
	})
}

// openDB opens a database the test owns, set up as the package doc advises.
func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000&_journal_mode=WAL&_synchronous=NORMAL")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reopen.db")
	ctx := t.Context()
	cp := state.Checkpoint{
		ThreadID: "t", ID: "cp-1", Step: 3, Source: "loop", CreatedAt: time.Now(),
		Metadata: map[string]string{"k": "v"}, Payload: []byte{0, 1, 2},
	}

	s, err := sqlite.Open(path)
	require.NoError(t, err)
	require.NoError(t, s.Put(ctx, cp))
	require.NoError(t, s.PutWrites(ctx, "t", "", "cp-1", []state.PendingWrite{{TaskID: "a", Node: "n", Payload: []byte("w")}}))
	require.NoError(t, s.Close())

	s, err = sqlite.Open(path)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	tup, err := s.Get(ctx, "t", "", "")
	require.NoError(t, err)
	assert.Equal(t, "cp-1", tup.Checkpoint.ID)
	assert.Equal(t, map[string]string{"k": "v"}, tup.Checkpoint.Metadata)
	assert.Equal(t, []byte{0, 1, 2}, tup.Checkpoint.Payload)
	assert.WithinDuration(t, cp.CreatedAt, tup.Checkpoint.CreatedAt, time.Microsecond)
	require.Len(t, tup.Writes, 1)
	assert.Equal(t, "w", string(tup.Writes[0].Payload))

	assert.ErrorIs(t, s.Put(ctx, cp), state.ErrConflict, "the reopened file must still know cp-1")
}

func TestSchemaIsVersioned(t *testing.T) {
	_, path := openTemp(t)
	db := openDB(t, path)

	var version, rows int
	require.NoError(t, db.QueryRow(`SELECT MAX(version), COUNT(*) FROM trellis_schema`).Scan(&version, &rows))
	assert.Equal(t, sqlite.SchemaVersion, version)
	assert.Equal(t, sqlite.SchemaVersion, rows, "one row per applied migration")

	var mode string
	require.NoError(t, db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	assert.Equal(t, "wal", mode)

	// Opening again applies nothing twice.
	s2, err := sqlite.Open(path)
	require.NoError(t, err)
	require.NoError(t, s2.Close())
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM trellis_schema`).Scan(&rows))
	assert.Equal(t, sqlite.SchemaVersion, rows)
}

func TestNewerSchemaIsRefused(t *testing.T) {
	_, path := openTemp(t)
	db := openDB(t, path)
	_, err := db.Exec(`INSERT INTO trellis_schema (version, applied_at) VALUES (?, 0)`, sqlite.SchemaVersion+1)
	require.NoError(t, err)

	_, err = sqlite.Open(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), fmt.Sprintf("database schema version %d is newer than this store supports (%d)",
		sqlite.SchemaVersion+1, sqlite.SchemaVersion))

	// A store made with New reports it on first use.
	other, err := sqlite.New(db)
	require.NoError(t, err)
	_, err = other.Get(t.Context(), "t", "", "")
	require.Error(t, err)
	assert.NotErrorIs(t, err, state.ErrNotFound)
	assert.Contains(t, err.Error(), "is newer than this store supports")
}

func TestOpenRejectsBadArguments(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		path    string
		opts    []sqlite.Option
		message string
	}{
		{"empty path", "", nil, "empty path"},
		{"question mark in plain path", filepath.Join(dir, "a?b.db"), nil, `must not contain "?"`},
		{"negative busy timeout", filepath.Join(dir, "x.db"), []sqlite.Option{sqlite.WithBusyTimeout(-time.Second)}, "busy timeout must not be negative"},
		{"unknown synchronous mode", filepath.Join(dir, "x.db"), []sqlite.Option{sqlite.WithSynchronous(7)}, "unknown synchronous mode 7"},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "x.db"), nil, "no/such/dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sqlite.Open(tt.path, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), tt.message)
			assert.Contains(t, err.Error(), "sqlite: open")
		})
	}
}

func TestNew(t *testing.T) {
	_, err := sqlite.New(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nil *sql.DB")

	db := openDB(t, filepath.Join(t.TempDir(), "lazy.db"))
	s, err := sqlite.New(db)
	require.NoError(t, err)

	tables := func() int {
		var n int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'trellis%'`).Scan(&n))
		return n
	}
	assert.Equal(t, 0, tables(), "New must not touch the database")
	cps, err := s.List(t.Context(), "t", "", state.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, cps)
	assert.Equal(t, 3, tables(), "first use creates the schema table, checkpoints and writes")

	require.NoError(t, s.Close())
	require.NoError(t, db.Ping(), "Close must leave a caller's database open")
}

func TestClosedStoreReportsErrors(t *testing.T) {
	owned, err := sqlite.Open(filepath.Join(t.TempDir(), "closed.db"))
	require.NoError(t, err)
	db := openDB(t, filepath.Join(t.TempDir(), "callers.db"))
	borrowed, err := sqlite.New(db)
	require.NoError(t, err)
	require.NoError(t, borrowed.Put(t.Context(), state.Checkpoint{ThreadID: "t", ID: "cp"}))

	for name, s := range map[string]*sqlite.Saver{"Open": owned, "New": borrowed} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.Close())
			require.NoError(t, s.Close(), "closing twice is harmless")
			ctx := t.Context()
			errs := []error{
				s.Put(ctx, state.Checkpoint{ThreadID: "t", ID: "cp-2"}),
				s.PutWrites(ctx, "t", "", "cp", nil),
				s.DeleteThread(ctx, "t"),
				s.Prune(ctx, "t", 1),
			}
			_, err := s.Get(ctx, "t", "", "")
			errs = append(errs, err)
			_, err = s.List(ctx, "t", "", state.ListOptions{})
			errs = append(errs, err)
			for i, err := range errs {
				require.Error(t, err, "call %d", i)
				assert.NotErrorIs(t, err, state.ErrNotFound)
				assert.Contains(t, err.Error(), "store is closed")
			}
		})
	}
	require.NoError(t, db.Ping(), "the caller's database stays open")
}

func TestCloseWaitsForCallsInProgress(t *testing.T) {
	s, err := sqlite.Open(filepath.Join(t.TempDir(), "closing.db"))
	require.NoError(t, err)
	ctx := t.Context()
	var (
		g       errgroup.Group
		started sync.WaitGroup // each writer has stored something
	)
	for i := range 4 {
		started.Add(1)
		g.Go(func() error {
			for j := 0; ; j++ {
				err := s.Put(ctx, state.Checkpoint{ThreadID: "t", ID: fmt.Sprintf("%d-%d", i, j)})
				if j == 0 {
					started.Done()
				}
				if err != nil {
					if strings.Contains(err.Error(), "store is closed") {
						return nil
					}
					return err
				}
			}
		})
	}
	started.Wait()
	require.NoError(t, s.Close())
	require.NoError(t, g.Wait(), "a call racing Close must fail cleanly, never half-run")
}

func TestStoresShareOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	const stores, puts = 4, 25

	// Concurrent first use of a new file: each migration runs once.
	savers := make([]*sqlite.Saver, stores)
	var g errgroup.Group
	for i := range savers {
		g.Go(func() error {
			s, err := sqlite.Open(path, sqlite.WithBusyTimeout(10*time.Second))
			savers[i] = s
			return err
		})
	}
	require.NoError(t, g.Wait())
	for _, s := range savers {
		t.Cleanup(func() { require.NoError(t, s.Close()) })
	}

	ctx := t.Context()
	for i, s := range savers {
		g.Go(func() error {
			for j := range puts {
				id := fmt.Sprintf("s%d-%d", i, j)
				if err := s.Put(ctx, state.Checkpoint{ThreadID: "shared", ID: id}); err != nil {
					return err
				}
				if err := s.PutWrites(ctx, "shared", "", id, []state.PendingWrite{{TaskID: "t", Payload: []byte(id)}}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())

	for _, s := range savers {
		cps, err := s.List(ctx, "shared", "", state.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, cps, stores*puts, "every store sees every put")
	}
	db := openDB(t, path)
	var rows int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM trellis_schema`).Scan(&rows))
	assert.Equal(t, sqlite.SchemaVersion, rows)
}
