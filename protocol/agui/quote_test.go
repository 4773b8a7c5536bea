package agui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
)

// A refusal names what was wrong by a bounded prefix of the IDs, names and
// types the client sent: a huge ID is never echoed whole, whether the
// request is malformed (400), does not fit the thread (409) or is not
// declared JSON (415).
func TestRefusalsQuoteABoundedPrefixOfWhatTheClientSent(t *testing.T) {
	huge := "id-" + strings.Repeat("x", 100_000)
	refused := func(t *testing.T, resp *http.Response, status int) string {
		t.Helper()
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, status, resp.StatusCode, "body: %.300s", raw)
		assert.Contains(t, string(raw), "id-xxxx", "the refusal still names the ID by its start")
		assert.Less(t, len(raw), 2_000, "the refusal quotes a prefix, not the whole ID: %.300s", raw)
		return string(raw)
	}
	m := scripted.New(scripted.Func(func(*model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant("ok")}, nil
	}))
	h := handler(t, m, nil)

	t.Run("a message ID used twice", func(t *testing.T) {
		refused(t, post(t, h, input("t1", "r1", userMsg(huge, "a"), userMsg(huge, "b"))), http.StatusBadRequest)
	})
	t.Run("a resume entry's interrupt and status", func(t *testing.T) {
		in := input("t1", "r1", userMsg("u1", "a"))
		in["resume"] = []map[string]any{{"interruptId": huge, "status": huge}}
		refused(t, post(t, h, in), http.StatusBadRequest)
	})
	t.Run("a tool declared twice", func(t *testing.T) {
		in := input("t1", "r1", userMsg("u1", "a"))
		tool := map[string]any{"name": huge, "description": "d", "parameters": map[string]any{"type": "object"}}
		in["tools"] = []map[string]any{tool, tool}
		refused(t, post(t, h, in), http.StatusBadRequest)
	})
	t.Run("a content type", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/agent", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "text/"+huge)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		refused(t, rec.Result(), http.StatusUnsupportedMediaType)
	})
	t.Run("a message added while the thread waits", func(t *testing.T) {
		ask := scripted.CallTools(scripted.CallWithID("q1", nodes.AskUserName, `{"question":"Which day?"}`))
		h := handler(t, scripted.New(ask), []agent.Option{agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(memory.New())})
		evs := run(t, h, input("t1", "r1", userMsg("u1", "book")))
		ints := outcome(t, evs)["interrupts"].([]any)
		require.Len(t, ints, 1)
		id := ints[0].(map[string]any)["id"].(string)
		next := input("t1", "r2", append(asInput(snapshot(t, evs)), userMsg(huge, "and another thing"))...)
		next["resume"] = []map[string]any{{"interruptId": id, "status": "resolved", "payload": "Friday"}}
		refused(t, post(t, h, next), http.StatusConflict)
	})
}
