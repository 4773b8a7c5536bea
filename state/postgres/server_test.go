package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-go/trellis/internal/pgtest"
)

// serverURL is the test server's connection string (see package pgtest).
func serverURL() string { return pgtest.URL() }

// unreachable skips the test, or fails it when CI=true.
func unreachable(tb testing.TB, err error) {
	tb.Helper()
	pgtest.Unreachable(tb, err)
}

// testPool connects to the server, or skips (fails under CI) when there is
// none. The pool is closed when the test ends.
func testPool(tb testing.TB, tune ...func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	return pgtest.Pool(tb, tune...)
}

// testSchema returns a schema name unique to this run and drops the schema,
// with everything in it, when the test ends.
func testSchema(tb testing.TB, pool *pgxpool.Pool) string {
	tb.Helper()
	return pgtest.Schema(tb, pool, "trellis_test_")
}
