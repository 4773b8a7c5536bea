package pgtest

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
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			tb.Errorf("drop test schema %s: %v", name, err)
		}
	})
	return name
}
