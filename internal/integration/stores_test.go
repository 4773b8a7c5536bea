package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/state/postgres"
	"github.com/trellis-go/trellis/state/sqlite"
)

// defaultPostgresURL is the local test server; TRELLIS_POSTGRES_URL
// overrides it.
const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func postgresURL() string {
	if u := os.Getenv("TRELLIS_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultPostgresURL
}

// postgresUnreachable skips the test, or fails it when CI=true, since CI
// must run against a real server.
func postgresUnreachable(tb testing.TB, err error) {
	tb.Helper()
	where := "(unparsable TRELLIS_POSTGRES_URL)"
	if cfg, perr := pgx.ParseConfig(postgresURL()); perr == nil {
		where = cfg.User + "@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
	}
	msg := "postgres server unreachable at " + where + ": " + err.Error() + " (start one, or set TRELLIS_POSTGRES_URL)"
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// postgresPool connects to the test server, or skips (fails under CI).
func postgresPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(postgresURL())
	require.NoError(tb, err, "TRELLIS_POSTGRES_URL")
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		postgresUnreachable(tb, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		postgresUnreachable(tb, err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// postgresSaver returns a store in a schema of its own, dropped when the
// test ends.
func postgresSaver(tb testing.TB) state.Saver {
	tb.Helper()
	pool := postgresPool(tb)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "trellis_integration_" + hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		require.NoError(tb, err, "drop test schema %s", schema)
	})
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
