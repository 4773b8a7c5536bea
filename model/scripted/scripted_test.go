package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.User(text)}}
}

func TestGeneratePlaysStepsInOrder(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(
			scripted.Call("get_weather", `{"city":"Paris"}`),
			scripted.CallWithID("fixed", "get_time", `{"tz":"CET"}`),
			scripted.Call("noop", ""),
		).WithText("Let me check.").WithUsage(model.Usage{InputTokens: 12, OutputTokens: 7}),
		scripted.Reply("It is sunny in Paris."),
		scripted.ReplyJSON(map[string]int{"answer": 42}),
	)
	ctx := context.Background()

	r1, err := m.Generate(ctx, userReq("weather?"))
	require.NoError(t, err)
	assert.Equal(t, &model.Response{
		Message: model.Message{
			Role:    model.RoleAssistant,
			Content: []model.Part{model.TextPart("Let me check.")},
			ToolCalls: []model.ToolCall{
				{ID: "call_1_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
				{ID: "fixed", Name: "get_time", Arguments: json.RawMessage(`{"tz":"CET"}`)},
				{ID: "call_1_3", Name: "noop", Arguments: json.RawMessage(`{}`)},
			},
		},
		Usage:        model.Usage{InputTokens: 12, OutputTokens: 7, TotalTokens: 19},
		FinishReason: "tool_calls",
		Model:        "scripted",
	}, r1)

	r2, err := m.Generate(ctx, userReq("and then?"))
	require.NoError(t, err)
	assert.Equal(t, "It is sunny in Paris.", r2.Message.Text())
	assert.Equal(t, "stop", r2.FinishReason)
	assert.Empty(t, r2.Message.ToolCalls)

	r3, err := m.Generate(ctx, userReq("json"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"answer":42}`, r3.Message.Text())

	assert.Equal(t, 3, m.Calls())
	assert.Equal(t, 0, m.Remaining())
}

func TestExhaustedScript(t *testing.T) {
	m := scripted.New(scripted.Reply("only"))
	_, err := m.Generate(context.Background(), userReq("first"))
	require.NoError(t, err)

	req := &model.Request{Messages: []model.Message{
		model.User("go"),
		model.ToolMessage("call_9", "search", false, model.TextPart("results")),
	}}
	_, err = m.Generate(context.Background(), req)
	require.ErrorIs(t, err, scripted.ErrExhausted)
	assert.Contains(t, err.Error(), "call 2 of a script of 1 steps")
	assert.Contains(t, err.Error(), `tool "results" answering call_9`)

	_, err = m.Generate(context.Background(), &model.Request{})
	require.ErrorIs(t, err, scripted.ErrExhausted)
	assert.Contains(t, err.Error(), "last message: none")
}

func TestFallback(t *testing.T) {
	fb := scripted.Reply("I have nothing more to add.")
	m := scripted.New(scripted.Reply("first"))
	m.Fallback = &fb
	for i, want := range []string{"first", "I have nothing more to add.", "I have nothing more to add."} {
		resp, err := m.Generate(context.Background(), userReq("x"))
		require.NoError(t, err, "call %d", i+1)
		assert.Equal(t, want, resp.Message.Text())
	}

	// A fallback that calls tools gets fresh IDs on every call.
	calls := scripted.CallTools(scripted.Call("poll", `{}`))
	m = scripted.New()
	m.Fallback = &calls
	a, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	b, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "call_1_1", a.Message.ToolCalls[0].ID)
	assert.Equal(t, "call_2_1", b.Message.ToolCalls[0].ID)
}

func TestFuncReactsToToolResults(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.Call("add", `{"a":2,"b":3}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			last := req.Messages[len(req.Messages)-1]
			if last.Role != model.RoleTool {
				return nil, fmt.Errorf("expected a tool result, got %s", last.Role)
			}
			return &model.Response{Message: model.Assistant("The sum is " + last.Text() + ".")}, nil
		}),
		scripted.Func(func(*model.Request) (*model.Response, error) { return nil, nil }),
	)
	ctx := context.Background()
	msgs := []model.Message{model.User("2+3?")}
	r1, err := m.Generate(ctx, &model.Request{Messages: msgs})
	require.NoError(t, err)
	call := r1.Message.ToolCalls[0]
	msgs = append(msgs, r1.Message, model.ToolMessage(call.ID, call.Name, false, model.TextPart("5")))

	r2, err := m.Generate(ctx, &model.Request{Messages: msgs})
	require.NoError(t, err)
	assert.Equal(t, "The sum is 5.", r2.Message.Text())
	assert.Equal(t, "stop", r2.FinishReason)
	assert.Equal(t, "scripted", r2.Model)

	r3, err := m.Generate(ctx, &model.Request{Messages: msgs})
	require.NoError(t, err, "a nil response is an empty reply")
	assert.Equal(t, model.RoleAssistant, r3.Message.Role)
	assert.Empty(t, r3.Message.Text())
}

