package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/pgtest"
	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/runs/postgres"
	"github.com/trellis-go/trellis/server"
	"github.com/trellis-go/trellis/state"
)

// Two replicas on one PostgreSQL database: a run started through one, and
// executed by the other's worker, is streamed by either, and a client that
// lost its stream on one resumes it on the other after the last event it
// saw, missing nothing and seeing nothing twice.
func TestAnyReplicaServesAndResumesAnyRun(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL (-short)")
	}
	pool := pgtest.Pool(t, func(c *pgxpool.Config) { c.MaxConns = 16 })
	schema := pgtest.Schema(t, pool, "trellis_server_test_")
	replica := func(work bool) *env {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := postgres.New(ctx, pool, postgres.WithSchema(schema))
		require.NoError(t, err)
		g, err := graph.New[Chat](graph.WithName("echo"), graph.WithReducer(func(s *Chat) *[]string { return &s.Messages }, state.Append[string]())).
			AddNode("a", appendNode("a")).AddNode("b", appendNode("b")).
			AddEdge(graph.START, "a").AddEdge("a", "b").Compile(graph.WithCheckpointer(m.Saver()))
		require.NoError(t, err)
		require.NoError(t, m.Register(runs.Graph(g)))
		e := &env{m: m}
		e.srv, err = server.New(m)
		require.NoError(t, err)
		e.http = httptest.NewServer(e.srv)
		wctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		if work {
			go func() { done <- m.Work(wctx) }()
		} else {
			done <- nil
		}
		t.Cleanup(func() {
			e.http.Close()
			require.NoError(t, e.srv.Close())
			stop()
			require.NoError(t, <-done)
			require.NoError(t, m.Close())
		})
		return e
	}
	worker, front := replica(true), replica(false)

	require.Equal(t, 200, front.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	evs := front.stream(t, "POST", "/threads/t/runs/stream", obj{"assistant_id": "echo", "input": obj{"notes": []string{"hi"}},
		"stream_mode": []string{"values", "updates"}})
	require.Equal(t, []string{"metadata", "values", "updates", "values", "updates", "values"}, names(evs))
	var meta obj
	require.NoError(t, json.Unmarshal(evs[0].Data, &meta))
	run := meta["run_id"].(string)

	rest := worker.stream(t, "GET", "/threads/t/runs/"+run+"/stream", nil, "Last-Event-ID", evs[2].ID)
	require.Equal(t, names(evs[3:]), names(rest))
	for i := range rest {
		assert.JSONEq(t, string(evs[3+i].Data), string(rest[i].Data))
	}
	var st obj
	require.Equal(t, 200, worker.call(t, "GET", "/threads/t/state", nil, &st))
	assert.Equal(t, []any{"hi", "a:hi", "b:a:hi"}, st["values"].(obj)["notes"])
}
