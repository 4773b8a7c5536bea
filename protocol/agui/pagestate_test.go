package agui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// cartHandler serves a ReAct agent over chatWithCart with a checkpointer,
// taking the page's cart (WithState) and showing it (WithStateSnapshots).
func cartHandler(t *testing.T, m model.Model, tools ...tool.Tool) *agui.Handler {
	t.Helper()
	g, err := agent.ReAct[chatWithCart](m, agent.WithTools(tools...), agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	h, err := agui.NewHandler(g,
		agui.WithState(func(_ context.Context, in json.RawMessage, s *chatWithCart) error {
			var v struct {
				Cart []string `json:"cart"`
			}
			if err := json.Unmarshal(in, &v); err != nil {
				return err
			}
			s.Cart = v.Cart
			return nil
		}),
		agui.WithStateSnapshots(func(s chatWithCart) any { return map[string]any{"cart": s.Cart} }))
	require.NoError(t, err)
	return h
}

// carts returns the carts of a stream's STATE_SNAPSHOTs, as JSON.
func carts(evs []event) []string {
	var out []string
	for _, ev := range ofType(evs, "STATE_SNAPSHOT") {
		b, _ := json.Marshal(ev["snapshot"])
		out = append(out, string(b))
	}
	return out
}

// With a checkpointer, the request that answers a call of the page's
// tool brings the page's state, which the tool changed (an item added to
// the page's cart): the run that resumes the thread applies it, so the
// agent's tools see it, the snapshots show it instead of the thread's
// older state, and the thread keeps it. It holds again when the resumed
// run calls the page's tool a second time.
func TestAnswerToPageToolAppliesThePagesState(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	peek := tool.MustFunc("peek_cart", "Reads the cart.", func(ctx context.Context, _ struct{}) (string, error) {
		s, _ := tool.RunState[chatWithCart](ctx)
		mu.Lock()
		seen = append(seen, strings.Join(s.Cart, ","))
		mu.Unlock()
		return strings.Join(s.Cart, ","), nil
	})
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "add_to_cart", `{"sku":"lamp"}`)),
		scripted.CallTools(scripted.CallWithID("c2", "peek_cart", `{}`)),
		scripted.CallTools(scripted.CallWithID("c3", "add_to_cart", `{"sku":"desk"}`)),
		scripted.Reply("Your cart holds a lamp and a desk."),
		scripted.Reply("You are welcome."),
	)
	h := cartHandler(t, m, peek)
	tools := []map[string]any{{"name": "add_to_cart", "description": "Adds to the page's cart."}}

	in := input("t1", "r1", userMsg("u1", "a lamp and a desk"))
	in["tools"] = tools
	in["state"] = map[string]any{"cart": []string{}}
	evs := run(t, h, in)
	require.Equal(t, []any{"c1"}, outcome(t, evs)["pendingToolCallIds"])
	history := asInput(snapshot(t, evs))

	// The page ran add_to_cart: its cart has the lamp.
	answer := input("t1", "r2", append(history, map[string]any{"id": "p1", "role": "tool", "toolCallId": "c1", "content": "added lamp"})...)
	answer["tools"] = tools
	answer["state"] = map[string]any{"cart": []string{"lamp"}}
	evs = run(t, h, answer)
	require.Equal(t, []any{"c3"}, outcome(t, evs)["pendingToolCallIds"])
	assert.Equal(t, []string{"lamp"}, seen, "the agent's tool sees the page's cart")
	for _, c := range carts(evs) {
		assert.Equal(t, `{"cart":["lamp"]}`, c, "no snapshot wipes the page's cart")
	}
	assert.NotEmpty(t, carts(evs))
	history = asInput(snapshot(t, evs))

	answer = input("t1", "r3", append(history, map[string]any{"id": "p3", "role": "tool", "toolCallId": "c3", "content": "added desk"})...)
	answer["tools"] = tools
	answer["state"] = map[string]any{"cart": []string{"lamp", "desk"}}
	evs = run(t, h, answer)
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	for _, c := range carts(evs) {
		assert.Equal(t, `{"cart":["lamp","desk"]}`, c)
	}

	// The thread keeps the cart: a turn without state starts from it.
	history = asInput(snapshot(t, evs))
	evs = run(t, h, input("t1", "r4", append(history, userMsg("u2", "thanks"))...))
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	assert.Equal(t, []string{`{"cart":["lamp","desk"]}`}, carts(evs))
}

// A state the handler refuses (WithState's error) refuses the answer with
// 400 and leaves the thread waiting, as it was.
func TestAnswerWithBadPageStateIsRefused(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "add_to_cart", `{"sku":"lamp"}`)),
		scripted.Reply("Done."),
	)
	h := cartHandler(t, m)
	tools := []map[string]any{{"name": "add_to_cart", "description": "Adds to the page's cart."}}
	in := input("t1", "r1", userMsg("u1", "a lamp"))
	in["tools"] = tools
	evs := run(t, h, in)
	history := asInput(snapshot(t, evs))

	answer := input("t1", "r2", append(history, map[string]any{"id": "p1", "role": "tool", "toolCallId": "c1", "content": "added lamp"})...)
	answer["tools"] = tools
	answer["state"] = "not a cart"
	resp := post(t, h, answer)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)

	answer["state"] = map[string]any{"cart": []string{"lamp"}}
	evs = run(t, h, answer)
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	assert.Equal(t, []string{`{"cart":["lamp"]}`}, carts(evs))
}
