package agui_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
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

// chunkModel streams the chunk lists it is given, one per call, exactly
// as given (providers differ in how they number and name calls).
type chunkModel struct {
	mu      sync.Mutex
	replies [][]model.Chunk
}

func (m *chunkModel) next() []model.Chunk {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.replies[0]
	m.replies = m.replies[1:]
	return c
}

func (m *chunkModel) Generate(context.Context, *model.Request) (*model.Response, error) {
	var acc model.Accumulator
	for _, c := range m.next() {
		acc.Add(c)
	}
	return acc.Response(), nil
}

func (m *chunkModel) Stream(context.Context, *model.Request) iter.Seq2[model.Chunk, error] {
	cs := m.next()
	return func(yield func(model.Chunk, error) bool) {
		for _, c := range cs {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func callChunk(index int, id, name, args string) model.Chunk {
	return model.Chunk{ToolCall: &model.ToolCallDelta{Index: index, ID: id, Name: name, Arguments: args}}
}

// A provider that sends each call at index 0, told apart by its ID (as
// model.Accumulator reads it): each call streams its own arguments.
func TestCallsSharingAnIndexStreamApart(t *testing.T) {
	m := &chunkModel{replies: [][]model.Chunk{
		{{Text: "Checking."}, callChunk(0, "a", "weather", `{"city":"Paris"}`), callChunk(0, "b", "weather", `{"city":"Oslo"}`)},
		{{Text: "Done."}},
	}}
	h := handler(t, m, []agent.Option{agent.WithTools(weather())})
	evs := run(t, h, input("t1", "r1", userMsg("u1", "weather?")))

	assert.JSONEq(t, `{"city":"Paris"}`, args(evs, "a"))
	assert.JSONEq(t, `{"city":"Oslo"}`, args(evs, "b"))
	reply := snapshot(t, evs)[1]
	for _, ev := range ofType(evs, "TOOL_CALL_START") {
		assert.Equal(t, reply.ID, ev.str("parentMessageId"), "call %s", ev.str("toolCallId"))
	}
	assert.Len(t, ofType(evs, "TOOL_CALL_START"), 2)
}

// Calls the conversation holds under another ID than the stream gave
// them (none, or one an earlier call used) are started under the reply
// before they are answered or named pending.
func TestCallsRenamedByTheNodeAreStarted(t *testing.T) {
	t.Run("no id, pending", func(t *testing.T) {
		m := &chunkModel{replies: [][]model.Chunk{{{Text: "Let me ask."}, callChunk(0, "", "confirm", `{}`)}}}
		h := handler(t, m, nil)
		in := input("t1", "r1", userMsg("u1", "book"))
		in["tools"] = []map[string]any{{"name": "confirm", "description": "Asks the user."}}
		evs := run(t, h, in)
		pending := outcome(t, evs)["pendingToolCallIds"].([]any)
		require.Len(t, pending, 1)
		starts := ofType(evs, "TOOL_CALL_START")
		require.Len(t, starts, 1, "the pending call was started in the run")
		assert.Equal(t, pending[0], starts[0]["toolCallId"])
		assert.Equal(t, snapshot(t, evs)[1].ID, starts[0].str("parentMessageId"))
	})
	t.Run("reused id, run", func(t *testing.T) {
		m := &chunkModel{replies: [][]model.Chunk{
			{callChunk(0, "c1", "weather", `{"city":"Rome"}`)},
			{{Text: "Also Oslo."}, callChunk(0, "c1", "weather", `{"city":"Oslo"}`)},
			{{Text: "Done."}},
		}}
		h := handler(t, m, []agent.Option{agent.WithTools(weather())})
		evs := run(t, h, input("t1", "r1", userMsg("u1", "weather?")))
		msgs := snapshot(t, evs)
		require.Len(t, msgs, 6)
		second := msgs[3]
		require.Len(t, second.ToolCalls, 1)
		renamed := second.ToolCalls[0].ID
		require.NotEqual(t, "c1", renamed)
		var start event
		for _, ev := range ofType(evs, "TOOL_CALL_START") {
			if ev.str("toolCallId") == renamed {
				start = ev
			}
		}
		require.NotNil(t, start, "the renamed call is started")
		assert.Equal(t, second.ID, start.str("parentMessageId"))
		assert.JSONEq(t, `{"city":"Oslo"}`, args(evs, renamed))
		assert.JSONEq(t, `{"city":"Rome"}`, args(evs, "c1"), "the first call keeps its arguments")
	})
}

// A question for the user (a call that interrupts the run) has no result
// yet: the stream does not answer it with the interrupt's error.
func TestQuestionIsNotAnswered(t *testing.T) {
	m := scripted.New(scripted.CallTools(scripted.CallWithID("q1", nodes.AskUserName, `{"question":"Which day?"}`)))
	h := handler(t, m, []agent.Option{agent.WithTools(nodes.AskUser()), agent.WithCheckpointer(memory.New())})
	evs := run(t, h, input("t1", "r1", userMsg("u1", "book")))
	assert.Equal(t, "interrupt", outcome(t, evs)["type"])
	assert.Empty(t, ofType(evs, "TOOL_CALL_RESULT"))
}

// failingWriter is a response whose writes fail after the first n.
type failingWriter struct {
	mu     sync.Mutex
	header http.Header
	n      int
}

func (w *failingWriter) Header() http.Header { return w.header }
func (w *failingWriter) WriteHeader(int)     {}
func (w *failingWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return 0, errors.New("broken pipe")
	}
	w.n--
	return len(b), nil
}

// A stream that can no longer be written stops the run, as a client that
// goes away does: nobody reads it.
func TestWriteFailureStopsTheRun(t *testing.T) {
	m := scripted.New(scripted.CallTools(scripted.CallWithID("c1", "slow", `{}`)), scripted.Reply("late"))
	slow := tool.MustFunc("slow", "Takes its time.", func(ctx context.Context, _ struct{}) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	h := handler(t, m, []agent.Option{agent.WithTools(slow)}, agui.WithKeepAlive(0))
	b, _ := json.Marshal(input("t1", "r1", userMsg("u1", "go")))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/agent", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(&failingWriter{header: http.Header{}, n: 2}, req)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		cancel()
		<-done
		t.Fatal("the run went on after its stream failed")
	}
}

// pairModel streams two replies at once: each call yields its first
// word, waits until the other call has started, and yields the rest.
type pairModel struct {
	mu      sync.Mutex
	started int
	both    chan struct{}
}

func (m *pairModel) Generate(context.Context, *model.Request) (*model.Response, error) {
	return nil, errors.New("stream only")
}

func (m *pairModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	who := req.Messages[len(req.Messages)-1].Text()
	return func(yield func(model.Chunk, error) bool) {
		if !yield(model.Chunk{Text: who + "-1 "}, nil) {
			return
		}
		m.mu.Lock()
		if m.started++; m.started == 2 {
			close(m.both)
		}
		m.mu.Unlock()
		select {
		case <-m.both:
		case <-ctx.Done():
			return
		}
		for _, w := range []string{who + "-2 ", who + "-3"} {
			if !yield(model.Chunk{Text: w}, nil) {
				return
			}
		}
		yield(model.Chunk{ToolCall: &model.ToolCallDelta{ID: "call-" + who, Name: "note", Arguments: `{"who":"` + who + `"}`}}, nil)
	}
}

// Replies of one node that stream at once (the tasks of a fan-out) are
// each shown whole under their own message, though their chunks cannot
// be told apart.
func TestParallelRepliesOfOneNode(t *testing.T) {
	m := &pairModel{both: make(chan struct{})}
	b := graph.New[agent.State](nodes.MessagesReducer[agent.State]())
	b.AddNode("prep", func(_ context.Context, s agent.State) (agent.State, error) { return s, nil })
	b.AddNode("llm", nodes.LLM[agent.State](m))
	b.AddEdge(graph.START, "prep")
	b.AddFanOut("prep", func(_ context.Context, s agent.State) []graph.Send[agent.State] {
		var out []graph.Send[agent.State]
		for _, w := range []string{"A", "B"} {
			st := s
			st.Messages = append(slices.Clone(s.Messages), model.User(w))
			out = append(out, graph.Send[agent.State]{Node: "llm", State: st})
		}
		return out
	}, "llm")
	b.AddEdge("llm", graph.END)
	g, err := b.Compile()
	require.NoError(t, err)
	h, err := agui.NewHandler(g)
	require.NoError(t, err)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "hi")))

	var replies int
	for _, msg := range snapshot(t, evs) {
		if msg.Role != "assistant" {
			continue
		}
		replies++
		var want string
		require.NoError(t, json.Unmarshal(msg.Content, &want))
		assert.Equal(t, want, text(evs, msg.ID), "message %s", msg.ID)
		require.Len(t, msg.ToolCalls, 1)
		c := msg.ToolCalls[0]
		assert.JSONEq(t, c.Function.Arguments, args(evs, c.ID))
		for _, ev := range ofType(evs, "TOOL_CALL_START") {
			if ev.str("toolCallId") == c.ID {
				assert.Equal(t, msg.ID, ev.str("parentMessageId"))
			}
		}
	}
	assert.Equal(t, 2, replies)
}

