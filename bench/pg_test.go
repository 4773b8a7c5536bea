package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The PostgreSQL server of the benchmarks is the test server of the root
// module's internal/pgtest (which this module cannot import): 127.0.0.1:5432,
// database test, or the one TRELLIS_POSTGRES_URL names.
const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func postgresURL() string {
	if u := os.Getenv("TRELLIS_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultPostgresURL
}

// pgUnreachable skips tb because the server could not be reached, or fails
// it under CI, which must run against a real server.
func pgUnreachable(tb testing.TB, err error) {
	tb.Helper()
	msg := fmt.Sprintf("postgres unreachable (%v): start one, or set TRELLIS_POSTGRES_URL", err)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

func pgConnect(tb testing.TB, dsn string) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		pgUnreachable(tb, err)
	}
	return conn
}

// pgSchema names a schema of its own for tb, dropped with everything in it
// when tb ends.
func pgSchema(tb testing.TB, dsn, prefix string) string {
	tb.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	conn := pgConnect(tb, dsn)
	_ = conn.Close(context.Background())
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Logf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			tb.Logf("dropping schema %s: %v", schema, err)
		}
	})
	return schema
}

// withParam returns the URL dsn with a query parameter set.
func withParam(tb testing.TB, dsn, name, value string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		tb.Fatalf("TRELLIS_POSTGRES_URL must be a URL for the benchmarks (%v)", err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// commitsDatabase is the database in which commits are counted: one of
// its own, created on first use, since pg_stat_database counts the
// transactions of a whole database and other programs use the test one.
const commitsDatabase = "trellis_bench_commits"

// commitsURL returns the URL of commitsDatabase on the test server,
// creating the database if needed.
func commitsURL(tb testing.TB) string {
	tb.Helper()
	conn := pgConnect(tb, postgresURL())
	defer conn.Close(context.Background())
	ctx := context.Background()
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, commitsDatabase).Scan(&exists); err != nil {
		tb.Fatal(err)
	}
	if !exists {
		_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{commitsDatabase}.Sanitize())
		var pe *pgconn.PgError
		if err != nil && !(errors.As(err, &pe) && pe.Code == "42P04") { // created meanwhile
			tb.Fatalf("creating database %s to count commits in: %v", commitsDatabase, err)
		}
	}
	u, err := url.Parse(postgresURL())
	if err != nil || u.Scheme == "" {
		tb.Fatalf("TRELLIS_POSTGRES_URL must be a URL for the benchmarks (%v)", err)
	}
	u.Path = "/" + commitsDatabase
	return u.String()
}

// commitCounter reads how many transactions commitsDatabase has committed.
// PostgreSQL's backends report their counts lazily, but always when they
// exit: a count is taken once every other connection to the database has
// closed, and the counter's own statements are subtracted from the next
// count.
type commitCounter struct {
	dsn  string
	last int64 // the last count
	own  int64 // statements of the last count's connection, counted later
}

func newCommitCounter(tb testing.TB, dsn string) *commitCounter {
	c := &commitCounter{dsn: dsn}
	c.last = c.read(tb)
	return c
}

// read waits until no other connection uses the database and returns its
// committed transactions, minus the counter's own earlier statements.
func (c *commitCounter) read(tb testing.TB) int64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		pgUnreachable(tb, err)
	}
	defer conn.Close(context.Background())
	var statements int64
	for {
		var others int
		statements++
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others)
		if err != nil {
			tb.Fatalf("counting commits: %v", err)
		}
		if others == 0 {
			break
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("counting commits: %d other connections to %s stayed open", others, commitsDatabase)
		case <-time.After(5 * time.Millisecond):
		}
	}
	var n int64
	statements++
	if err := conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
		tb.Fatalf("counting commits: %v", err)
	}
	n -= c.own
	c.own += statements
	return n
}

// since returns the transactions committed since the last count.
func (c *commitCounter) since(tb testing.TB) int64 {
	tb.Helper()
	n := c.read(tb)
	d := n - c.last
	c.last = n
	return d
}

// commitsPerRun counts the transactions work(n) commits per run: work(0)
// once untimed (so that tables exist), then work(0) and work(runs) counted,
// the difference divided by runs. work must close its connections before
// it returns.
func commitsPerRun(tb testing.TB, dsn string, runs int, work func(n int)) float64 {
	tb.Helper()
	return commitsPerRunExcept(tb, dsn, runs, func(n int) int64 { work(n); return 0 })
}

// commitsPerRunExcept is commitsPerRun for work that returns how many of
// the transactions it committed are not to be counted.
func commitsPerRunExcept(tb testing.TB, dsn string, runs int, work func(n int) int64) float64 {
	tb.Helper()
	work(0)
	c := newCommitCounter(tb, dsn)
	base := c.since(tb) // nothing: the first count
	base = -work(0)
	base += c.since(tb)
	total := -work(runs)
	total += c.since(tb)
	return float64(total-base) / float64(runs)
}
