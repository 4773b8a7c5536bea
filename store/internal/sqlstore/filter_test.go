package sqlstore

import (
	"database/sql"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/internal/engine"
)

// TestFiltersRunInTheDatabase scans with filters the driver turns into SQL
// and checks that the database alone returns exactly the matching rows:
// no row is left for the engine to drop.
func TestFiltersRunInTheDatabase(t *testing.T) {
	dbs := drivers()
	rows := map[string]string{
		"int":     `{"n": 1, "s": "apple", "k": "x"}`,
		"real":    `{"n": 2.5, "s": "banana", "k": "x"}`,
		"swapped": `{"n": "7", "s": 7, "k": "y"}`,
		"bool":    `{"n": true, "s": null, "k": true}`,
		"nested":  `{"m": {"n": 4, "s": "Z"}}`,
		"big":     `{"n": 9007199254740993}`,
		"huge":    `{"n": 1e400}`,
	}
	for name, open := range dbs {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var ws []engine.Write
			for k, v := range rows {
				ws = append(ws, engine.Write{NS: "f\x1f", Key: k, Value: json.RawMessage(v)})
			}
			_, err := d.Apply(t.Context(), ws, now)
			require.NoError(t, err)
			for what, tc := range map[string]struct {
				conds []store.Cond
				want  []string
			}{
				"number range":  {[]store.Cond{store.Gt("n", 1.0)}, []string{"real", "big"}},
				"string range":  {[]store.Cond{store.Lt("s", "b")}, []string{"int"}},
				"mixed types":   {[]store.Cond{store.Gte("s", 0.0)}, []string{"swapped"}},
				"nested":        {[]store.Cond{store.Lte("m.n", 4.0), store.Gt("m.s", "A")}, []string{"nested"}},
				"missing":       {[]store.Cond{store.Lt("absent", 1.0)}, nil},
				"eq number":     {[]store.Cond{store.Eq("n", 9007199254740992.0)}, []string{"big"}},
				"eq string":     {[]store.Cond{store.Eq("k", "x")}, []string{"int", "real"}},
				"eq bool":       {[]store.Cond{store.Eq("k", true)}, []string{"bool"}},
				"eq null":       {[]store.Cond{store.Eq("s", nil)}, []string{"bool"}},
				"eq with range": {[]store.Cond{store.Eq("k", "x"), store.Gte("n", 2.0)}, []string{"real"}},
			} {
				var got []string
				err := d.Scan(t.Context(), engine.ScanOptions{Prefix: "f\x1f", Filter: tc.conds}, now, func(r engine.Row) error {
					got = append(got, r.Key)
					return nil
				})
				require.NoError(t, err, what)
				assert.ElementsMatch(t, tc.want, got, what)
			}
		})
	}
}

// drivers opens a Driver on each database: SQLite in memory, and
// PostgreSQL in a schema of its own (skipped with -short).
func drivers() map[string]func(t *testing.T) *Driver {
	return map[string]func(t *testing.T) *Driver{
		"sqlite": func(t *testing.T) *Driver {
			db, err := sql.Open("sqlite", ":memory:")
			require.NoError(t, err)
			db.SetMaxOpenConns(1)
			d, err := Open(t.Context(), db, SQLite, "", "t_", true)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, d.Close()) })
			return d
		},
		"postgres": func(t *testing.T) *Driver {
			if testing.Short() {
				t.Skip("-short: needs Postgres")
			}
			pool := pgtest.Pool(t)
			schema := pgtest.Schema(t, pool, "sqlstore_")
			d, err := Open(t.Context(), stdlib.OpenDBFromPool(pool), Postgres, schema, "t_", true)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, d.Close()) })
			return d
		},
	}
}
