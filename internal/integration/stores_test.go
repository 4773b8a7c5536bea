package integration

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/state/postgres"
	"github.com/trellis-go/trellis/state/sqlite"
)

// postgresSaver returns a store in a schema of its own, dropped when the
// test ends; it skips the test (fails it under CI) without a server.
func postgresSaver(tb testing.TB) state.Saver {
	tb.Helper()
	pool := pgtest.Pool(tb)
	schema := pgtest.Schema(tb, pool, "trellis_integration_")
	s, err := postgres.New(context.Background(), pool, postgres.WithSchema(schema))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// sqliteSaver returns a store over a file in the test's directory.
func sqliteSaver(tb testing.TB) state.Saver {
	tb.Helper()
	s, err := sqlite.Open(filepath.Join(tb.TempDir(), "checkpoints.db"))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// store is a way to open a checkpoint store for a test.
type store struct {
	name string
	open func(testing.TB) state.Saver
}

// stores are the three checkpoint stores that ship with Trellis.
var stores = []store{
	{"memory", func(testing.TB) state.Saver { return memory.New() }},
	{"sqlite", sqliteSaver},
	{"postgres", postgresSaver},
}

// eachStore runs f once per store, as subtests.
func eachStore(t *testing.T, f func(t *testing.T, saver state.Saver)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { f(t, s.open(t)) })
	}
}
