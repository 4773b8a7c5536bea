package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/runstest"
	"github.com/trellis-go/trellis/runs/sqlite"
)

func TestThreadState(t *testing.T) {
	if testing.Short() {
		t.Skip("runs on a worker take seconds (-short)")
	}
	runstest.ThreadState(t, func(t *testing.T) *runs.Manager {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := sqlite.Open(ctx, ":memory:", sqlite.WithRuns(runs.WithFetch(time.Millisecond, 10*time.Millisecond)))
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, m.Close()) })
		return m
	})
}