func TestFuncFillsCallIDs(t *testing.T) {
	m := scripted.New(scripted.Func(func(*model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Message{ToolCalls: []model.ToolCall{scripted.Call("a", `{}`)}}}, nil
	}))
	m.Name = "planner"
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "planner_call_1_1", resp.Message.ToolCalls[0].ID)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	assert.Equal(t, "planner", resp.Model)
	assert.Equal(t, model.RoleAssistant, resp.Message.Role)
}

func TestFailAndErrors(t *testing.T) {
	boom := errors.New("rate limited")
	m := scripted.New(
		scripted.Fail(boom),
		scripted.Func(func(*model.Request) (*model.Response, error) { return nil, boom }),
		scripted.ReplyJSON(make(chan int)),
		scripted.Fail(nil),
	)
	ctx := context.Background()
	_, err := m.Generate(ctx, userReq("x"))
	assert.ErrorIs(t, err, boom)
	_, err = m.Generate(ctx, userReq("x"))
	assert.ErrorIs(t, err, boom)
	_, err = m.Generate(ctx, userReq("x"))
	assert.ErrorContains(t, err, "scripted: encoding reply")
	_, err = m.Generate(ctx, userReq("x"))
	assert.ErrorContains(t, err, "nil error")

	_, err = m.Generate(ctx, nil)
	assert.ErrorContains(t, err, "nil request")
}

