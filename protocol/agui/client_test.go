package agui_test

import (
	"context"
	"errors"
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
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// serve starts an AG-UI server for h on 127.0.0.1 and returns a client of it.
func serve(t *testing.T, h http.Handler, opts ...agui.ClientOption) *agui.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(srv.Client().CloseIdleConnections)
	c, err := agui.NewClient(srv.URL+"/agent", append([]agui.ClientOption{agui.WithHTTPClient(srv.Client())}, opts...)...)
	require.NoError(t, err)
	return c
}

func call(t *testing.T, tl tool.Tool, args string) tool.Result {
	t.Helper()
	return tool.Invoke(context.Background(), tl, model.ToolCall{ID: "c", Name: tool.Name(tl), Arguments: []byte(args)})
}

func threadOf(t *testing.T, res tool.Result) string {
	t.Helper()
	text := res.Text()
	i := strings.LastIndex(text, "[thread_id: ")
	require.GreaterOrEqual(t, i, 0, text)
	return strings.TrimSuffix(text[i+len("[thread_id: "):], "]")
}

// Run yields a run's events as the server sends them, ending with its
// last.
func TestClientRunYieldsEvents(t *testing.T) {
	m := scripted.New(scripted.Reply("Hello there"))
	c := serve(t, handler(t, m, nil))
	var typesSeen []string
	var text strings.Builder
	for ev, err := range c.Run(context.Background(), &agui.RunInput{Messages: []agui.Message{{ID: "u1", Role: "user", Content: []byte(`"hi"`)}}}) {
		require.NoError(t, err)
		typesSeen = append(typesSeen, string(ev.Type))
		if ev.Type == "TEXT_MESSAGE_CONTENT" {
			text.WriteString(ev.Delta)
		}
		if ev.Type == "RUN_FINISHED" {
			require.NotNil(t, ev.Outcome)
			assert.Equal(t, "success", ev.Outcome.Type)
		}
		assert.NotEmpty(t, ev.Raw)
	}
	assert.Equal(t, "Hello there", text.String())
	assert.Equal(t, "RUN_STARTED", typesSeen[0])
	assert.Equal(t, "RUN_FINISHED", typesSeen[len(typesSeen)-1])
}

// A remote agent as a tool: its answer is the result, and the next call
// with the thread continues the conversation, the agent seeing the
// earlier exchange.
func TestRemoteAgentTool(t *testing.T) {
	var seen [][]string
	answer := func(text string) scripted.Step {
		return scripted.Func(func(req *model.Request) (*model.Response, error) {
			var roles []string
			for _, m := range req.Messages {
				roles = append(roles, string(m.Role)+":"+m.Text())
			}
			seen = append(seen, roles)
			return &model.Response{Message: model.Assistant(text)}, nil
		})
	}
	c := serve(t, handler(t, scripted.New(answer("Paris."), answer("About 2.1 million.")), nil))
	tl, err := c.Tool("geographer", "Answers questions about places.")
	require.NoError(t, err)

	res := call(t, tl, `{"task":"Capital of France?"}`)
	require.False(t, res.IsError, res.Text())
	assert.True(t, strings.HasPrefix(res.Text(), "Paris."), res.Text())
	thread := threadOf(t, res)
	reply := res.Details.(agui.Reply)
	assert.Equal(t, "Paris.", reply.Answer)
	assert.Equal(t, "success", reply.Outcome.Type)

	res = call(t, tl, `{"task":"Its population?","thread_id":"`+thread+`"}`)
	require.False(t, res.IsError, res.Text())
	assert.True(t, strings.HasPrefix(res.Text(), "About 2.1 million."))
	assert.Equal(t, thread, threadOf(t, res))
	require.Len(t, seen, 2)
	assert.Equal(t, []string{"user:Capital of France?", "assistant:Paris.", "user:Its population?"}, seen[1])
}

