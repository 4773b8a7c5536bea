package postgres_test

import (
	"context"
	"fmt"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/postgres"
)

// Open owns its connection pool; the tables are created on first use.
func Example() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, "postgres://app@db.internal:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if err := s.Put(ctx, state.Checkpoint{ThreadID: "ticket-9", ID: "cp-1", Source: "input", Step: -1}); err != nil {
		log.Fatal(err)
	}
	latest, err := s.Get(ctx, "ticket-9", "", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("resume from", latest.Checkpoint.ID)
}

// New shares a pool the service already has, and keeps the tables in their
// own schema.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db.internal:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	s, err := postgres.New(ctx, pool, postgres.WithSchema("agents"), postgres.WithTablePrefix("support_"))
	if err != nil {
		log.Fatal(err)
	}
	// Keep the last 20 checkpoints of a finished thread for inspection.
	if err := s.Prune(ctx, "ticket-9", 20); err != nil {
		log.Fatal(err)
	}
}