func TestCancelledContextDoesNotConsumeAStep(t *testing.T) {
	m := scripted.New(scripted.Reply("a"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Generate(ctx, userReq("x"))
	require.ErrorIs(t, err, context.Canceled)
	for _, err := range m.Stream(ctx, userReq("x")) {
		require.ErrorIs(t, err, context.Canceled)
	}
	assert.Equal(t, 1, m.Remaining())
	assert.Equal(t, 0, m.Calls())
}

func TestRequestsAreRecordedAsCopies(t *testing.T) {
	m := scripted.New(scripted.Reply("a"), scripted.Reply("b"))
	temp := 0.2
	req := &model.Request{
		Messages:       []model.Message{model.System("be brief"), model.User("hi")},
		Tools:          []model.ToolDefinition{{Name: "search"}},
		ToolChoice:     model.ToolChoice{Mode: model.ToolChoiceRequired},
		ResponseFormat: &model.ResponseFormat{Name: "out", Schema: json.RawMessage(`{}`)},
		Settings:       model.Settings{Temperature: &temp, Stop: []string{"END"}},
	}
	_, err := m.Generate(context.Background(), req)
	require.NoError(t, err)

	// The caller reuses its request: the record must not change.
	req.Messages[1] = model.User("changed")
	req.Messages[0].Content[0].Text = "changed too"
	req.Tools[0].Name = "other"
	req.Settings.Stop[0] = "STOP"
	req.ResponseFormat.Name = "renamed"
	_, err = m.Generate(context.Background(), userReq("second"))
	require.NoError(t, err)

	got := m.Requests()
	require.Len(t, got, 2)
	assert.Equal(t, "hi", got[0].Messages[1].Text())
	assert.Equal(t, "be brief", got[0].Messages[0].Text())
	assert.Equal(t, "search", got[0].Tools[0].Name)
	assert.Equal(t, []string{"END"}, got[0].Settings.Stop)
	assert.Equal(t, "out", got[0].ResponseFormat.Name)
	assert.Equal(t, model.ToolChoiceRequired, got[0].ToolChoice.Mode)
	assert.Equal(t, "second", got[1].Messages[0].Text())

	// Mutating what Requests returned does not change the record either.
	got[0].Messages[1] = model.User("mutated")
	assert.Equal(t, "hi", m.Requests()[0].Messages[1].Text())
}

func TestRepliesAreIndependentCopies(t *testing.T) {
	step := scripted.CallTools(scripted.CallWithID("c", "t", `{}`)).WithText("x")
	m := scripted.New(step, step)
	a, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	a.Message.Content[0].Text = "mutated"
	a.Message.ToolCalls[0].Name = "mutated"
	b, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "x", b.Message.Text())
	assert.Equal(t, "t", b.Message.ToolCalls[0].Name)
}

func TestStreamFragments(t *testing.T) {
	script := func() *scripted.Model {
		return scripted.New(
			scripted.CallTools(
				scripted.Call("get_weather", `{"city":"Paris","unit":"celsius"}`),
				scripted.Call("get_weather", `{"city":"Oslo"}`),
			).WithText("Checking  both cities now.").WithUsage(model.Usage{InputTokens: 3, OutputTokens: 9}),
		)
	}
	ctx := context.Background()
	want, err := script().Generate(ctx, userReq("x"))
	require.NoError(t, err)

	var texts []string
	var deltas []model.ToolCallDelta
	var last model.Chunk
	for c, err := range script().Stream(ctx, userReq("x")) {
		require.NoError(t, err)
		if c.Text != "" {
			texts = append(texts, c.Text)
		}
		if c.ToolCall != nil {
			deltas = append(deltas, *c.ToolCall)
		}
		last = c
	}
	assert.Equal(t, []string{"Checking", "  both", " cities", " now."}, texts)

	// Every call arrives in several fragments; ID and name only in the first.
	require.Greater(t, len(deltas), 2)
	indices := make([]int, len(deltas))
	for i, d := range deltas {
		indices[i] = d.Index
	}
	assert.Equal(t, []int{0, 1, 0, 1, 0, 1}, indices, "fragments of parallel calls are interleaved")
	assert.Equal(t, "call_1_1", deltas[0].ID)
	assert.Equal(t, "get_weather", deltas[0].Name)
	for _, d := range deltas[2:] {
		assert.Empty(t, d.ID)
		assert.Empty(t, d.Name)
	}
	assert.Equal(t, "tool_calls", last.FinishReason)
	require.NotNil(t, last.Usage)
	assert.Equal(t, 12, last.Usage.TotalTokens)

	got, err := model.Collect(script().Stream(ctx, userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// A scripted reply with reasoning streams it first, word by word, and
// collects into the reply Generate gives.
func TestStreamReasoning(t *testing.T) {
	msg := model.Assistant("It is sunny.")
	msg.Content = append([]model.Part{
		model.ReasoningPart("The user asks about Oslo.", []byte("sig")),
		model.RedactedReasoningPart([]byte("ENC")),
	}, msg.Content...)
	script := func() *scripted.Model { return scripted.New(scripted.Respond(msg)) }
	ctx := context.Background()
	want, err := script().Generate(ctx, userReq("x"))
	require.NoError(t, err)
	var thoughts []string
	sawText := false
	for c, err := range script().Stream(ctx, userReq("x")) {
		require.NoError(t, err)
		if c.Reasoning != nil {
			assert.False(t, sawText, "reasoning comes before the text")
			thoughts = append(thoughts, c.Reasoning.Text)
		}
		sawText = sawText || c.Text != ""
	}
	assert.Equal(t, []string{"", "The", " user", " asks", " about", " Oslo.", "", "", ""}, thoughts)
	got, err := model.Collect(script().Stream(ctx, userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, msg.Content, got.Message.Content)
}

// A reply with a provider's own parts streams them whole, after the text:
// collected, the stream gives the reply back.
func TestStreamProviderParts(t *testing.T) {
	msg := model.Assistant("Found it.")
	msg.Content = append(msg.Content, model.ProviderPart("application/vnd.example+json", []byte(`{"type":"search","hits":2}`)))
	script := func() *scripted.Model { return scripted.New(scripted.Respond(msg)) }
	ctx := context.Background()
	want, err := script().Generate(ctx, userReq("x"))
	require.NoError(t, err)
	got, err := model.Collect(script().Stream(ctx, userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, msg.Content, got.Message.Content)
}

func TestStreamMultibyteArguments(t *testing.T) {
	args := `{"q":"日本語"}`
	m := scripted.New(scripted.CallTools(scripted.Call("search", args)), scripted.Reply("naïve café  "))
	got, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.JSONEq(t, args, string(got.Message.ToolCalls[0].Arguments))

	var texts []string
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		if c.Text != "" {
			texts = append(texts, c.Text)
		}
	}
	assert.Equal(t, []string{"naïve", " café  "}, texts)
}

func TestStreamErrorsAndEarlyBreak(t *testing.T) {
	boom := errors.New("boom")
	m := scripted.New(scripted.Fail(boom), scripted.Reply("one two three"))
	var errs []error
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		assert.Equal(t, model.Chunk{}, c)
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], boom)

	n := 0
	for range m.Stream(context.Background(), userReq("x")) {
		n++
		break
	}
	assert.Equal(t, 1, n)

	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	assert.ErrorIs(t, err, scripted.ErrExhausted)
}

func TestStreamStopsWhenContextIsCancelled(t *testing.T) {
	m := scripted.New(scripted.Reply("one two three four"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	var gotErr error
	for c, err := range m.Stream(ctx, userReq("x")) {
		if err != nil {
			gotErr = err
			break
		}
		got = append(got, c.Text)
		cancel()
	}
	assert.Equal(t, []string{"one"}, got)
	assert.ErrorIs(t, gotErr, context.Canceled)
}

func TestConcurrentCallsPlayEachStepOnce(t *testing.T) {
	const n = 50
	steps := make([]scripted.Step, n)
	for i := range steps {
		steps[i] = scripted.Reply(fmt.Sprint(i))
	}
	m := scripted.New(steps...)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		got []string
	)
	for range n {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), userReq("x"))
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			got = append(got, resp.Message.Text())
			mu.Unlock()
		})
	}
	wg.Wait()
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprint(i)
	}
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got)
	assert.Len(t, m.Requests(), n)
	_, err := m.Generate(context.Background(), userReq("x"))
	assert.ErrorIs(t, err, scripted.ErrExhausted)
}

