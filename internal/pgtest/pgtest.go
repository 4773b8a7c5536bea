package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-go/trellis/internal/backoff"
)

// DefaultURL is the local test server.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL returns the test server's connection string: TRELLIS_POSTGRES_URL,
// else DefaultURL.
func URL() string {
	if u := os.Getenv("TRELLIS_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Where names the server URL points at, without its password.
func Where() string {
	cfg, err := pgx.ParseConfig(URL())
	if err != nil {
		return "(unparsable TRELLIS_POSTGRES_URL)"
	}
	return cfg.User + "@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database
}

// SkipShort skips tb under -short: a test of the PostgreSQL server is an
// integration test, which -short leaves out.
func SkipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs PostgreSQL (skipped with -short)")
	}
}

// Unreachable skips tb because the server could not be reached (err says
// why), or fails it when CI=true.
func Unreachable(tb testing.TB, err error) {
	tb.Helper()
	msg := "postgres server unreachable at " + Where() + ": " + err.Error() + " (start one, or set TRELLIS_POSTGRES_URL)"
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// Pool connects to the server with at most 8 connections (tune changes the
// configuration first), or skips tb (fails it under CI); with -short it
// skips tb without trying. The pool is closed when the test ends.
func Pool(tb testing.TB, tune ...func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	SkipShort(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		tb.Fatalf("TRELLIS_POSTGRES_URL: %v", err)
	}
	cfg.MaxConns = 8
	for _, f := range tune {
		f(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		Unreachable(tb, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		Unreachable(tb, err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// Schema returns a schema name that starts with prefix and is unique to
// this run, and drops the schema, with everything in it, when the test
// ends.
func Schema(tb testing.TB, pool *pgxpool.Pool, prefix string) string {
	tb.Helper()
	name := prefix + randomSuffix()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dropDeadline)
		defer cancel()
		if err := dropSchema(ctx, pool, name); err != nil {
			tb.Errorf("drop test schema %s: %v", name, err)
		}
	})
	return name
}

// dropDeadline bounds the cleanup of a test schema, retries included.
const dropDeadline = time.Minute

// dropSchema drops the schema name with everything in it. Sessions of the
// test may still hold locks on its tables when the test ends (a worker
// process just killed, whose server process has not noticed yet; a
// client's background query finishing): DROP ... CASCADE locks the tables
// one by one, and waiting for a lock while holding others is how it ends
// in a deadlock with them. So each attempt waits for a lock at most
// lockWait (lock_timeout), then lets go of all it holds, and attempts that
// lost a deadlock or ran out of lock time are made again, after a backoff,
// until ctx ends.
func dropSchema(ctx context.Context, pool *pgxpool.Pool, name string) error {
	policy := backoff.Policy{Initial: 50 * time.Millisecond, Factor: 2, Max: time.Second, Jitter: 0.5}
	drop := `DROP SCHEMA IF EXISTS ` + pgx.Identifier{name}.Sanitize() + ` CASCADE`
	for n := 0; ; n++ {
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+lockWait+`'`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, drop)
			return err
		})
		if err == nil || !lockConflict(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (after %d attempts; the last: %w)", ctx.Err(), n+1, err)
		case <-time.After(policy.Wait(n)):
		}
	}
}

// lockWait is how long one attempt of dropSchema waits for a lock.
const lockWait = "2s"

// lockConflict reports whether err is a lost deadlock (40P01) or a lock
// not granted in time (55P03): another session held what the statement
// needed, and it may succeed once that session is done.
func lockConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "55P03")
}

// randomSuffix returns 12 random hexadecimal digits.
func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
