package agui_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

type weatherArgs struct {
	City string `json:"city"`
}

func weather() tool.Tool {
	return tool.MustFunc("weather", "Tells the weather of a city.", func(_ context.Context, in weatherArgs) (string, error) {
		return "sunny in " + in.City, nil
	})
}

func handler(t *testing.T, m model.Model, aopts []agent.Option, hopts ...agui.Option) *agui.Handler {
	t.Helper()
	g, err := agent.NewReAct(m, aopts...)
	require.NoError(t, err)
	h, err := agui.NewHandler(g, hopts...)
	require.NoError(t, err)
	return h
}

// A reply streams as one text message whose ID is the ID the agent's
// conversation gives it, between the steps of the node that wrote it; the
// run closes with the conversation and a success outcome.
func TestTextReplyStreams(t *testing.T) {
	m := scripted.New(scripted.Reply("Hello there, friend").WithUsage(model.Usage{InputTokens: 12, OutputTokens: 4, TotalTokens: 16}))
	h := handler(t, m, nil)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "hi")))

	assert.Equal(t, "r1", evs[0].str("runId"))
	assert.Equal(t, "t1", evs[0].str("threadId"))
	starts := ofType(evs, "TEXT_MESSAGE_START")
	require.Len(t, starts, 1)
	id := starts[0].str("messageId")
	assert.Equal(t, "assistant", starts[0].str("role"))
	assert.Equal(t, "Hello there, friend", text(evs, id))
	assert.Greater(t, len(ofType(evs, "TEXT_MESSAGE_CONTENT")), 1, "the reply streams in pieces")
	assert.Equal(t, []string{"agent"}, stepNames(evs, "STEP_STARTED"))

	msgs := snapshot(t, evs)
	require.Len(t, msgs, 2)
	assert.Equal(t, "u1", msgs[0].ID)
	assert.Equal(t, id, msgs[1].ID, "the snapshot holds the streamed message under the same ID")
	assert.JSONEq(t, `"Hello there, friend"`, string(msgs[1].Content))
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	usage := evs[len(evs)-1]["usage"].([]any)
	require.Len(t, usage, 1)
	u := usage[0].(map[string]any)
	assert.Equal(t, map[string]any{"provider": "scripted", "model": "scripted", "inputTokens": 12.0, "outputTokens": 4.0, "totalTokens": 16.0}, u)
}

func stepNames(evs []event, typ string) []string {
	var out []string
	for _, ev := range ofType(evs, typ) {
		out = append(out, ev.str("stepName"))
	}
	return out
}

// A tool the agent runs streams as a call under the assistant message
// that made it, arguments in pieces, then its result as a tool message;
// the model's answer after it is a second text message.
func TestAgentToolCallAndResult(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "weather", `{"city":"Paris"}`)),
		scripted.Reply("It is sunny."),
	)
	h := handler(t, m, []agent.Option{agent.WithTools(weather())})
	evs := run(t, h, input("t1", "r1", userMsg("u1", "weather?")))

	start := ofType(evs, "TOOL_CALL_START")
	require.Len(t, start, 1)
	assert.Equal(t, "c1", start[0].str("toolCallId"))
	assert.Equal(t, "weather", start[0].str("toolCallName"))
	parent := start[0].str("parentMessageId")
	assert.NotEmpty(t, parent)
	assert.JSONEq(t, `{"city":"Paris"}`, args(evs, "c1"))
	res := ofType(evs, "TOOL_CALL_RESULT")
	require.Len(t, res, 1)
	assert.Equal(t, "c1", res[0].str("toolCallId"))
	assert.Equal(t, "sunny in Paris", res[0].str("content"))
	assert.Equal(t, "tool", res[0].str("role"))

	msgs := snapshot(t, evs)
	require.Len(t, msgs, 4)
	assert.Equal(t, parent, msgs[1].ID, "the calls' parent is the assistant message of the conversation")
	require.Len(t, msgs[1].ToolCalls, 1)
	assert.Equal(t, "weather", msgs[1].ToolCalls[0].Function.Name)
	assert.Equal(t, res[0].str("messageId"), msgs[2].ID, "the result's message is the conversation's tool message")
	assert.Equal(t, "It is sunny.", text(evs, msgs[3].ID))
	assert.Equal(t, []string{"agent", "tools", "agent"}, stepNames(evs, "STEP_STARTED"))
}