func TestInfo(t *testing.T) {
	m := scripted.New()
	assert.Equal(t, model.Info{Provider: "scripted", Name: "scripted"}, m.Info())
	m = scripted.New()
	m.Name, m.StructuredOutput = "writer", true
	assert.Equal(t, model.Info{Provider: "scripted", Name: "writer", StructuredOutput: true}, m.Info())
}

func TestRespondAndFinishReason(t *testing.T) {
	m := scripted.New(
		scripted.Respond(model.Message{Role: model.RoleUser, Name: "writer", Content: []model.Part{model.TextPart("draft")}}).
			WithFinishReason("length"),
		scripted.CallTools(scripted.Call("x", `{}`)).WithText("pre").WithText(""),
	)
	r, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, model.RoleAssistant, r.Message.Role)
	assert.Equal(t, "writer", r.Message.Name)
	assert.Equal(t, "length", r.FinishReason)
	r, err = m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Empty(t, r.Message.Content)
}

func TestExhaustedMessageKeepsWholeCharacters(t *testing.T) {
	m := scripted.New()
	text := strings.Repeat("a", 59) + "日本語のテキスト"
	_, err := m.Generate(context.Background(), userReq(text))
	require.ErrorIs(t, err, scripted.ErrExhausted)
	assert.True(t, utf8.ValidString(err.Error()), "the error is valid UTF-8: %s", err)
	assert.Contains(t, err.Error(), `user "`+strings.Repeat("a", 59)+`..."`, "the text is cut before the character that would not fit")
}

