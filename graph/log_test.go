package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
)

func records(t *testing.T, buf *bytes.Buffer) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		out = append(out, rec)
	}
	return out
}

func TestWithLoggerLogsTheRun(t *testing.T) {
	g := mustCompile(t, graph.New[doc](graph.WithName("logged")).
		AddNode("a", func(ctx context.Context, s doc) (doc, error) {
			graph.EmitCustom(ctx, "progress", 1)
			return s, nil
		}).
		AddNode("b", func(_ context.Context, s doc) (doc, error) {
			if s.Answer == "fail" {
				return s, errors.New("broken")
			}
			return s, nil
		}).
		AddEdge(graph.START, "a").AddEdge("a", "b"))

	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	_, err := g.Invoke(context.Background(), doc{}, graph.WithLogger(log))
	require.NoError(t, err)
	recs := records(t, &buf)
	var msgs []string
	for _, r := range recs {
		msgs = append(msgs, r["msg"].(string)+":"+stringOr(r["node"]))
	}
	assert.Equal(t, []string{"custom:a", "node finished:a", "node finished:b", "run finished:"}, msgs)
	assert.Equal(t, "progress", recs[0]["name"])
	assert.Equal(t, "logged", recs[1]["graph"])

	buf.Reset()
	_, err = g.Invoke(context.Background(), doc{Answer: "fail"}, graph.WithLogger(log))
	require.Error(t, err)
	recs = records(t, &buf)
	last := recs[len(recs)-1]
	assert.Equal(t, "run failed", last["msg"])
	assert.Equal(t, "ERROR", last["level"])
	failed := recs[len(recs)-2]
	assert.Equal(t, "node failed", failed["msg"])
	assert.Equal(t, `graph: node "b": broken`, failed["error"])

	// Logging and streaming together: the stream keeps its own modes.
	buf.Reset()
	n := 0
	for ev, err := range g.Stream(context.Background(), doc{}, graph.WithLogger(log), graph.WithModes(graph.ModeValues)) {
		require.NoError(t, err)
		assert.Contains(t, []graph.EventKind{graph.KindValues, graph.KindDone}, ev.Kind)
		n++
	}
	assert.Equal(t, 3, n)
	assert.Len(t, records(t, &buf), 4)
}

func stringOr(v any) string {
	s, _ := v.(string)
	return s
}

// TestLeavingAStreamIsLoggedAsStoppedNotFailed breaks out of a logged
// stream: the run's last record says it stopped, at Info, while a run
// whose own context is cancelled is still logged as failed.
func TestLeavingAStreamIsLoggedAsStoppedNotFailed(t *testing.T) {
	release := make(chan struct{})
	g := mustCompile(t, graph.New[doc]().
		AddNode("a", func(ctx context.Context, s doc) (doc, error) {
			graph.EmitCustom(ctx, "progress", 1)
			select {
			case <-release:
			case <-ctx.Done():
				return s, ctx.Err()
			}
			return s, nil
		}).
		AddEdge(graph.START, "a"))
	last := func(buf *bytes.Buffer) map[string]any {
		recs := records(t, buf)
		require.NotEmpty(t, recs)
		return recs[len(recs)-1]
	}

	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for ev, err := range g.Stream(context.Background(), doc{}, graph.WithLogger(logger)) {
		require.NoError(t, err)
		if ev.Kind == graph.KindCustom {
			break
		}
	}
	rec := last(&buf)
	assert.Equal(t, "run stopped", rec["msg"])
	assert.Equal(t, "INFO", rec["level"])

	buf.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for ev, err := range g.Stream(ctx, doc{}, graph.WithLogger(logger)) {
		if err != nil {
			break
		}
		if ev.Kind == graph.KindCustom {
			cancel()
		}
	}
	rec = last(&buf)
	assert.Equal(t, "run failed", rec["msg"])
	assert.Equal(t, "ERROR", rec["level"])
	close(release)
}