// The application's tools are offered to the model; a call of one ends
// the run as a success naming the call, with no result; the next request,
// carrying the client's answer, continues the conversation. Without a
// checkpointer, the request's messages are the whole conversation.
func TestFrontendToolRoundTripStateless(t *testing.T) {
	var offered [][]string
	var seen []string
	m := scripted.New(
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			offered = append(offered, toolNames(req))
			return &model.Response{Message: model.Assistant("", model.ToolCall{ID: "c9", Name: "confirm", Arguments: json.RawMessage(`{"question":"Book it?"}`)})}, nil
		}),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			offered = append(offered, toolNames(req))
			last := req.Messages[len(req.Messages)-1]
			seen = append(seen, string(last.Role)+":"+last.ToolCallID+":"+last.Text())
			return &model.Response{Message: model.Assistant("Booked.")}, nil
		}),
	)
	h := handler(t, m, []agent.Option{agent.WithTools(weather())})
	in := input("t1", "r1", userMsg("u1", "book a table"))
	in["tools"] = []map[string]any{{"name": "confirm", "description": "Asks the user to confirm.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"question": map[string]any{"type": "string"}}}}}
	evs := run(t, h, in)

	assert.Equal(t, []string{"weather", "confirm"}, offered[0])
	assert.Empty(t, ofType(evs, "TOOL_CALL_RESULT"), "the application's call is not answered by the agent")
	assert.Equal(t, map[string]any{"type": "success", "pendingToolCallIds": []any{"c9"}}, outcome(t, evs))
	assert.JSONEq(t, `{"question":"Book it?"}`, args(evs, "c9"))

	// The client answers and sends the conversation again.
	history := asInput(snapshot(t, evs))
	history = append(history, map[string]any{"id": "res1", "role": "tool", "toolCallId": "c9", "content": "yes"})
	in2 := input("t1", "r2", history...)
	in2["tools"] = in["tools"]
	evs2 := run(t, h, in2)
	assert.Equal(t, []string{"tool:c9:yes"}, seen)
	msgs := snapshot(t, evs2)
	assert.Equal(t, "Booked.", strings.Trim(string(msgs[len(msgs)-1].Content), `"`))
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs2))
}

func toolNames(req *model.Request) []string {
	var out []string
	for _, d := range req.Tools {
		out = append(out, d.Name)
	}
	return out
}

// With a checkpointer, the thread waits for the application's answers:
// the next request resumes it with the client's tool message, and the
// model sees each message once. A request that does not answer the call
// is refused with 409, naming it, and changes nothing.
func TestFrontendToolRoundTripCheckpointed(t *testing.T) {
	var reqs [][]string
	record := func(req *model.Request) {
		var ids []string
		for _, m := range req.Messages {
			ids = append(ids, string(m.Role)+":"+m.Text())
		}
		reqs = append(reqs, ids)
	}
	m := scripted.New(
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			record(req)
			return &model.Response{Message: model.Assistant("Let me ask.", model.ToolCall{ID: "c9", Name: "confirm", Arguments: json.RawMessage(`{}`)})}, nil
		}),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			record(req)
			return &model.Response{Message: model.Assistant("Booked.")}, nil
		}),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			record(req)
			return &model.Response{Message: model.Assistant("You are welcome.")}, nil
		}),
	)
	h := handler(t, m, []agent.Option{agent.WithCheckpointer(memory.New())})
	tools := []map[string]any{{"name": "confirm", "description": "Asks the user."}}
	in := input("t1", "r1", userMsg("u1", "book"))
	in["tools"] = tools
	evs := run(t, h, in)
	assert.Equal(t, map[string]any{"type": "success", "pendingToolCallIds": []any{"c9"}}, outcome(t, evs))
	history := asInput(snapshot(t, evs))

	// A new user message instead of the answer: refused.
	bad := input("t1", "r2", append(history, userMsg("u2", "hello?"))...)
	bad["tools"] = tools
	resp := post(t, h, bad)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Contains(t, string(body), `tool call "c9" (confirm)`)

	good := input("t1", "r3", append(history, map[string]any{"id": "res1", "role": "tool", "toolCallId": "c9", "content": "yes"})...)
	good["tools"] = tools
	evs = run(t, h, good)
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"user:book", "assistant:Let me ask.", "tool:yes"}, reqs[1])

	// The next turn sends the whole conversation again, with a new
	// message: only that one is added.
	history = asInput(snapshot(t, evs))
	evs = run(t, h, input("t1", "r4", append(history, userMsg("u3", "thanks"))...))
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"user:book", "assistant:Let me ask.", "tool:yes", "assistant:Booked.", "user:thanks"}, reqs[2])
	msgs := snapshot(t, evs)
	assert.Len(t, msgs, 6)
}

