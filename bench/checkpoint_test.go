package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	statepg "github.com/trellis-go/trellis/state/postgres"
	statesqlite "github.com/trellis-go/trellis/state/sqlite"
)

// chain3With is Chain3 checkpointed in saver.
func chain3With(tb testing.TB, saver state.Saver) *graph.Graph[counter] {
	tb.Helper()
	g := graph.New[counter]()
	prev := graph.START
	for i := range 3 {
		name := fmt.Sprintf("n%d", i)
		g.AddNode(name, incr).AddEdge(prev, name)
		prev = name
	}
	g.AddEdge(prev, graph.END)
	c, err := g.Compile(graph.WithCheckpointer(saver))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// runChain3 runs c n times, each on a thread of its own.
func runChain3(tb testing.TB, c *graph.Graph[counter], prefix string, from, n int, d graph.Durability) {
	tb.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		out, err := c.Invoke(ctx, counter{}, graph.WithThread(prefix+strconv.Itoa(i)), graph.WithDurability(d))
		if err != nil || out.N != 3 {
			tb.Fatalf("Chain3 returned %d, %v", out.N, err)
		}
	}
}

// commitRuns is how many runs the commit counts are taken over.
const commitRuns = 20

// BenchmarkChain3Checkpoint runs Chain3 on a fresh thread per run with a
// checkpoint after every superstep, on each store, on Trellis (the
// engine's default durability, sync, and async) and on LangGraph.js with
// the corresponding saver (durability sync, and its default, async), in
// Node, driven by this benchmark. On Postgres, each side also reports
// commits/run: the transactions the database commits per run (counted in
// a database of their own, reads included).
func BenchmarkChain3Checkpoint(b *testing.B) {
	for _, store := range []string{"memory", "sqlite", "postgres"} {
		b.Run(store, func(b *testing.B) {
			for _, d := range []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync} {
				name := "trellis"
				if d != graph.DurabilitySync {
					name += "-" + d.String()
				}
				b.Run(name, func(b *testing.B) { benchTrellisCheckpoint(b, store, d) })
			}
			for _, d := range []string{"sync", "async"} {
				name := "langgraphjs"
				if d != "sync" {
					name += "-" + d
				}
				b.Run(name, func(b *testing.B) { benchLangGraphCheckpoint(b, store, d) })
			}
		})
	}
}

// openStore opens a Trellis store of kind; Postgres's in a schema of its
// own in the database at dsn ("" for the test database).
func openStore(tb testing.TB, kind, dsn, schema string) (state.Saver, func()) {
	tb.Helper()
	switch kind {
	case "memory":
		return memory.New(), func() {}
	case "sqlite":
		s, err := statesqlite.Open(filepath.Join(tb.TempDir(), "bench.db"))
		if err != nil {
			tb.Fatal(err)
		}
		return s, func() { _ = s.Close() }
	case "postgres":
		if dsn == "" {
			dsn = postgresURL()
		}
		if schema == "" {
			schema = pgSchema(tb, dsn, "bench_chain3_")
		}
		s, err := statepg.Open(context.Background(), dsn, statepg.WithSchema(schema))
		if err != nil {
			pgUnreachable(tb, err)
		}
		return s, func() { _ = s.Close() }
	}
	tb.Fatalf("unknown store %q", kind)
	return nil, nil
}

func benchTrellisCheckpoint(b *testing.B, store string, d graph.Durability) {
	saver, closeStore := openStore(b, store, "", "")
	defer closeStore()
	c := chain3With(b, saver)
	runChain3(b, c, "warm-", 0, 1, d)
	commits := 0.0
	if store == "postgres" {
		dsn := commitsURL(b)
		schema := pgSchema(b, dsn, "bench_commits_")
		runs := 0
		commits = commitsPerRun(b, dsn, commitRuns, func(n int) {
			s, closeStore := openStore(b, store, dsn, schema)
			runChain3(b, chain3With(b, s), "count-", runs, n, d)
			runs += n
			closeStore()
		})
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		runChain3(b, c, "thread-", i, 1, d)
		i++
	}
	if commits > 0 { // reported after the loop, which resets metrics
		b.ReportMetric(commits, "commits/run")
	}
}

func benchLangGraphCheckpoint(b *testing.B, store, durability string) {
	needNode(b)
	var env []string
	commits := 0.0
	switch store {
	case "sqlite":
		env = append(env, "BENCH_SQLITE_PATH="+filepath.Join(b.TempDir(), "langgraph.db"))
	case "postgres":
		dsn := postgresURL()
		env = append(env, "BENCH_POSTGRES_URL="+dsn, "BENCH_POSTGRES_SCHEMA="+pgSchema(b, dsn, "bench_langgraph_"))
		cdsn := commitsURL(b)
		counter := startPeer(b, "count", store, durability,
			"BENCH_POSTGRES_URL="+cdsn, "BENCH_POSTGRES_SCHEMA="+pgSchema(b, cdsn, "bench_langgraph_commits_"))
		commits = commitsPerRun(b, cdsn, commitRuns, func(n int) { counter.runs(b, n) })
		counter.stop(b)
	}
	p := startPeer(b, "serve", store, durability, env...)
	for b.Loop() {
		p.runs(b, 1)
	}
	if commits > 0 {
		b.ReportMetric(commits, "commits/run")
	}
}

var pgbenchLatency = regexp.MustCompile(`latency average = ([0-9.]+) ms`)

// BenchmarkCommitFloor is the cost of one commit on the test server:
// pgbench inserting a single row per transaction from one client, on the
// same machine in the same run as the checkpoint benchmarks. ns/op is
// pgbench's average latency per transaction, over at least 200.
func BenchmarkCommitFloor(b *testing.B) {
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		b.Skip("pgbench (installed with PostgreSQL) is not on the PATH: " + err.Error())
	}
	dsn := postgresURL()
	schema := pgSchema(b, dsn, "bench_floor_")
	conn := pgConnect(b, dsn)
	table := pgx.Identifier{schema, "floor"}.Sanitize()
	ctx := context.Background()
	_, err = conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()+"; CREATE TABLE "+table+" (id bigserial PRIMARY KEY, v int NOT NULL)")
	_ = conn.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	script := filepath.Join(b.TempDir(), "insert.sql")
	if err := os.WriteFile(script, []byte("INSERT INTO "+table+" (v) VALUES (1);\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("pgbench-insert", func(b *testing.B) {
		n := max(b.N, 200)
		out, err := exec.Command(pgbench, "-n", "-c", "1", "-t", strconv.Itoa(n), "-f", script, dsn).CombinedOutput()
		if err != nil {
			b.Fatalf("pgbench: %v\n%s", err, out)
		}
		m := pgbenchLatency.FindSubmatch(out)
		if m == nil {
			b.Fatalf("pgbench printed no average latency:\n%s", out)
		}
		ms, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(ms*1e6, "ns/op")
	})
}
