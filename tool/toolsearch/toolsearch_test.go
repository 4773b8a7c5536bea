package toolsearch_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/plan"
	"github.com/trellis-go/trellis/tool/toolsearch"
)

type query struct {
	Q string `json:"q"`
}

// someTools returns n tools named t0, t1, ...
func someTools(n int) []tool.Tool {
	out := make([]tool.Tool, n)
	for i := range out {
		name := fmt.Sprintf("t%d", i)
		out[i] = tool.MustFunc(name, fmt.Sprintf("does thing number %d", i),
			func(context.Context, query) (string, error) { return name, nil })
	}
	return out
}

func names(ts []tool.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = tool.Name(t)
	}
	return out
}

// asking returns a context whose conversation is msgs, as the LLM node
// sets it.
func asking(msgs ...model.Message) context.Context {
	return tool.WithConversation(context.Background(), msgs)
}

func answer(names ...string) scripted.Step {
	if names == nil {
		names = []string{}
	}
	return scripted.ReplyJSON(map[string]any{"tools": names})
}

// userPrompt returns the user message of the selector's only request.
func userPrompt(t *testing.T, m *scripted.Model) string {
	t.Helper()
	reqs := m.Requests()
	require.Len(t, reqs, 1)
	require.Len(t, reqs[0].Messages, 2)
	require.Equal(t, model.RoleUser, reqs[0].Messages[1].Role)
	return reqs[0].Messages[1].Text()
}

func TestSelectPicksTheNamedTools(t *testing.T) {
	m := scripted.New(answer("t7", "t2"))
	all := someTools(12)
	got, err := toolsearch.New(m).Select(asking(model.User("please do thing seven")), all)
	require.NoError(t, err)
	assert.Equal(t, []string{"t7", "t2"}, names(got), "the picks, most relevant first")
	assert.Same(t, all[7], got[0], "the tools given, not copies")

	req := m.Requests()[0]
	require.Len(t, req.Messages, 2)
	assert.Equal(t, model.RoleSystem, req.Messages[0].Role)
	assert.Equal(t, toolsearch.DefaultSystemPrompt, req.Messages[0].Text())
	prompt := req.Messages[1].Text()
	assert.Contains(t, prompt, "Request:\nplease do thing seven\n")
	assert.Contains(t, prompt, "- t0: does thing number 0\n")
	assert.Contains(t, prompt, "- t11: does thing number 11\n")
	assert.Contains(t, prompt, "at most 8 tools")
	assert.NotContains(t, prompt, "properties", "schemas are not sent")
	assert.Empty(t, req.Tools, "the selector's model is offered no tools")
	assert.Nil(t, req.ResponseFormat, "the scripted model claims no structured output")
}

func TestSelectIgnoresUnknownNamesAndDuplicates(t *testing.T) {
	m := scripted.New(answer("nope", "t2", "t2", "T5", "t9", "t2"))
	got, err := toolsearch.New(m).Select(asking(model.User("q")), someTools(12))
	require.NoError(t, err)
	assert.Equal(t, []string{"t2", "t5", "t9"}, names(got), "a name that differs in case alone still matches")
}

func TestSelectRespectsTheMaximum(t *testing.T) {
	m := scripted.New(answer("t1", "t2", "t3", "t4"))
	got, err := toolsearch.New(m, toolsearch.WithMaxTools(2)).Select(asking(model.User("q")), someTools(5))
	require.NoError(t, err)
	assert.Equal(t, []string{"t1", "t2"}, names(got), "the most relevant picks")
	assert.Contains(t, userPrompt(t, m), "at most 2 tools")
}

func TestSelectKeepsAlwaysIncludedTools(t *testing.T) {
	all := someTools(12)
	t.Run("with the picks, not counted", func(t *testing.T) {
		m := scripted.New(answer("t4", "t5"))
		s := toolsearch.New(m, toolsearch.WithMaxTools(2), toolsearch.WithAlwaysInclude("t0", "t11", "absent"))
		got, err := s.Select(asking(model.User("q")), all)
		require.NoError(t, err)
		assert.Equal(t, []string{"t0", "t11", "t4", "t5"}, names(got))
		prompt := userPrompt(t, m)
		assert.NotContains(t, prompt, "- t0:", "always-included tools are not shown to the model")
		assert.NotContains(t, prompt, "- t11:")
		assert.Contains(t, prompt, "- t10:")
	})
	t.Run("alone when the model picks none", func(t *testing.T) {
		m := scripted.New(answer())
		got, err := toolsearch.New(m, toolsearch.WithAlwaysInclude("t3")).Select(asking(model.User("hello")), all)
		require.NoError(t, err)
		assert.Equal(t, []string{"t3"}, names(got))
	})
	t.Run("a model naming only them picks nothing else", func(t *testing.T) {
		m := scripted.New(answer("t3"))
		got, err := toolsearch.New(m, toolsearch.WithAlwaysInclude("t3"), toolsearch.WithFailOpen(false)).
			Select(asking(model.User("hello")), all)
		require.NoError(t, err)
		assert.Equal(t, []string{"t3"}, names(got))
	})
	t.Run("fail-closed on a failure", func(t *testing.T) {
		m := scripted.New(scripted.Fail(errors.New("down")))
		_, err := toolsearch.New(m, toolsearch.WithAlwaysInclude("t3"), toolsearch.WithFailOpen(false)).
			Select(asking(model.User("hello")), all)
		require.Error(t, err)
	})
}