// The application's context reaches the model in the system prompt.
func TestContextReachesTheModel(t *testing.T) {
	var system string
	m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		if req.Messages[0].Role == model.RoleSystem {
			system = req.Messages[0].Text()
		}
		return &model.Response{Message: model.Assistant("ok")}, nil
	}))
	h := handler(t, m, []agent.Option{agent.WithSystemPrompt("You help.")})
	in := input("t1", "r1", userMsg("u1", "hi"))
	in["context"] = []map[string]any{{"description": "the user's time zone", "value": "Europe/Paris"}}
	run(t, h, in)
	assert.True(t, strings.HasPrefix(system, "You help."), system)
	assert.Contains(t, system, "- the user's time zone: Europe/Paris")
}

// A question of the agent (nodes.AskUser) ends the run with the interrupt
// outcome; a resume entry answers it, and the run goes on with the answer.
// Abandoning it instead drops the question and runs the new turn.
func TestInterruptAndResume(t *testing.T) {
	ask := func() scripted.Step {
		return scripted.CallTools(scripted.CallWithID("q1", nodes.AskUserName, `{"question":"Which day?","choices":["Friday","Saturday"]}`))
	}
	var answers []string
	m := scripted.New(
		ask(),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			answers = append(answers, req.Messages[len(req.Messages)-1].Text())
			return &model.Response{Message: model.Assistant("Booked for Friday.")}, nil
		}),
		ask(),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			answers = append(answers, req.Messages[len(req.Messages)-1].Text())
			return &model.Response{Message: model.Assistant("Fine.")}, nil
		}),
	)
	h := handler(t, m, []agent.Option{agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(memory.New())})
	evs := run(t, h, input("t1", "r1", userMsg("u1", "book")))
	o := outcome(t, evs)
	require.Equal(t, "interrupt", o["type"])
	ints := o["interrupts"].([]any)
	require.Len(t, ints, 1)
	in := ints[0].(map[string]any)
	assert.Equal(t, "input_required", in["reason"])
	assert.Equal(t, "Which day?", in["message"])
	assert.Equal(t, "q1", in["toolCallId"])
	assert.Equal(t, map[string]any{"type": "string", "examples": []any{"Friday", "Saturday"}}, in["responseSchema"])
	id := in["id"].(string)

	// Without an answer: refused.
	history := asInput(snapshot(t, evs))
	resp := post(t, h, input("t1", "r2", history...))
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode)

	next := input("t1", "r3", history...)
	next["resume"] = []map[string]any{{"interruptId": id, "status": "resolved", "payload": "Friday"}}
	evs = run(t, h, next)
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	assert.Equal(t, []string{"Friday"}, answers)
	// The call is of the earlier run: its answer comes in the snapshot.
	assert.Empty(t, ofType(evs, "TOOL_CALL_RESULT"))
	var answer string
	for _, m := range snapshot(t, evs) {
		if m.Role == "tool" && m.ToolCallID == "q1" {
			answer = string(m.Content)
		}
	}
	assert.Equal(t, `"Friday"`, answer)

	// Asked again, the user abandons the question and writes instead.
	history = asInput(snapshot(t, evs))
	evs = run(t, h, input("t1", "r4", append(history, userMsg("u2", "again"))...))
	id = outcome(t, evs)["interrupts"].([]any)[0].(map[string]any)["id"].(string)
	history = asInput(snapshot(t, evs))
	next = input("t1", "r5", append(history, userMsg("u3", "never mind"))...)
	next["resume"] = []map[string]any{{"interruptId": id, "status": "cancelled"}}
	evs = run(t, h, next)
	assert.Equal(t, map[string]any{"type": "success"}, outcome(t, evs))
	assert.Equal(t, []string{"Friday", "never mind"}, answers)
	msgs := snapshot(t, evs)
	require.Len(t, msgs, 9)
	require.Len(t, msgs[5].ToolCalls, 1)
	assert.Equal(t, msgs[5].ToolCalls[0].ID, msgs[6].ToolCallID, "the abandoned question's call is answered")
	assert.Contains(t, msgs[6].Error, "abandoned")
	assert.Equal(t, "u3", msgs[7].ID)
}

