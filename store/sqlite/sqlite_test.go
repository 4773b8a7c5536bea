package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/sqlite"
	"github.com/trellis-go/trellis/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts ...store.Option) store.Store {
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "store.db"), opts...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts ...store.Option) store.Store {
		s, err := sqlite.Open(":memory:", opts...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

func TestItemsSurviveReopening(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	_, err = s.Put(t.Context(), []string{"users", "u1"}, "pref", []byte(`{"tea":"green"}`))
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	it, err := s.Get(t.Context(), []string{"users", "u1"}, "pref")
	require.NoError(t, err)
	assert.JSONEq(t, `{"tea":"green"}`, string(it.Value))
	assert.Equal(t, int64(1), it.Version)
}

func TestOpenRejectsBadPaths(t *testing.T) {
	_, err := sqlite.Open("")
	assert.Error(t, err)
	_, err = sqlite.Open("a.db?x=1")
	assert.Error(t, err)
}

func TestANewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `INSERT INTO trellis_store_migrations (version, applied_at) VALUES (99, 0)`)
	require.NoError(t, err)

	_, err = sqlite.New(t.Context(), db)
	require.ErrorContains(t, err, "newer than this program supports")
	require.NoError(t, db.Close())
}

func TestStoresWithOtherTablePrefixesShareAFileApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	a, err := sqlite.Open(path)
	require.NoError(t, err)
	defer a.Close()
	b, err := sqlite.Open(path, store.WithTablePrefix("other_"))
	require.NoError(t, err)
	defer b.Close()
	_, err = a.Put(t.Context(), []string{"n"}, "k", []byte(`{}`))
	require.NoError(t, err)
	_, err = b.Get(t.Context(), []string{"n"}, "k")
	assert.ErrorIs(t, err, store.ErrNotFound)
	_, err = sqlite.Open(path, store.WithTablePrefix("bad-prefix"))
	assert.Error(t, err)
}

// TestOpenContextFailsWithAnEndedContext: the tables are created under
// OpenContext's context, so an ended one fails the opening with its error
// and leaves nothing open.
func TestOpenContextFailsWithAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := sqlite.OpenContext(ctx, filepath.Join(t.TempDir(), "store.db"))
	require.ErrorIs(t, err, context.Canceled)
}
