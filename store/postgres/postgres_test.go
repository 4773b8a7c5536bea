package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/postgres"
	"github.com/trellis-go/trellis/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs Postgres")
	}
	pool := pgtest.Pool(t)
	storetest.Run(t, func(t *testing.T, opts ...store.Option) store.Store {
		schema := pgtest.Schema(t, pool, "store_")
		s, err := postgres.New(t.Context(), pool, append(opts, store.WithSchema(schema))...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}