// A failing run ends with RUN_ERROR carrying a code and a message, after
// RUN_STARTED; nothing follows it. By default the message tells the kind
// of failure and nothing of the error's text (which may name files);
// WithErrorText words it.
func TestRunErrorReported(t *testing.T) {
	m := scripted.New(scripted.Fail(errors.New("provider exploded reading /etc/x")))
	h := handler(t, m, nil)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "hi")))
	last := evs[len(evs)-1]
	require.Equal(t, "RUN_ERROR", last.typ())
	assert.Equal(t, "The agent failed.", last.str("message"))
	assert.Equal(t, "agent_error", last.str("code"))

	told := handler(t, scripted.New(scripted.Fail(errors.New("provider exploded"))), nil,
		agui.WithErrorText(func(err error) string { return "sorry: " + err.Error() }))
	evs = run(t, told, input("t1", "r1", userMsg("u1", "hi")))
	assert.Contains(t, evs[len(evs)-1].str("message"), "sorry: ")
	assert.Contains(t, evs[len(evs)-1].str("message"), "provider exploded")
}

// Requests the handler cannot run are refused before any stream, with a
// status and a message that names the problem.
func TestBadRequestsRefused(t *testing.T) {
	h := handler(t, scripted.New(), nil, agui.WithMaxRequestBytes(2048))
	cases := []struct {
		name   string
		body   string
		status int
		want   string
	}{
		{"not JSON", `{"threadId":`, 400, "not a JSON object"},
		{"no thread", `{"runId":"r","messages":[]}`, 400, `no "threadId"`},
		{"no messages", `{"threadId":"t","runId":"r"}`, 400, `no "messages"`},
		{"wrong type", `{"threadId":"t","runId":"r","messages":{}}`, 400, "messages: a JSON object where the protocol wants an array"},
		{"message without id", `{"threadId":"t","runId":"r","messages":[{"role":"user","content":"x"}]}`, 400, "message 0 has no id"},
		{"duplicate id", `{"threadId":"t","runId":"r","messages":[{"id":"a","role":"user","content":"x"},{"id":"a","role":"user","content":"y"}]}`, 400, `"a" is used twice`},
		{"user without content", `{"threadId":"t","runId":"r","messages":[{"id":"a","role":"user"}]}`, 400, `message "a": content is required`},
		{"bad image data", `{"threadId":"t","runId":"r","messages":[{"id":"a","role":"user","content":[{"type":"image","source":{"type":"data","value":"%%%","mimeType":"image/png"}}]}]}`, 400, "not base64"},
		{"tool without call", `{"threadId":"t","runId":"r","messages":[{"id":"a","role":"tool","content":"x"}]}`, 400, "toolCallId"},
		{"bad arguments", `{"threadId":"t","runId":"r","messages":[{"id":"a","role":"assistant","toolCalls":[{"id":"c","type":"function","function":{"name":"f","arguments":"not json"}}]}]}`, 400, `call "c" are not JSON`},
		{"bad tool schema", `{"threadId":"t","runId":"r","messages":[],"tools":[{"name":"x","description":"d","parameters":{"type":12}}]}`, 400, `tool "x"`},
		{"bad resume", `{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"maybe"}]}`, 400, `status "maybe"`},
		{"major version", `{"threadId":"t","runId":"r","messages":[],"protocolVersion":"2.0"}`, 400, `"2.0" is not supported`},
		{"too large", `{"threadId":"t","runId":"r","messages":[{"id":"a","role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`, 413, "larger than 2048"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := post(t, h, c.body)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, c.status, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), c.want)
		})
	}

	req := httptest.NewRequest(http.MethodGet, "/agent", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "POST", rec.Header().Get("Allow"))

}

