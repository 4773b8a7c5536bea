package graph_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func dropSchemaSQL(t testing.TB, dsn, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Logf("dropping schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Logf("dropping schema %s: %v", schema, err)
	}
}