func TestRequestsRecordDeepCopies(t *testing.T) {
	m := scripted.New(scripted.Reply("a"))
	temp := 0.2
	msg := model.Assistant("", scripted.CallWithID("c1", "search", `{"q":"x"}`))
	msg.Metadata = map[string]string{"k": "v"}
	req := &model.Request{
		Messages:       []model.Message{msg, {Role: model.RoleUser, Content: []model.Part{model.ImagePart("image/png", []byte{1, 2}), model.JSONPart(json.RawMessage(`{"a":1}`))}}},
		Tools:          []model.ToolDefinition{{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		ResponseFormat: &model.ResponseFormat{Name: "out", Schema: json.RawMessage(`{"type":"object"}`)},
		Settings:       model.Settings{Temperature: &temp},
	}
	_, err := m.Generate(context.Background(), req)
	require.NoError(t, err)

	// The caller changes what it sent, in place.
	req.Messages[0].Metadata["k"] = "changed"
	req.Messages[0].ToolCalls[0].Arguments[2] = 'Q'
	req.Messages[1].Content[0].Data[0] = 9
	req.Messages[1].Content[1].JSON[2] = 'A'
	req.Tools[0].InputSchema[2] = 'T'
	req.ResponseFormat.Schema[2] = 'T'
	temp = 0.9

	got := m.Requests()[0]
	assert.Equal(t, "v", got.Messages[0].Metadata["k"])
	assert.JSONEq(t, `{"q":"x"}`, string(got.Messages[0].ToolCalls[0].Arguments))
	assert.Equal(t, []byte{1, 2}, got.Messages[1].Content[0].Data)
	assert.JSONEq(t, `{"a":1}`, string(got.Messages[1].Content[1].JSON))
	assert.JSONEq(t, `{"type":"object"}`, string(got.Tools[0].InputSchema))
	assert.JSONEq(t, `{"type":"object"}`, string(got.ResponseFormat.Schema))
	require.NotNil(t, got.Settings.Temperature)
	assert.Equal(t, 0.2, *got.Settings.Temperature)
}

func TestRepliesShareNoBytes(t *testing.T) {
	step := scripted.CallTools(scripted.CallWithID("c", "t", `{"a":1}`))
	m := scripted.New(step, step)
	a, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	a.Message.ToolCalls[0].Arguments[2] = 'b'
	b, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1}`, string(b.Message.ToolCalls[0].Arguments))
}

func TestPolicyAnswersEveryCallFromTheRequestAndNamesItsErrors(t *testing.T) {
	refused := errors.New("no such topic")
	m := scripted.Policy("librarian", func(req *model.Request) (model.Message, error) {
		text := req.Messages[len(req.Messages)-1].Text()
		if text == "unknown" {
			return model.Message{}, refused
		}
		return model.Message{Role: model.RoleUser, Content: []model.Part{model.TextPart("about " + text)}}, nil
	})
	ctx := context.Background()
	for _, topic := range []string{"go", "rust", "go"} {
		resp, err := m.Generate(ctx, userReq(topic))
		require.NoError(t, err)
		assert.Equal(t, model.RoleAssistant, resp.Message.Role, "the reply is the assistant's whatever role fn set")
		assert.Equal(t, "about "+topic, resp.Message.Text())
		assert.Equal(t, "librarian", resp.Model)
	}
	_, err := m.Generate(ctx, userReq("unknown"))
	require.ErrorIs(t, err, refused)
	assert.Contains(t, err.Error(), "librarian")
	assert.Equal(t, 4, m.Calls())
}