// A body must be declared JSON: a request without Content-Type, or with
// another type (what a page of another site can send without the
// browser asking the server first), is refused with 415 and runs nothing.
func TestBodyNotDeclaredJSONIsRefused(t *testing.T) {
	ran := false
	m := scripted.New(scripted.Func(func(*model.Request) (*model.Response, error) {
		ran = true
		return &model.Response{Message: model.Assistant("ok")}, nil
	}))
	h := handler(t, m, nil)
	body := `{"threadId":"t","runId":"r","messages":[{"id":"u1","role":"user","content":"hi"}]}`
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"} {
		req := httptest.NewRequest(http.MethodPost, "/agent", strings.NewReader(body))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusUnsupportedMediaType, rec.Code, "Content-Type %q", ct)
		assert.Contains(t, rec.Body.String(), "application/json", "Content-Type %q", ct)
	}
	assert.False(t, ran, "no run started")

	req := httptest.NewRequest(http.MethodPost, "/agent", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.True(t, ran)
}

// Members and roles the handler does not know are left out, as the
// protocol asks, and so are parts the agent cannot use.
func TestUnknownMaterialIgnored(t *testing.T) {
	var got []model.Message
	m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		got = req.Messages
		return &model.Response{Message: model.Assistant("ok")}, nil
	}))
	h := handler(t, m, nil)
	body := `{"threadId":"t","runId":"r","futureMember":1,"messages":[
		{"id":"a1","role":"activity","activityType":"x","content":{}},
		{"id":"u1","role":"user","content":[{"type":"text","text":"look"},{"type":"hologram"},
			{"type":"image","source":{"type":"data","value":"iVBORw0K","mimeType":"image/png"}},
			{"type":"audio","source":{"type":"url","value":"http://127.0.0.1/a.mp3"}},
			{"type":"image","source":{"type":"teleport","value":"x"}}]}]}`
	evs := run(t, h, body)
	require.Equal(t, "RUN_FINISHED", evs[len(evs)-1].typ())
	require.Len(t, got, 1)
	parts := got[0].Content
	require.Len(t, parts, 2)
	assert.Equal(t, "look", parts[0].Text)
	assert.Equal(t, model.PartImage, parts[1].Type)
	assert.Equal(t, "image/png", parts[1].MIMEType)
}

// A client that goes away cancels the run; the handler returns and leaves
// nothing running (goleak checks the package).
func TestClientGoneCancelsRun(t *testing.T) {
	started := make(chan struct{})
	var once sync.Once
	m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant("", model.ToolCall{ID: "c1", Name: "slow", Arguments: json.RawMessage(`{}`)})}, nil
	}))
	slow := tool.MustFunc("slow", "Takes its time.", func(ctx context.Context, _ struct{}) (string, error) {
		once.Do(func() { close(started) })
		<-ctx.Done()
		return "", ctx.Err()
	})
	h := handler(t, m, []agent.Option{agent.WithTools(slow)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *http.Response)
	go func() { done <- postCtx(t, ctx, h, input("t1", "r1", userMsg("u1", "go"))) }()
	<-started
	cancel()
	select {
	case resp := <-done:
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		evs := parseSSE(t, raw)
		last := evs[len(evs)-1]
		assert.Equal(t, "RUN_ERROR", last.typ())
		assert.Equal(t, "cancelled", last.str("code"))
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not return after the client went away")
	}
}

// chatWithCart is a state with more than a conversation.
type chatWithCart struct {
	nodes.Chat
	Cart []string `json:"cart"`
}

// addItemTool adds an item to a chatWithCart's cart.
func addItemTool() tool.Tool {
	return tool.MustFunc("add_item", "Adds an item to the cart.", func(ctx context.Context, in struct {
		Item string `json:"item"`
	}) (tool.Result, error) {
		return tool.Result{Content: []model.Part{model.TextPart("added")}, Actions: tool.Actions{Update: func(s *chatWithCart) {
			s.Cart = append(s.Cart, in.Item)
		}}}, nil
	})
}

