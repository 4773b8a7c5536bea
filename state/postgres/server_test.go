package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// defaultURL is the local test server; TRELLIS_POSTGRES_URL overrides it.
const defaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func serverURL() string {
	if u := os.Getenv("TRELLIS_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultURL
}

// unreachable skips the test, or fails it when CI=true, since CI must run
// against a real server.
func unreachable(tb testing.TB, err error) {
	tb.Helper()
	msg := "postgres server unreachable at " + redacted(serverURL()) + ": " + err.Error() +
		" (start one, or set TRELLIS_POSTGRES_URL)"
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

func redacted(connString string) string {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return "(unparsable TRELLIS_POSTGRES_URL)"
	}
	return cfg.User + "@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
}

// testPool connects to the server, or skips (fails under CI) when there is
// none. The pool is closed when the test ends.
func testPool(tb testing.TB, tune ...func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(serverURL())
	require.NoError(tb, err, "TRELLIS_POSTGRES_URL")
	cfg.MaxConns = 8
	for _, f := range tune {
		f(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		unreachable(tb, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		unreachable(tb, err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// testSchema returns a schema name unique to this run and drops the schema,
// with everything in it, when the test ends.
func testSchema(tb testing.TB, pool *pgxpool.Pool) string {
	tb.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "trellis_test_" + hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`)
		require.NoError(tb, err, "drop test schema %s", name)
	})
	return name
}
