package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"

	"github.com/trellis-go/trellis/runs"
	statepg "github.com/trellis-go/trellis/state/postgres"
)

// Option configures the Manager Open and New make.
type Option func(*config)

type config struct {
	schema string
	runs   []runs.Option
}

// WithSchema keeps the runs layer's tables, River's and the checkpoints in
// the named schema (a plain identifier), created if missing. By default
// they go to the first schema on the search_path.
func WithSchema(name string) Option { return func(c *config) { c.schema = name } }

// WithRuns passes options to the Manager (runs.WithLease and the others).
func WithRuns(opts ...runs.Option) Option {
	return func(c *config) { c.runs = append(c.runs, opts...) }
}

// New returns a Manager keeping its runs in PostgreSQL through pool, which
// the caller owns (Close leaves it open). It creates or migrates the
// tables before it returns. The pool serves the Manager's queries,
// River's, and the checkpoints of its graphs; size it for the runs it
// works at once (docs/runs.md).
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*runs.Manager, error) {
	if pool == nil {
		return nil, errors.New("runs/postgres: New: nil *pgxpool.Pool")
	}
	return open(ctx, pool, false, opts)
}

// Open connects to the database at connString (a URL or key=value DSN, as
// pgxpool.ParseConfig reads it) with a pool the Manager owns and closes.
// Unless connString sets pool_max_conns, the pool holds up to 32
// connections.
func Open(ctx context.Context, connString string, opts ...Option) (*runs.Manager, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("runs/postgres: open: %w", err)
	}
	if !hasParam(connString, "pool_max_conns") {
		cfg.MaxConns = 32
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("runs/postgres: open: %w", err)
	}
	m, err := open(ctx, pool, true, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return m, nil
}

func open(ctx context.Context, pool *pgxpool.Pool, owned bool, opts []Option) (*runs.Manager, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	saverOpts := []statepg.Option{statepg.WithWriteGuard(runs.FenceStatement)}
	if cfg.schema != "" {
		saverOpts = append(saverOpts, statepg.WithSchema(cfg.schema))
	}
	saver, err := statepg.New(ctx, pool, saverOpts...)
	if err != nil {
		return nil, fmt.Errorf("runs/postgres: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	b := runs.Backend{
		Dialect: runs.DialectPostgres,
		DB:      db,
		Driver:  riverdatabasesql.NewWithPgxListener(db, pool),
		Schema:  cfg.schema,
		Saver:   saver,
		Listen: func(ctx context.Context, channel string, deliver func(string)) error {
			return listen(ctx, pool, channel, deliver)
		},
		Close: func() error {
			err := db.Close()
			if owned {
				pool.Close()
			}
			return err
		},
	}
	m, err := runs.New(ctx, b, cfg.runs...)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return m, nil
}

// listen delivers the notifications of channel on a connection of its own
// (not one of the pool's, which it would hold for good) until ctx ends.
func listen(ctx context.Context, pool *pgxpool.Pool, channel string, deliver func(string)) error {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("runs/postgres: listen: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return fmt.Errorf("runs/postgres: listen: %w", err)
	}
	deliver("") // listening: what was sent before may have been missed
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("runs/postgres: listen: %w", err)
		}
		deliver(n.Payload)
	}
}

// hasParam reports whether a connection string sets the parameter.
func hasParam(connString, name string) bool {
	return strings.Contains(connString, name+"=") || strings.Contains(connString, name+" =")
}