func TestNoPickKeepsNoTool(t *testing.T) {
	m := scripted.New(answer())
	got, err := toolsearch.New(m).Select(asking(model.User("hello there")), someTools(12))
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestFewCandidatesNeedNoModel(t *testing.T) {
	m := scripted.New() // any call fails: the script is empty
	all := someTools(8)
	got, err := toolsearch.New(m, toolsearch.WithFailOpen(false)).Select(asking(model.User("q")), all)
	require.NoError(t, err)
	assert.Equal(t, all, got, "8 tools fit under the default maximum")

	nine := someTools(9)
	got, err = toolsearch.New(m, toolsearch.WithFailOpen(false), toolsearch.WithAlwaysInclude("t8")).
		Select(asking(model.User("q")), nine)
	require.NoError(t, err)
	assert.Equal(t, nine, got, "always-included tools are not candidates")

	got, err = toolsearch.New(m, toolsearch.WithFailOpen(false), toolsearch.WithMinCandidates(20)).
		Select(asking(model.User("q")), someTools(19))
	require.NoError(t, err)
	assert.Len(t, got, 19)
	assert.Equal(t, 0, m.Calls())

	m = scripted.New(answer("t1"))
	got, err = toolsearch.New(m, toolsearch.WithMinCandidates(3)).Select(asking(model.User("q")), someTools(3))
	require.NoError(t, err)
	assert.Equal(t, []string{"t1"}, names(got), "a lower minimum prunes short lists")
	assert.Equal(t, 1, m.Calls())
}

func TestWithoutARequestEveryToolIsKept(t *testing.T) {
	m := scripted.New()
	all := someTools(12)
	s := toolsearch.New(m, toolsearch.WithFailOpen(false))
	for _, ctx := range []context.Context{
		context.Background(),
		asking(model.System("be nice")),
		asking(model.User("earlier"), model.Message{Role: model.RoleUser, Content: []model.Part{model.ImagePart("image/png", []byte{1})}}),
	} {
		got, err := s.Select(ctx, all)
		require.NoError(t, err)
		assert.Equal(t, all, got)
	}
	assert.Equal(t, 0, m.Calls())
}

func TestModelFailure(t *testing.T) {
	all := someTools(12)
	boom := errors.New("boom")

	got, err := toolsearch.New(scripted.New(scripted.Fail(boom))).Select(asking(model.User("q")), all)
	require.NoError(t, err, "fail-open by default")
	assert.Equal(t, all, got)

	_, err = toolsearch.New(scripted.New(scripted.Fail(boom)), toolsearch.WithFailOpen(false)).Select(asking(model.User("q")), all)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "toolsearch: model: boom")
}

func TestUnusableAnswers(t *testing.T) {
	all := someTools(12)
	for name, step := range map[string]scripted.Step{
		"prose":         scripted.Reply("You should use the weather tool."),
		"empty":         scripted.Reply(""),
		"no list":       scripted.Reply(`{"answer": "t1"}`),
		"unknown names": answer("weather", "clock"),
		"not names":     scripted.Reply(`[1, 2, 3]`),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := toolsearch.New(scripted.New(step)).Select(asking(model.User("q")), all)
			require.NoError(t, err)
			assert.Equal(t, all, got, "fail-open keeps every tool")

			_, err = toolsearch.New(scripted.New(step), toolsearch.WithFailOpen(false)).Select(asking(model.User("q")), all)
			require.ErrorIs(t, err, toolsearch.ErrUnusableAnswer)
		})
	}
}

func TestLenientAnswers(t *testing.T) {
	for name, reply := range map[string]string{
		"fenced":      "Here you go:\n```json\n{\"tools\": [\"t3\", \"t1\"]}\n```",
		"bare array":  `["t3", "t1"]`,
		"almost JSON": `{tools: ['t3', 't1',]}`,
		"objects":     `{"tools": [{"name": "t3", "reason": "fits"}, {"name": "t1"}]}`,
		"other key":   `{"selected": ["t3", "t1"]}`,
		"truncated":   `{"tools": ["t3", "t1"`,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := toolsearch.New(scripted.New(scripted.Reply(reply)), toolsearch.WithFailOpen(false)).
				Select(asking(model.User("q")), someTools(12))
			require.NoError(t, err)
			assert.Equal(t, []string{"t3", "t1"}, names(got))
		})
	}
}

