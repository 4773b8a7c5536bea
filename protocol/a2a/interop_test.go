package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/protocol/a2a"
)

// legacyOnly answers the 0.3 methods as an agent of that generation does,
// and every other method with -32601 (method not found).
func legacyOnly(w http.ResponseWriter, r rpcReq, _ int) {
	const task = `{"kind":"task","id":"t-1","contextId":"c-1","status":{"state":"completed"},"artifacts":[{"artifactId":"a","parts":[{"kind":"text","text":"done"}]}]}`
	switch r.Method {
	case "message/send", "tasks/get", "tasks/cancel":
		result(w, r.ID, task)
	case "message/stream", "tasks/resubscribe":
		sse(w, r.ID, task)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, r.ID)
	}
}

func hello() a2a.SendRequest {
	return a2a.SendRequest{Message: a2a.Message{Parts: []a2a.Part{a2a.TextPart("hi")}}}
}

// A card shaped like 0.3 (a top-level url, no supportedInterfaces) that
// claims protocol 1.0 is spoken to in 0.3: the claim is common among 0.3
// agents, whose servers know only the 0.3 methods.
func TestClientSpeaks03ToALegacyShapedCardThatClaims10(t *testing.T) {
	f := newFake(t, func(u string) string {
		return fmt.Sprintf(`{"name":"Old","protocolVersion":"1.0","url":"%s/rpc","capabilities":{"streaming":true}}`, u)
	}, legacyOnly)
	c, err := a2a.NewClient(f.URL)
	require.NoError(t, err)
	ev, err := c.SendMessage(context.Background(), hello())
	require.NoError(t, err)
	require.NotNil(t, ev.Task)
	assert.Equal(t, a2a.StateCompleted, ev.Task.Status.State)
	assert.Equal(t, []string{"message/send"}, f.methods(), "no 1.0 method was tried")
	assert.Equal(t, "0.3", f.requests()[0].Header.Get("A2A-Version"))
	assert.Equal(t, "/rpc", f.requests()[0].Path)
}

// A card that offers 1.0 in supportedInterfaces keeps it, though its
// top-level url (for 0.3 clients) is there too.
func TestClientPrefersSupportedInterfacesOverTheLegacyURL(t *testing.T) {
	f := newFake(t, func(u string) string {
		return fmt.Sprintf(`{"name":"Both","protocolVersion":"1.0","url":"%s/old",
			"supportedInterfaces":[{"url":"%s/new","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`, u, u)
	}, func(w http.ResponseWriter, r rpcReq, _ int) { result(w, r.ID, completed10) })
	c, err := a2a.NewClient(f.URL)
	require.NoError(t, err)
	_, err = c.SendMessage(context.Background(), hello())
	require.NoError(t, err)
	assert.Equal(t, []string{"SendMessage"}, f.methods())
	assert.Equal(t, "/new", f.requests()[0].Path)
}

// An agent whose card offers 1.0 but that answers the 1.0 methods with
// -32601 is spoken to in 0.3: the request is sent again once, and the
// client stays with 0.3 afterwards.
func TestClientFallsBackTo03WhenThe10MethodIsNotFound(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(c *a2a.Client) error
		want []string
	}{
		{"send", func(c *a2a.Client) error {
			_, err := c.SendMessage(context.Background(), hello())
			return err
		}, []string{"SendMessage", "message/send"}},
		{"stream", func(c *a2a.Client) error {
			n := 0
			for ev, err := range c.SendStreamingMessage(context.Background(), hello()) {
				if err != nil {
					return err
				}
				if ev.Task == nil {
					return fmt.Errorf("want a task, got %+v", ev)
				}
				n++
			}
			if n != 1 {
				return fmt.Errorf("want one event, got %d", n)
			}
			return nil
		}, []string{"SendStreamingMessage", "message/stream"}},
		{"get", func(c *a2a.Client) error {
			_, err := c.GetTask(context.Background(), "t-1", nil)
			return err
		}, []string{"GetTask", "tasks/get"}},
		{"cancel", func(c *a2a.Client) error {
			_, err := c.CancelTask(context.Background(), "t-1")
			return err
		}, []string{"CancelTask", "tasks/cancel"}},
		{"subscribe", func(c *a2a.Client) error {
			for _, err := range c.SubscribeToTask(context.Background(), "t-1") {
				if err != nil {
					return err
				}
			}
			return nil
		}, []string{"SubscribeToTask", "tasks/resubscribe"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, card10(true), legacyOnly)
			c, err := a2a.NewClient(f.URL)
			require.NoError(t, err)
			require.NoError(t, tc.call(c))
			assert.Equal(t, tc.want, f.methods())
			assert.Equal(t, "0.3", f.requests()[1].Header.Get("A2A-Version"))
			var p map[string]any
			require.NoError(t, json.Unmarshal(f.requests()[1].Params, &p))
			if msg, ok := p["message"].(map[string]any); ok {
				assert.Equal(t, "message", msg["kind"], "the message is sent again in 0.3 shape")
			}

			// Remembered: the next call goes to 0.3 at once.
			_, err = c.GetTask(context.Background(), "t-1", nil)
			require.NoError(t, err)
			assert.Equal(t, "tasks/get", f.methods()[len(f.methods())-1])
			assert.Len(t, f.methods(), len(tc.want)+1)
		})
	}
}

// An agent that knows neither generation's method gets one retry, not a
// loop, and its -32601 is the caller's error.
func TestClientFallsBackOnlyOnce(t *testing.T) {
	f := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, _ int) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, r.ID)
	})
	c, err := a2a.NewClient(f.URL)
	require.NoError(t, err)
	_, err = c.SendMessage(context.Background(), hello())
	var rpcErr *a2a.RPCError
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, a2a.RPCMethodNotFound, rpcErr.Code)
	assert.Equal(t, "message/send", rpcErr.Method)
	assert.Equal(t, []string{"SendMessage", "message/send"}, f.methods())

	// Other errors of a 1.0 method are the caller's, with no retry in 0.3.
	g := newFake(t, card10(false), func(w http.ResponseWriter, r rpcReq, _ int) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"Task not found"}}`, r.ID)
	})
	c, err = a2a.NewClient(g.URL)
	require.NoError(t, err)
	_, err = c.GetTask(context.Background(), "x", nil)
	require.ErrorIs(t, err, a2a.ErrTaskNotFound)
	assert.Equal(t, []string{"GetTask"}, g.methods())
}
