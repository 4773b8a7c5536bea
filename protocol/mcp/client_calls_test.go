package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/tool"
)

type ownerKey struct{}

// askedBy is an elicitation handler that records the owner in the context
// of each request it answers ("" for none) and declines.
type askedBy struct {
	mu     sync.Mutex
	owners []string
}

func (a *askedBy) handle(ctx context.Context, _ tool.ElicitRequest) (tool.ElicitResult, error) {
	owner, _ := ctx.Value(ownerKey{}).(string)
	a.mu.Lock()
	a.owners = append(a.owners, owner)
	a.mu.Unlock()
	return tool.ElicitResult{Action: "decline"}, nil
}

func (a *askedBy) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.owners...)
}

// A toolset shared by two users on a protocol before 2026-07-28: a request
// of the server that does not prove which call it belongs to must not reach
// the run of the one call in flight, which is another user's.
func TestUnrelatedServerRequestDoesNotReachAnotherOwnersCall(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "shared", Version: "v0"}, nil)
	srv.AddTool(&sdk.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "waited"}}}, nil
	})
	// A prompt whose server asks for input: the request belongs to no
	// tool call.
	srv.AddPrompt(&sdk.Prompt{Name: "greet"}, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{"type": "object"}})
		if err != nil {
			return nil, err
		}
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: res.Action}}}}, nil
	})
	// Streamable HTTP on a stateful handler negotiates 2025-11-25.
	url := serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)) + "/"
	var asked askedBy
	ts, err := New(Config{Name: "shared", URL: url}, WithElicitation(asked.handle))
	require.NoError(t, err)
	defer ts.Close()
	wait := remote(t, ts, "wait")

	ctxA := context.WithValue(t.Context(), ownerKey{}, "alice")
	callA := make(chan tool.Result, 1)
	go func() {
		res, err := wait.Call(ctxA, "", json.RawMessage(`{}`))
		assert.NoError(t, err)
		callA <- res
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("alice's call did not reach the server")
	}

	ctxB := context.WithValue(t.Context(), ownerKey{}, "bob")
	msgs, err := ts.GetPrompt(ctxB, "greet", nil)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, "decline", msgs[0].Text())
	assert.Equal(t, []string{""}, asked.seen(), "the request reached a handler with a user's values")

	close(release)
	res := <-callA
	assert.Equal(t, "waited", res.Text())
}

// Two users' calls in flight on one toolset, on a protocol before
// 2026-07-28: the server's question during one call reaches that call's
// run, because the server echoes the call's token.
func TestServerRequestReachesTheCallItEchoes(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	wait := tool.MustFunc("wait", "waits", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "waited", nil
	})
	ask := tool.MustFunc("ask", "asks", func(ctx context.Context, _ struct{}) (string, error) {
		res, err := tool.Elicit(ctx, tool.ElicitRequest{Message: "Your name?", Schema: json.RawMessage(`{"type":"object"}`)})
		if err != nil {
			return "", err
		}
		return res.Action, nil
	})
	srv, err := NewServer(t.Context(), tool.NewStatic("s", wait, ask))
	require.NoError(t, err)
	url := serveHTTP(t, srv.Handler(nil)) + "/"
	var asked askedBy
	ts, err := New(Config{Name: "shared", URL: url}, WithElicitation(asked.handle))
	require.NoError(t, err)
	defer ts.Close()

	ctxA := context.WithValue(t.Context(), ownerKey{}, "alice")
	callA := make(chan tool.Result, 1)
	go func() {
		res, err := remote(t, ts, "wait").Call(ctxA, "", json.RawMessage(`{}`))
		assert.NoError(t, err)
		callA <- res
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("alice's call did not reach the server")
	}

	ctxB := context.WithValue(t.Context(), ownerKey{}, "bob")
	res, err := remote(t, ts, "ask").Call(ctxB, "", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, "decline", res.Text())
	assert.Equal(t, []string{"bob"}, asked.seen())

	close(release)
	assert.Equal(t, "waited", (<-callA).Text())
}

