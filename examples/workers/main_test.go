package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/internal/pgtest"
)

// A worker process of the test is the test binary, run with the
// example's flags in its environment.
const envArgs = "EXAMPLE_WORKERS_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(envArgs); args != "" {
		if err := mainErr(strings.Split(args, "\x1f")); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func spawn(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envArgs+"="+strings.Join(args, "\x1f"))
	return cmd
}

func runExample(t *testing.T, args ...string) string {
	t.Helper()
	c, err := parse(args)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, c, spawn))
	return out.String()
}

func TestTwoWorkerProcessesAnswerEveryRunOnSQLite(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes (-short)")
	}
	out := runExample(t, "-runs", "12")
	assert.Contains(t, out, "started worker process")
	assert.Contains(t, out, "run_end (success)")
	assert.Contains(t, out, "every run answered")
	assert.Contains(t, out, "threads about Dune: 3")
}

func TestTwoWorkerProcessesAnswerEveryRunOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes and needs PostgreSQL (-short)")
	}
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t, pool, "trellis_example_workers_")
	url := pgtest.URL() + "&search_path=" + schema + "&pool_max_conns=8"
	_, err := pool.Exec(t.Context(), `CREATE SCHEMA IF NOT EXISTS `+schema)
	require.NoError(t, err)
	out := runExample(t, "-postgres", url, "-runs", "8")
	assert.Contains(t, out, "every run answered")
	assert.Contains(t, out, "threads about Dune: 2")
}

func TestFlagsAreChecked(t *testing.T) {
	_, err := parse([]string{"-role", "boss"})
	assert.ErrorContains(t, err, `-role "boss"`)
	_, err = parse([]string{"-role", "worker"})
	assert.ErrorContains(t, err, "needs -db or -postgres")
}