func TestUsesTheLatestUserMessage(t *testing.T) {
	conv := []model.Message{
		model.System("system prompt"),
		model.User("send a mail to Bob"),
		model.Assistant("Sent."),
		model.User("what is the weather in Oslo?"),
		model.Assistant("", scripted.CallWithID("c1", "t1", `{}`)),
		model.ToolMessage("c1", "t1", false, model.TextPart("sunny")),
	}
	m := scripted.New(answer("t1"))
	_, err := toolsearch.New(m).Select(asking(conv...), someTools(12))
	require.NoError(t, err)
	prompt := userPrompt(t, m)
	assert.True(t, strings.HasPrefix(prompt, "Conversation before the request, for context:\nuser: send a mail to Bob\nassistant: Sent.\n\nRequest:\nwhat is the weather in Oslo?\n"), prompt)
	assert.NotContains(t, prompt, "sunny")
	assert.NotContains(t, prompt, "system prompt")

	m = scripted.New(answer("t1"))
	_, err = toolsearch.New(m, toolsearch.WithHistory(0)).Select(asking(conv...), someTools(12))
	require.NoError(t, err)
	prompt = userPrompt(t, m)
	assert.True(t, strings.HasPrefix(prompt, "Request:\nwhat is the weather in Oslo?\n"), prompt)
	assert.NotContains(t, prompt, "Bob")

	nudge := model.User("You have open items: ...")
	nudge.Metadata = map[string]string{plan.MetaNudge: "1"}
	m = scripted.New(answer("t1"))
	_, err = toolsearch.New(m, toolsearch.WithHistory(1)).Select(asking(append(conv, model.Assistant("done"), nudge)...), someTools(12))
	require.NoError(t, err)
	prompt = userPrompt(t, m)
	assert.Contains(t, prompt, "Request:\nwhat is the weather in Oslo?\n", "a plan nudge is not the request")
	assert.NotContains(t, prompt, "open items")
}

func TestCacheAsksOncePerRequest(t *testing.T) {
	m := scripted.New(answer("t1"), answer("t2"), answer("t3"))
	s := toolsearch.New(m)
	all := someTools(12)
	turn := []model.Message{model.User("first")}
	got, err := s.Select(asking(turn...), all)
	require.NoError(t, err)
	assert.Equal(t, []string{"t1"}, names(got))

	// The same turn after a tool round trip: the request is unchanged.
	turn = append(turn, model.Assistant("", scripted.CallWithID("c", "t1", `{}`)), model.ToolMessage("c", "t1", false, model.TextPart("ok")))
	got, err = s.Select(asking(turn...), all)
	require.NoError(t, err)
	assert.Equal(t, []string{"t1"}, names(got))
	assert.Equal(t, 1, m.Calls(), "the cache answered")

	// Other candidates, then another request, ask again.
	got, err = s.Select(asking(turn...), all[:11])
	require.NoError(t, err)
	assert.Equal(t, []string{"t2"}, names(got))
	got, err = s.Select(asking(append(turn, model.Assistant("ok"), model.User("second"))...), all)
	require.NoError(t, err)
	assert.Equal(t, []string{"t3"}, names(got))
	assert.Equal(t, 3, m.Calls())
}

func TestCacheOffAndFailuresNotRemembered(t *testing.T) {
	all := someTools(12)
	m := scripted.New(answer("t1"), answer("t2"))
	s := toolsearch.New(m, toolsearch.WithCacheSize(0))
	for _, want := range []string{"t1", "t2"} {
		got, err := s.Select(asking(model.User("q")), all)
		require.NoError(t, err)
		assert.Equal(t, []string{want}, names(got))
	}

	m = scripted.New(scripted.Reply("no idea"), answer("t4"), answer("t5"))
	s = toolsearch.New(m)
	got, err := s.Select(asking(model.User("q")), all)
	require.NoError(t, err)
	assert.Equal(t, all, got)
	got, err = s.Select(asking(model.User("q")), all)
	require.NoError(t, err)
	assert.Equal(t, []string{"t4"}, names(got), "the failure was asked again")
	got, err = s.Select(asking(model.User("q")), all)
	require.NoError(t, err)
	assert.Equal(t, []string{"t4"}, names(got), "the answer was remembered")
	assert.Equal(t, 2, m.Calls())
}