// untokenedServer is a third-party server on protocol 2025-11-25 whose tool
// "ask" asks for input during its call without echoing the call's token,
// and whose tool "wait" signals started, then waits for release.
func untokenedServer(t *testing.T) (url string, started, release chan struct{}) {
	t.Helper()
	started, release = make(chan struct{}), make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "third-party", Version: "v0"}, nil)
	obj := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&sdk.Tool{Name: "wait", InputSchema: obj}, func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "waited"}}}, nil
	})
	srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: obj}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{"type": "object"}})
		if err != nil {
			return nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action}}}, nil
	})
	// Streamable HTTP on a stateful handler negotiates 2025-11-25.
	return serveHTTP(t, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)) + "/", started, release
}

// WithSingleUser: a server's request that echoes no token, during the
// only call in flight, pauses that call's run (the default handler,
// InterruptElicitation) and is answered when the run resumes.
func TestSingleUserRoutesAnUntokenedRequestToTheOnlyCall(t *testing.T) {
	url, _, _ := untokenedServer(t)
	ts, err := New(Config{Name: "third-party", URL: url}, WithSingleUser())
	require.NoError(t, err)
	defer ts.Close()
	g := callGraph(t, remote(t, ts, "ask"))

	_, err = g.Invoke(t.Context(), callState{}, graph.WithThread("t1"))
	ie, ok := errors.AsType[*graph.InterruptError](err)
	require.True(t, ok, "want an interrupt, got %v", err)
	require.Len(t, ie.Interrupts, 1)
	q, ok := ie.Interrupts[0].Payload.(Elicitation)
	require.True(t, ok, "payload %T", ie.Interrupts[0].Payload)
	assert.Equal(t, "ask", q.Tool)
	assert.Equal(t, "Your name?", q.Message)

	out, err := g.Resume(t.Context(), "t1", graph.WithResumeValue(tool.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}))
	require.NoError(t, err)
	assert.Equal(t, "accept", out.Out)

	// A handler of its own gets the call's values too.
	var asked askedBy
	ts2, err := New(Config{Name: "third-party", URL: url}, WithSingleUser(), WithElicitation(asked.handle))
	require.NoError(t, err)
	defer ts2.Close()
	res, err := remote(t, ts2, "ask").Call(context.WithValue(t.Context(), ownerKey{}, "alice"), "", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, "decline", res.Text())
	assert.Equal(t, []string{"alice"}, asked.seen())
}

// By default, a request that echoes no token is handled at the toolset's
// level, with no call's values, even when only one call is in flight: the
// run does not pause.
func TestUntokenedRequestReachesNoCallByDefault(t *testing.T) {
	url, _, _ := untokenedServer(t)
	var asked askedBy
	ts, err := New(Config{Name: "third-party", URL: url}, WithElicitation(asked.handle))
	require.NoError(t, err)
	defer ts.Close()
	res, err := remote(t, ts, "ask").Call(context.WithValue(t.Context(), ownerKey{}, "alice"), "", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, "decline", res.Text())
	assert.Equal(t, []string{""}, asked.seen(), "the request reached the call's handler without WithSingleUser")

	ts2, err := New(Config{Name: "third-party", URL: url})
	require.NoError(t, err)
	defer ts2.Close()
	out, err := callGraph(t, remote(t, ts2, "ask")).Invoke(t.Context(), callState{}, graph.WithThread("t1"))
	_, paused := errors.AsType[*graph.InterruptError](err)
	assert.False(t, paused, "the run paused without WithSingleUser")
	assert.NotEqual(t, "accept", out.Out)
}

// WithSingleUser never guesses: with two calls in flight, a request that
// echoes no token reaches neither.
func TestSingleUserDoesNotGuessBetweenTwoCalls(t *testing.T) {
	url, started, release := untokenedServer(t)
	var asked askedBy
	ts, err := New(Config{Name: "third-party", URL: url}, WithSingleUser(), WithElicitation(asked.handle))
	require.NoError(t, err)
	defer ts.Close()

	callA := make(chan tool.Result, 1)
	go func() {
		res, err := remote(t, ts, "wait").Call(context.WithValue(t.Context(), ownerKey{}, "alice"), "", json.RawMessage(`{}`))
		assert.NoError(t, err)
		callA <- res
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("alice's call did not reach the server")
	}

	res, err := remote(t, ts, "ask").Call(context.WithValue(t.Context(), ownerKey{}, "bob"), "", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, "decline", res.Text())
	assert.Equal(t, []string{""}, asked.seen(), "with two calls in flight the request was given to one")

	close(release)
	assert.Equal(t, "waited", (<-callA).Text())
}