// A run that pauses on calls left to the caller, none of them named,
// finishes without a null list of pending calls.
func TestNoNullPendingCalls(t *testing.T) {
	b := graph.New[agent.State]()
	b.AddNode("wait", func(ctx context.Context, s agent.State) (agent.State, error) {
		_, err := graph.Interrupt[map[string]tool.Result](ctx, nodes.PendingToolCalls{})
		return s, err
	})
	b.AddEdge(graph.START, "wait").AddEdge("wait", graph.END)
	g, err := b.Compile(graph.WithCheckpointer(memory.New()))
	require.NoError(t, err)
	h, err := agui.NewHandler(g)
	require.NoError(t, err)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "hi")))
	o := outcome(t, evs)
	if ids, ok := o["pendingToolCallIds"]; ok {
		assert.NotEmpty(t, ids, "pendingToolCallIds is absent, or names calls: %v", o)
	}
}

// A client's tool message that failed carries its reason in error, next
// to a content that is often empty: the model is told the reason.
func TestToolErrorReachesTheModel(t *testing.T) {
	for _, c := range []struct{ content, errText, want string }{
		{"", "the user closed the dialog", "the user closed the dialog"},
		{"partial answer", "timed out", "partial answer\n\nError: timed out"},
		{"timed out", "timed out", "timed out"},
	} {
		var seen model.Message
		m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
			seen = req.Messages[len(req.Messages)-1]
			return &model.Response{Message: model.Assistant("ok")}, nil
		}))
		h := handler(t, m, nil)
		evs := run(t, h, input("t1", "r1",
			userMsg("u1", "book"),
			map[string]any{"id": "a1", "role": "assistant", "toolCalls": []map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "confirm", "arguments": "{}"}}}},
			map[string]any{"id": "r1", "role": "tool", "toolCallId": "c1", "content": c.content, "error": c.errText},
		))
		assert.Equal(t, model.RoleTool, seen.Role)
		assert.True(t, seen.IsError)
		assert.Equal(t, c.want, seen.Text())
		// Sent back, the snapshot's message says the same.
		msgs := snapshot(t, evs)
		assert.Equal(t, c.want, msgs[2].Error)
	}
}

// A text part always has its text member, even empty.
func TestEmptyTextPartKeepsItsText(t *testing.T) {
	b, err := json.Marshal([]agui.ContentPart{{Type: "text"}, {Type: "image", Source: &agui.PartSource{Type: "url", Value: "http://127.0.0.1/i.png"}}})
	require.NoError(t, err)
	assert.JSONEq(t, `[{"type":"text","text":""},{"type":"image","source":{"type":"url","value":"http://127.0.0.1/i.png"}}]`, string(b))
}

// Reasoning that comes back after the reply's text opens a span of its
// own: no span ID is used twice.
func TestReasoningSpansHaveTheirOwnIDs(t *testing.T) {
	m := &chunkModel{replies: [][]model.Chunk{{
		{Reasoning: &model.ReasoningDelta{Index: 0, Text: "first"}},
		{Text: "Hmm."},
		{Reasoning: &model.ReasoningDelta{Index: 1, Text: "second"}},
		{Text: " Yes."},
	}}}
	h := handler(t, m, nil)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "think")))
	var ids []string
	for _, ev := range ofType(evs, "REASONING_START") {
		ids = append(ids, ev.str("messageId"))
	}
	require.Len(t, ids, 2)
	assert.NotEqual(t, ids[0], ids[1])
}