func TestUsageIsReported(t *testing.T) {
	m := scripted.New(answer("t1").WithUsage(model.Usage{InputTokens: 120, OutputTokens: 9}))
	var total model.Usage
	calls := 0
	s := toolsearch.New(m, toolsearch.WithUsage(func(u model.Usage) { total = total.Add(u); calls++ }))
	for range 2 {
		_, err := s.Select(asking(model.User("q")), someTools(12))
		require.NoError(t, err)
	}
	assert.Equal(t, model.Usage{InputTokens: 120, OutputTokens: 9, TotalTokens: 129}, total)
	assert.Equal(t, 1, calls, "a cached selection costs nothing")
}

func TestStructuredOutput(t *testing.T) {
	m := scripted.New(answer("t1"))
	m.StructuredOutput = true
	_, err := toolsearch.New(m).Select(asking(model.User("q")), someTools(12))
	require.NoError(t, err)
	rf := m.Requests()[0].ResponseFormat
	require.NotNil(t, rf)
	assert.True(t, rf.Strict)
	assert.JSONEq(t, `{"type":"object","additionalProperties":false,"required":["tools"],
		"properties":{"tools":{"type":"array","description":"names of the relevant tools, the most relevant first",
		"items":{"type":"string","enum":["t0","t1","t2","t3","t4","t5","t6","t7","t8","t9","t10","t11"]}}}}`, string(rf.Schema))

	m = scripted.New(answer("t1"))
	_, err = toolsearch.New(m, toolsearch.WithStructuredOutput(true)).Select(asking(model.User("q")), someTools(12))
	require.NoError(t, err)
	assert.NotNil(t, m.Requests()[0].ResponseFormat)

	m = scripted.New(answer("t1"))
	m.StructuredOutput = true
	_, err = toolsearch.New(m, toolsearch.WithStructuredOutput(false)).Select(asking(model.User("q")), someTools(12))
	require.NoError(t, err)
	assert.Nil(t, m.Requests()[0].ResponseFormat)
}

func TestSystemPromptAndModelName(t *testing.T) {
	m := scripted.New(answer("t1"))
	_, err := toolsearch.New(m, toolsearch.WithSystemPrompt("Pick tools for a travel agent."), toolsearch.WithModelName("small-1")).
		Select(asking(model.User("q")), someTools(12))
	require.NoError(t, err)
	req := m.Requests()[0]
	assert.Equal(t, "small-1", req.Model)
	assert.Equal(t, "Pick tools for a travel agent.", req.Messages[0].Text())
	assert.Contains(t, req.Messages[1].Text(), `{"tools": ["name", ...]}`, "the answer's form is asked for whatever the system prompt")
}

func TestNilModel(t *testing.T) {
	_, err := toolsearch.New(nil).Select(asking(model.User("q")), someTools(12))
	require.Error(t, err, "a selector without a model is a mistake, fail-open or not")
	assert.Contains(t, err.Error(), "no model")
}

// blocking is a model that answers when its context ends.
type blocking struct{ started chan struct{} }

func (b *blocking) Generate(ctx context.Context, _ *model.Request) (*model.Response, error) {
	close(b.started)
	<-ctx.Done()
	return nil, ctx.Err()
}

func (b *blocking) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		_, err := b.Generate(ctx, req)
		yield(model.Chunk{}, err)
	}
}

func TestContextCancellation(t *testing.T) {
	all := someTools(12)
	m := scripted.New(answer("t1"))
	ctx, cancel := context.WithCancel(asking(model.User("q")))
	cancel()
	_, err := toolsearch.New(m).Select(ctx, all)
	require.ErrorIs(t, err, context.Canceled, "a cancelled run is an error even fail-open")
	assert.Equal(t, 0, m.Calls())

	b := &blocking{started: make(chan struct{})}
	ctx, cancel = context.WithCancel(asking(model.User("q")))
	go func() { <-b.started; cancel() }()
	_, err = toolsearch.New(b).Select(ctx, all)
	require.ErrorIs(t, err, context.Canceled)

	b = &blocking{started: make(chan struct{})}
	got, err := toolsearch.New(b, toolsearch.WithTimeout(20*time.Millisecond)).Select(asking(model.User("q")), all)
	require.NoError(t, err, "the selector's own time limit is a model failure")
	assert.Equal(t, all, got)

	b = &blocking{started: make(chan struct{})}
	_, err = toolsearch.New(b, toolsearch.WithTimeout(20*time.Millisecond), toolsearch.WithFailOpen(false)).Select(asking(model.User("q")), all)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestConcurrentSelects(t *testing.T) {
	m := scripted.New()
	m.Fallback = new(answer("t1", "t2"))
	s := toolsearch.New(m, toolsearch.WithCacheSize(2))
	all := someTools(12)
	done := make(chan error)
	for i := range 8 {
		go func() {
			got, err := s.Select(asking(model.User(fmt.Sprint("q", i%3))), all)
			if err == nil && len(got) != 2 {
				err = fmt.Errorf("got %v", names(got))
			}
			done <- err
		}()
	}
	for range 8 {
		require.NoError(t, <-done)
	}
}
