package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool"
)

// postRPC sends one JSON-RPC message to url and returns the response.
func postRPC(t *testing.T, url, session, version, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return res
}

func TestCloseStreamPrimesAndClosesTheStreamOfTheNegotiatedVersion(t *testing.T) {
	slow := tool.MustFunc("slow", "closes its stream, then answers", func(ctx context.Context, _ struct{}) (string, error) {
		if !CloseStream(ctx, 25*time.Millisecond) {
			return "no stream", nil
		}
		return "late answer", nil
	})
	srv, err := NewServer(t.Context(), tool.NewStatic("s", slow))
	require.NoError(t, err)
	url := serveHTTP(t, srv.Handler(&sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})) + "/"

	res := postRPC(t, url, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	session := res.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	defer func() {
		// End the session, and with it the server's reader of its requests.
		req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, url, nil)
		require.NoError(t, err)
		req.Header.Set("Mcp-Session-Id", session)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
	}()
	res = postRPC(t, url, session, "2025-11-25", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	res.Body.Close()

	// The client names an older version than the session's in its header:
	// the stream is still the negotiated version's, primed and closed with
	// a retry field.
	res = postRPC(t, url, session, "2025-03-26", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Type"), "text/event-stream")
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	events := strings.Split(strings.TrimSpace(string(raw)), "\n\n")
	require.NotEmpty(t, events)
	var first struct{ id, data string }
	for line := range strings.Lines(events[0]) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch k {
		case "id":
			first.id = strings.TrimSpace(v)
		case "data":
			first.data = strings.TrimSpace(v)
		}
	}
	assert.NotEmpty(t, first.id, "a priming event with an ID first: %q", raw)
	assert.Empty(t, first.data)
	assert.Contains(t, string(raw), "retry: 25")
	assert.NotContains(t, string(raw), "late answer", "the answer waits for the client to resume")

	// Resuming the stream brings the answer.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Last-Event-ID", first.id)
	res2, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res2.Body.Close()
	sc := bufio.NewScanner(res2.Body)
	found := false
	for sc.Scan() {
		if line := sc.Bytes(); bytes.HasPrefix(line, []byte("data:")) && bytes.Contains(line, []byte("late answer")) {
			var msg struct {
				ID int `json:"id"`
			}
			require.NoError(t, json.Unmarshal(bytes.TrimSpace(line[len("data:"):]), &msg))
			assert.Equal(t, 2, msg.ID)
			found = true
			break
		}
	}
	assert.True(t, found, "the answer on the resumed stream")
}

func TestCloseStreamOutsideStreamableHTTPReportsFalse(t *testing.T) {
	assert.False(t, CloseStream(t.Context(), time.Second))
}
