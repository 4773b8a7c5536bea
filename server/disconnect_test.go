package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// A client that streams a run with on_disconnect "cancel" and leaves
// before the run ended has its run cancelled, however its leaving shows:
// its request ends, or a write to it fails while the request's context
// still stands.
func TestClientThatLeavesHasItsRunCancelledWhenItAsked(t *testing.T) {
	e := newEnv(t)
	interrupted := func(t *testing.T, thread, id string) {
		t.Helper()
		eventually(t, "the run of the client that left to be cancelled", func() bool {
			var run obj
			return e.call(t, "GET", "/threads/"+thread+"/runs/"+id, nil, &run) == 200 && run["status"] == "interrupted"
		})
	}
	body := obj{"assistant_id": "hold", "input": obj{"notes": []string{"x"}}, "on_disconnect": "cancel"}

	t.Run("the request ends", func(t *testing.T) {
		// Again and again: the request's end and the end of the run's
		// events reach the stream together, in either order.
		for i := range 10 {
			thread := fmt.Sprintf("ends-%d", i)
			require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": thread}, nil))
			ctx, cancel := context.WithCancel(t.Context())
			b, err := json.Marshal(body)
			require.NoError(t, err)
			req, err := http.NewRequestWithContext(ctx, "POST", e.http.URL+"/threads/"+thread+"/runs/stream", bytes.NewReader(b))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := e.http.Client().Do(req)
			require.NoError(t, err)
			evs := readEvents(t, resp.Body, 1)
			require.Len(t, evs, 1)
			require.Equal(t, "metadata", evs[0].Event)
			var meta obj
			require.NoError(t, json.Unmarshal(evs[0].Data, &meta))
			cancel()
			resp.Body.Close()
			interrupted(t, thread, meta["run_id"].(string))
		}
	})

	t.Run("a write fails", func(t *testing.T) {
		require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "w"}, nil))
		b, err := json.Marshal(body)
		require.NoError(t, err)
		req := httptest.NewRequestWithContext(t.Context(), "POST", "/threads/w/runs/stream", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		w := &brokenWriter{header: http.Header{}}
		e.srv.ServeHTTP(w, req) // returns once a write failed
		require.NoError(t, req.Context().Err(), "the request's context still stands")
		var runs []obj
		require.Equal(t, 200, e.call(t, "GET", "/threads/w/runs", nil, &runs))
		require.Len(t, runs, 1)
		interrupted(t, "w", runs[0]["run_id"].(string))
	})
}

// brokenWriter is a response whose connection broke: every write of the
// body fails.
type brokenWriter struct {
	header http.Header
}

func (w *brokenWriter) Header() http.Header { return w.header }

func (w *brokenWriter) Write([]byte) (int, error) {
	return 0, errors.New("write: broken pipe")
}

func (w *brokenWriter) WriteHeader(int) {}

func (w *brokenWriter) Flush() {}