// A remote agent that asks a question: the tool relays it, and the next
// call with the thread answers it.
func TestRemoteAgentQuestion(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("q1", nodes.AskUserName, `{"question":"Which city?"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("Booked in " + req.Messages[len(req.Messages)-1].Text() + ".")}, nil
		}),
	)
	c := serve(t, handler(t, m, []agent.Option{agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(memory.New())}))
	tl, err := c.Tool("booker", "Books hotels.")
	require.NoError(t, err)
	res := call(t, tl, `{"task":"Book a hotel"}`)
	require.False(t, res.IsError, res.Text())
	assert.True(t, strings.HasPrefix(res.Text(), "The agent asks: Which city?"), res.Text())
	thread := threadOf(t, res)

	res = call(t, tl, `{"task":"Lyon","thread_id":"`+thread+`"}`)
	require.False(t, res.IsError, res.Text())
	assert.True(t, strings.HasPrefix(res.Text(), "Booked in Lyon."), res.Text())
}

// Failures come back as error results that say what happened: the agent's
// error, a refused request, a server that is gone.
func TestRemoteAgentFailures(t *testing.T) {
	c := serve(t, handler(t, scripted.New(scripted.Fail(errors.New("model down"))), nil,
		agui.WithErrorText(func(err error) string { return err.Error() })))
	tl, err := c.Tool("broken", "Fails.")
	require.NoError(t, err)
	res := call(t, tl, `{"task":"anything"}`)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text(), "the agent failed: ")
	assert.Contains(t, res.Text(), "model down")

	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	defer notFound.Client().CloseIdleConnections()
	c2, err := agui.NewClient(notFound.URL+"/agent", agui.WithHTTPClient(notFound.Client()))
	require.NoError(t, err)
	tl2, err := c2.Tool("missing", "Is not there.")
	require.NoError(t, err)
	res = call(t, tl2, `{"task":"anything"}`)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text(), "refused the run: 404")

	var refused *agui.RefusedError
	for _, err := range c2.Run(context.Background(), &agui.RunInput{}) {
		require.ErrorAs(t, err, &refused)
	}
	assert.Equal(t, http.StatusNotFound, refused.Status)

	_, err = agui.NewClient("ftp://127.0.0.1/x")
	assert.ErrorContains(t, err, "not an http or https URL")
}

// A stream cut before the run's end is an error, not a quiet end.
func TestClientTruncatedStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\n\n: keep-alive\n\ndata: {\"type\":\"TEXT_MESSAGE_START\",\n"))
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	c, err := agui.NewClient(srv.URL, agui.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	var got []string
	var last error
	for ev, err := range c.Run(context.Background(), &agui.RunInput{}) {
		if err != nil {
			last = err
			continue
		}
		got = append(got, string(ev.Type))
	}
	assert.Equal(t, []string{"RUN_STARTED"}, got)
	assert.Error(t, last)
}

// A stream that stops after whole events, before the run's last, ends
// with ErrTruncated.
func TestClientStreamEndsEarly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t\",\"runId\":\"r\"}\r\n\r\n"))
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	c, err := agui.NewClient(srv.URL, agui.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	var last error
	n := 0
	for _, err := range c.Run(context.Background(), &agui.RunInput{}) {
		if err != nil {
			last = err
		} else {
			n++
		}
	}
	assert.Equal(t, 1, n)
	assert.ErrorIs(t, last, agui.ErrTruncated)
}

// A server that replays a thread's earlier runs before the requested one:
// the sequence goes on to the requested run's end, past a replayed run's
// end and failure.
func TestClientReplayedRuns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"RUN_STARTED","threadId":"t","runId":"old1"}`,
			`{"type":"RUN_FINISHED","threadId":"t","runId":"old1"}`,
			`{"type":"RUN_STARTED","threadId":"t","runId":"old2"}`,
			`{"type":"RUN_ERROR","message":"that one failed"}`,
			`{"type":"RUN_STARTED","threadId":"t","runId":"mine"}`,
			`{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`,
			`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"now"}`,
			`{"type":"TEXT_MESSAGE_END","messageId":"m"}`,
			`{"type":"RUN_FINISHED","threadId":"t","runId":"mine"}`,
		} {
			_, _ = w.Write([]byte("data: " + ev + "\n\n"))
		}
	}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	c, err := agui.NewClient(srv.URL, agui.WithHTTPClient(srv.Client()))
	require.NoError(t, err)
	var got []string
	for ev, err := range c.Run(context.Background(), &agui.RunInput{ThreadID: "t", RunID: "mine"}) {
		require.NoError(t, err)
		got = append(got, string(ev.Type)+":"+ev.RunID)
	}
	require.Len(t, got, 9)
	assert.Equal(t, "RUN_FINISHED:mine", got[8])
}

// A transport error does not repeat the endpoint's URL, whose query may
// hold a credential.
func TestClientErrorHidesURL(t *testing.T) {
	ln := httptest.NewServer(http.NotFoundHandler())
	addr := ln.URL
	ln.Close() // nothing listens there now
	c, err := agui.NewClient(addr + "/agent?token=SECRET")
	require.NoError(t, err)
	tl, err := c.Tool("gone", "Is not there.")
	require.NoError(t, err)
	res := call(t, tl, `{"task":"x"}`)
	assert.True(t, res.IsError)
	assert.NotContains(t, res.Text(), "SECRET")
	assert.Contains(t, res.Text(), "could not be run")
}

// A remote agent that waits for results of tools (a worker's tool left to
// the caller) cannot be answered with text: the tool says so, and the next
// call abandons the wait and sends its task as a new request.
func TestRemoteAgentWaitingForToolResults(t *testing.T) {
	pick, err := tool.NewDeclaration(model.ToolDefinition{Name: "pick", Description: "The user picks.", InputSchema: []byte(`{"type":"object"}`)})
	require.NoError(t, err)
	worker, err := agent.NewReAct(scripted.New(scripted.CallTools(scripted.CallWithID("p1", "pick", `{}`))), agent.WithTools(pick))
	require.NoError(t, err)
	var last string
	boss := scripted.New(
		scripted.CallTools(scripted.CallWithID("h1", "worker", `{"task":"pick one"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			last = req.Messages[len(req.Messages)-1].Text()
			return &model.Response{Message: model.Assistant("Fresh start.")}, nil
		}),
	)
	g, err := agent.NewSupervisor(boss, []agent.Worker{{Name: "worker", Description: "Picks.", Agent: worker}}, agent.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	h, err := agui.NewHandler(g)
	require.NoError(t, err)
	c := serve(t, h)
	tl, err := c.Tool("remote", "A remote supervisor.")
	require.NoError(t, err)

	res := call(t, tl, `{"task":"start"}`)
	require.False(t, res.IsError, res.Text())
	assert.Contains(t, res.Text(), "waits for results of tools that this tool cannot run")
	thread := threadOf(t, res)

	res = call(t, tl, `{"task":"something else","thread_id":"`+thread+`"}`)
	require.False(t, res.IsError, res.Text())
	assert.True(t, strings.HasPrefix(res.Text(), "Fresh start."), res.Text())
	assert.Equal(t, "something else", last)
}
