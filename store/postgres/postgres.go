package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/internal/engine"
	"github.com/trellis-go/trellis/store/internal/sqlstore"
)

// New returns a store on pool, which the caller keeps owning: Close leaves
// it open. The tables are created or migrated before New returns.
func New(ctx context.Context, pool *pgxpool.Pool, opts ...store.Option) (store.Store, error) {
	if pool == nil {
		return nil, errors.New("postgres store: New: nil pool")
	}
	cfg := store.NewConfig(opts...)
	db := stdlib.OpenDBFromPool(pool) // closing it leaves the pool open
	d, err := sqlstore.Open(ctx, db, sqlstore.Postgres, cfg.Schema, cfg.TablePrefix, true)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres store: %w", err)
	}
	return engine.New(d, cfg), nil
}