// WithState applies the client's state before the turn; WithStateSnapshots
// shows the state after each superstep in which its view changed.
func TestStateInAndOut(t *testing.T) {
	addItem := addItemTool()
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "add_item", `{"item":"pear"}`)),
		scripted.Reply("Added."),
	)
	g, err := agent.ReAct[chatWithCart](m, agent.WithTools(addItem))
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

	in := input("t1", "r1", userMsg("u1", "add a pear"))
	in["state"] = map[string]any{"cart": []string{"apple"}}
	evs := run(t, h, in)
	var carts []string
	for _, ev := range ofType(evs, "STATE_SNAPSHOT") {
		b, _ := json.Marshal(ev["snapshot"])
		carts = append(carts, string(b))
	}
	assert.Equal(t, []string{`{"cart":["apple"]}`, `{"cart":["apple","pear"]}`}, carts)

	in["state"] = "not an object"
	resp := post(t, h, in)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), "the state")

	_, err = agui.NewHandler(g, agui.WithState(func(context.Context, json.RawMessage, *agent.State) error { return nil }))
	assert.ErrorContains(t, err, "not the handler's state")
}

// A reply with reasoning streams it as a reasoning span before the text.
func TestReasoningStreams(t *testing.T) {
	msg := model.Message{Role: model.RoleAssistant, Content: []model.Part{model.ReasoningPart("thinking hard", nil), model.TextPart("42")}}
	h := handler(t, scripted.New(scripted.Respond(msg)), nil)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "answer?")))
	got := types(ofType(evs, "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_END", "REASONING_END", "TEXT_MESSAGE_START"))
	assert.Equal(t, []string{"REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_END", "REASONING_END", "TEXT_MESSAGE_START"}, got)
	var b strings.Builder
	for _, ev := range ofType(evs, "REASONING_MESSAGE_CONTENT") {
		b.WriteString(ev.str("delta"))
	}
	assert.Equal(t, "thinking hard", b.String())
}

// A handler refuses a nil graph and bad options when it is built.
func TestNewHandlerRefusesBadOptions(t *testing.T) {
	_, err := agui.NewHandler[agent.State](nil)
	assert.ErrorContains(t, err, "the graph is nil")
	g, err := agent.NewReAct(scripted.New())
	require.NoError(t, err)
	_, err = agui.NewHandler(g, agui.WithMaxRequestBytes(0), agui.WithKeepAlive(-time.Second))
	assert.ErrorContains(t, err, "WithMaxRequestBytes(0)")
	assert.ErrorContains(t, err, "WithKeepAlive(-1s)")
}

// InputFrom gives the run's nodes and tools the request: here a tool
// reads the application's forwarded properties.
func TestInputFromRun(t *testing.T) {
	whoami := tool.MustFunc("whoami", "Names the user.", func(ctx context.Context, _ struct{}) (string, error) {
		in := agui.InputFrom(ctx)
		if in == nil {
			return "", errors.New("no input")
		}
		var p struct {
			User string `json:"user"`
		}
		_ = json.Unmarshal(in.ForwardedProps, &p)
		return p.User, nil
	})
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "whoami", `{}`)), scripted.Reply("hi"))
	h := handler(t, m, []agent.Option{agent.WithTools(whoami)})
	in := input("t1", "r1", userMsg("u1", "who am I?"))
	in["forwardedProps"] = map[string]any{"user": "ada"}
	evs := run(t, h, in)
	res := ofType(evs, "TOOL_CALL_RESULT")
	require.Len(t, res, 1)
	assert.Equal(t, "ada", res[0].str("content"))
	assert.Nil(t, agui.InputFrom(context.Background()))
}

// A model that does not stream (the node is told not to) still shows its
// reply, whole, as a text message and calls.
func TestNonStreamingReplyShown(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "weather", `{"city":"Oslo"}`)).WithText("Checking."),
		scripted.Reply("Snow."),
	)
	h := handler(t, m, []agent.Option{agent.WithTools(weather()), agent.WithLLMOptions(nodes.WithStreaming(false))})
	evs := run(t, h, input("t1", "r1", userMsg("u1", "weather?")))
	msgs := snapshot(t, evs)
	require.Len(t, msgs, 4)
	assert.Equal(t, "Checking.", text(evs, msgs[1].ID))
	assert.JSONEq(t, `{"city":"Oslo"}`, args(evs, "c1"))
	assert.Equal(t, "Snow.", text(evs, msgs[3].ID))
	res := ofType(evs, "TOOL_CALL_RESULT")
	require.Len(t, res, 1)
	assert.Equal(t, "sunny in Oslo", res[0].str("content"))
}

var _ = graph.END
