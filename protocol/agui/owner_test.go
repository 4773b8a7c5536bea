package agui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// byUserHeader is an owner function that reads the user a test request
// names; a real one reads what the application's authentication set.
func byUserHeader(r *http.Request) (string, error) {
	if u := r.Header.Get("X-Test-User"); u != "" {
		return u, nil
	}
	return "", errors.New("no user: token file /etc/secrets/tokens.json has no entry")
}

// postAs sends body to h as user ("" for none).
func postAs(t *testing.T, h http.Handler, user string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req := httptest.NewRequest(http.MethodPost, "/agent", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.Header.Set("X-Test-User", user)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// runAs posts body as user and returns the checked events of the stream.
func runAs(t *testing.T, h http.Handler, user string, body any) []event {
	t.Helper()
	resp := postAs(t, h, user, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", raw)
	evs := parseSSE(t, raw)
	checkStream(t, evs)
	return evs
}

// transcripts records what the model is sent, one line per message.
type transcripts struct {
	mu   sync.Mutex
	seen [][]string
}

func (tr *transcripts) step(reply model.Message) scripted.Step {
	return scripted.Func(func(req *model.Request) (*model.Response, error) {
		var lines []string
		for _, m := range req.Messages {
			lines = append(lines, string(m.Role)+":"+m.Text())
		}
		tr.mu.Lock()
		tr.seen = append(tr.seen, lines)
		tr.mu.Unlock()
		return &model.Response{Message: reply}, nil
	})
}

func (tr *transcripts) last() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.seen[len(tr.seen)-1]
}

// A thread belongs to the owner whose request created it: another owner
// naming the same thread ID gets a new thread of their own. Nothing of
// the first owner's conversation reaches the second — not its messages,
// not that it waits for an answer (no 409) — and the second's request
// leaves the first's thread as it was, so that its owner continues it.
func TestThreadOfOneOwnerIsNotAnotherOwners(t *testing.T) {
	var tr transcripts
	m := scripted.New(
		tr.step(model.Assistant("Let me ask.", model.ToolCall{ID: "call-of-ada", Name: "confirm", Arguments: json.RawMessage(`{}`)})),
		tr.step(model.Assistant("Hello Bob.")),
		tr.step(model.Assistant("Booked for Ada.")),
	)
	saver := memory.New()
	g, err := agent.NewReAct(m, agent.WithCheckpointer(saver))
	require.NoError(t, err)
	h, err := agui.NewHandler(g, agui.WithOwner(byUserHeader))
	require.NoError(t, err)
	tools := []map[string]any{{"name": "confirm", "description": "Asks the user."}}

	in := input("shared", "r1", userMsg("u1", "book my table, my card is 4111"))
	in["tools"] = tools
	evs := runAs(t, h, "ada", in)
	assert.Equal(t, []any{"call-of-ada"}, outcome(t, evs)["pendingToolCallIds"])
	adaHistory := asInput(snapshot(t, evs))

	// Bob names Ada's thread, with a message of his own: a new thread.
	evs = runAs(t, h, "bob", input("shared", "r2", userMsg("b1", "hello")))
	assert.Equal(t, []string{"user:hello"}, tr.last(), "the model sees Bob's message alone")
	bobMsgs := snapshot(t, evs)
	require.Len(t, bobMsgs, 2)
	assert.Equal(t, "b1", bobMsgs[0].ID)
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		assert.NotContains(t, string(b), "4111", "nothing of Ada's thread reaches Bob")
		assert.NotContains(t, string(b), "call-of-ada")
	}

	// Ada's thread still waits for her answer, which continues it.
	answer := input("shared", "r3", append(adaHistory, map[string]any{"id": "res1", "role": "tool", "toolCallId": "call-of-ada", "content": "yes"})...)
	answer["tools"] = tools
	evs = runAs(t, h, "ada", answer)
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	assert.Equal(t, []string{"user:book my table, my card is 4111", "assistant:Let me ask.", "tool:yes"}, tr.last())

	// The threads are kept under their owners' names.
	ctx := context.Background()
	_, err = g.GetState(ctx, agui.ThreadKey("ada", "shared"))
	require.NoError(t, err)
	_, err = g.GetState(ctx, agui.ThreadKey("bob", "shared"))
	require.NoError(t, err)
	_, err = g.GetState(ctx, agui.ThreadPrefix+"shared")
	assert.ErrorIs(t, err, state.ErrNotFound, "no thread outside an owner's")
}

// The owner is part of the thread's key in the checkpointer, so scoping
// holds across processes: a second handler over the same store (another
// replica, or the process after a restart) continues Ada's thread for
// Ada, and gives Bob a thread of his own.
func TestThreadOwnerHoldsAcrossProcesses(t *testing.T) {
	saver := memory.New()
	newHandler := func(m model.Model) *agui.Handler {
		g, err := agent.NewReAct(m, agent.WithCheckpointer(saver))
		require.NoError(t, err)
		h, err := agui.NewHandler(g, agui.WithOwner(byUserHeader))
		require.NoError(t, err)
		return h
	}
	var tr transcripts
	first := newHandler(scripted.New(tr.step(model.Assistant("Noted: blue."))))
	evs := runAs(t, first, "ada", input("t1", "r1", userMsg("u1", "my colour is blue")))
	history := asInput(snapshot(t, evs))

	second := newHandler(scripted.New(tr.step(model.Assistant("Hi.")), tr.step(model.Assistant("Blue."))))
	runAs(t, second, "bob", input("t1", "r2", userMsg("b1", "what is my colour?")))
	assert.Equal(t, []string{"user:what is my colour?"}, tr.last())
	runAs(t, second, "ada", input("t1", "r3", append(history, userMsg("u2", "what is my colour?"))...))
	assert.Equal(t, []string{"user:my colour is blue", "assistant:Noted: blue.", "user:what is my colour?"}, tr.last())
}

// A request the owner function does not authorize is refused with 401
// before its body is read, without the function's error (which may name
// internals), and runs nothing; so is one with an empty owner.
func TestUnauthorizedRequestIsRefused(t *testing.T) {
	ran := false
	m := scripted.New(scripted.Func(func(*model.Request) (*model.Response, error) {
		ran = true
		return &model.Response{Message: model.Assistant("ok")}, nil
	}))
	g, err := agent.NewReAct(m)
	require.NoError(t, err)
	h, err := agui.NewHandler(g, agui.WithOwner(byUserHeader))
	require.NoError(t, err)
	resp := postAs(t, h, "", input("t1", "r1", userMsg("u1", "hi")))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.NotContains(t, string(body), "/etc/secrets")
	assert.Contains(t, string(body), "not authorized")

	read := false
	req := httptest.NewRequest(http.MethodPost, "/agent", readWatcher{r: strings.NewReader(`{}`), read: &read})
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.False(t, read, "the body of an unauthorized request is not read")

	empty, err := agui.NewHandler(g, agui.WithOwner(func(*http.Request) (string, error) { return "", nil }))
	require.NoError(t, err)
	resp = postAs(t, empty, "ada", input("t1", "r1", userMsg("u1", "hi")))
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.False(t, ran, "no run started")

	_, err = agui.NewHandler(g, agui.WithOwner(nil))
	assert.ErrorContains(t, err, "WithOwner")
}

type readWatcher struct {
	r    io.Reader
	read *bool
}

func (w readWatcher) Read(p []byte) (int, error) {
	*w.read = true
	return w.r.Read(p)
}

// The run's tools learn whose request they serve (OwnerFrom), to keep
// their own data apart.
func TestOwnerReachesTheRun(t *testing.T) {
	whoami := tool.MustFunc("whoami", "Names the user.", func(ctx context.Context, _ struct{}) (string, error) {
		return "owner=" + agui.OwnerFrom(ctx), nil
	})
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "whoami", `{}`)), scripted.Reply("hi"))
	g, err := agent.NewReAct(m, agent.WithTools(whoami))
	require.NoError(t, err)
	h, err := agui.NewHandler(g, agui.WithOwner(byUserHeader))
	require.NoError(t, err)
	evs := runAs(t, h, "ada", input("t1", "r1", userMsg("u1", "who am I?")))
	res := ofType(evs, "TOOL_CALL_RESULT")
	require.Len(t, res, 1)
	assert.Equal(t, "owner=ada", res[0].str("content"))
	assert.Empty(t, agui.OwnerFrom(context.Background()))
}

// Thread keys of different owners, or of an owner and a handler without
// owners, never coincide, whatever characters owners and thread IDs hold.
func TestThreadKeysOfOwnersAreDisjoint(t *testing.T) {
	pairs := [][2]string{
		{"a/b", "c"}, {"a", "b/c"}, {"a%2Fb", "c"}, {"", "a/b/c"}, {"", "agui/a/b"},
		{"a:b", "c"}, {"a", "b:c"}, {"", "a"}, {"a", ""},
	}
	keys := map[string][2]string{}
	for _, p := range pairs {
		k := agui.ThreadKey(p[0], p[1])
		if prev, dup := keys[k]; dup {
			t.Fatalf("owners %q and %q share key %q", prev, p, k)
		}
		keys[k] = p
	}
	assert.Equal(t, "agui:t1", agui.ThreadKey("", "t1"))
	assert.Equal(t, "agui/ada@example.com%2Fx/t1", agui.ThreadKey("ada@example.com/x", "t1"))
}
