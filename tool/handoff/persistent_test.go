package handoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// transcriber is a worker's model that records what each call showed it
// (the conversation after the system prompt, as "role:text") under the
// task it was given, and answers "answer to <task>". A task that starts
// with "ask:" calls the approve tool first; a task "fail" fails.
type transcriber struct {
	mu   sync.Mutex
	seen map[string][][]string
}

func newTranscriber() *transcriber { return &transcriber{seen: map[string][][]string{}} }

func (m *transcriber) Generate(_ context.Context, req *model.Request) (*model.Response, error) {
	var lines []string
	task := ""
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleSystem:
			continue
		case model.RoleUser:
			task = msg.Text()
		}
		lines = append(lines, string(msg.Role)+":"+msg.Text())
	}
	m.mu.Lock()
	m.seen[task] = append(m.seen[task], lines)
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	switch {
	case task == "fail":
		return nil, errors.New("the worker's model is down")
	case strings.HasPrefix(task, "ask:") && last.Role == model.RoleUser:
		return &model.Response{Message: model.Assistant("", scripted.CallWithID("approve-"+task, "approve", `{}`))}, nil
	case last.Role == model.RoleTool:
		return &model.Response{Message: model.Assistant("answer to " + task + " (" + last.Text() + ")")}, nil
	}
	return &model.Response{Message: model.Assistant("answer to " + task)}, nil
}

func (m *transcriber) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	resp, err := m.Generate(ctx, req)
	if err != nil {
		return func(yield func(model.Chunk, error) bool) { yield(model.Chunk{}, err) }
	}
	return model.ResponseChunks(resp)
}

// calls returns the transcripts the model was shown for task.
func (m *transcriber) calls(task string) [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[task]
}

// tutor is a persistent handoff over a transcriber.
func tutor(t *testing.T, wm *transcriber, opts ...handoff.Option) tool.Tool {
	t.Helper()
	approve := tool.MustFunc("approve", "asks a human", func(ctx context.Context, _ struct{}) (string, error) {
		return graph.Interrupt[string](ctx, "approve?")
	})
	h, err := handoff.New("tutor", "Teaches.", worker(t, "tutor", wm, agent.WithTools(approve)), opts...)
	require.NoError(t, err)
	return h
}

func TestPersistentHistoryContinuesAcrossCallsAndTurns(t *testing.T) {
	wm := newTranscriber()
	h := tutor(t, wm, handoff.WithPersistentHistory(nil))
	pm := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "tutor", `{"task":"A"}`)), scripted.Reply("done 1"),
		scripted.CallTools(scripted.CallWithID("c2", "tutor", `{"task":"B"}`)), scripted.Reply("done 2"),
		scripted.CallTools(scripted.CallWithID("c3", "tutor", `{"task":"fail"}`)),
		scripted.CallTools(scripted.CallWithID("c4", "tutor", `{"task":"C"}`)), scripted.Reply("done 3"),
	)
	g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err := agent.Continue(ctx, g, "th", "first")
	require.NoError(t, err)
	_, err = agent.Continue(ctx, g, "th", "second")
	require.NoError(t, err)
	out, err := agent.Continue(ctx, g, "th", "third")
	require.NoError(t, err)

	assert.Equal(t, [][]string{{"user:A"}}, wm.calls("A"))
	assert.Equal(t, [][]string{{"user:A", "assistant:answer to A", "user:B"}}, wm.calls("B"),
		"the second call continues the agent's own conversation, in the next turn of the caller")
	assert.Equal(t, [][]string{{"user:A", "assistant:answer to A", "user:B", "assistant:answer to B", "user:C"}}, wm.calls("C"),
		"a failed call adds nothing")
	for _, lines := range wm.calls("C") {
		for _, l := range lines {
			assert.NotContains(t, l, "first", "the agent sees nothing of the caller's conversation")
		}
	}

	// Each answer records its own part of the history, never sent to the
	// caller's model.
	msg := toolMessage(t, out.Messages, "c2")
	var rec struct {
		Key      string          `json:"key"`
		Messages []model.Message `json:"messages"`
	}
	require.NoError(t, json.Unmarshal([]byte(msg.Metadata[handoff.MetaHistory]), &rec))
	assert.Equal(t, "default", rec.Key)
	require.Len(t, rec.Messages, 2)
	assert.Equal(t, "B", rec.Messages[0].Text())
	assert.Equal(t, "answer to B", rec.Messages[1].Text())
	assert.Empty(t, toolMessage(t, out.Messages, "c3").Metadata[handoff.MetaHistory])
	for _, req := range pm.Requests() {
		for _, m := range req.Messages {
			if m.Role == model.RoleTool && !m.IsError {
				assert.Regexp(t, `^answer to [ABC]$`, m.Text(), "the record is not part of what the caller's model reads")
			}
		}
	}
}

func TestPersistentHistoryFollowsTheNameTheModelCalls(t *testing.T) {
	wm := newTranscriber()
	coach := tool.Rename(tutor(t, wm, handoff.WithPersistentHistory(nil)), "coach")
	other := newTranscriber()
	otherTutor := tool.Rename(tutor(t, other, handoff.WithPersistentHistory(nil)), "b_tutor")
	pm := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "coach", `{"task":"A"}`)),
		scripted.CallTools(scripted.CallWithID("c2", "coach", `{"task":"B"}`)),
		scripted.CallTools(scripted.CallWithID("c3", "b_tutor", `{"task":"C"}`)),
		scripted.Reply("done"),
	)
	_, err := parent(t, pm, []tool.Tool{coach, otherTutor}).Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"user:A", "assistant:answer to A", "user:B"}}, wm.calls("B"), "a renamed handoff keeps its history")
	assert.Equal(t, [][]string{{"user:C"}}, other.calls("C"), "another handoff made under the same name sees none of it")
}

func TestPersistentHistoryTravelsWithTheConversation(t *testing.T) {
	wm := newTranscriber()
	h := tutor(t, wm, handoff.WithPersistentHistory(nil))
	run := func(in agent.State, id, task string) agent.State {
		pm := scripted.New(scripted.CallTools(scripted.CallWithID(id, "tutor", `{"task":"`+task+`"}`)), scripted.Reply("ok"))
		out, err := parent(t, pm, []tool.Tool{h}).Invoke(context.Background(), in)
		require.NoError(t, err)
		return out
	}
	first := run(agent.Ask("go"), "c1", "A")

	// No checkpointer: the next run gets the conversation, and with it the
	// history.
	next := first
	next.Messages = append(next.Messages, model.User("again"))
	run(next, "c2", "B")
	assert.Equal(t, [][]string{{"user:A", "assistant:answer to A", "user:B"}}, wm.calls("B"))

	// A conversation whose records were dropped (edited, trimmed) has none.
	edited := agent.State{}
	for _, m := range first.Messages {
		m.Metadata = nil
		edited.Messages = append(edited.Messages, m)
	}
	edited.Messages = append(edited.Messages, model.User("again"))
	run(edited, "c3", "D")
	assert.Equal(t, [][]string{{"user:D"}}, wm.calls("D"))
}

func TestPersistentHistoryKeys(t *testing.T) {
	wm := newTranscriber()
	h := tutor(t, wm, handoff.WithPersistentHistory(func(_ context.Context, task model.Message) string {
		topic, _, _ := strings.Cut(task.Text(), " ")
		if topic == "once" {
			return ""
		}
		return topic
	}))
	pm := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "tutor", `{"task":"math 1"}`)),
		scripted.CallTools(scripted.CallWithID("c2", "tutor", `{"task":"art 1"}`)),
		scripted.CallTools(scripted.CallWithID("c3", "tutor", `{"task":"once only"}`)),
		scripted.CallTools(scripted.CallWithID("c4", "tutor", `{"task":"math 2"}`)),
		scripted.CallTools(scripted.CallWithID("c5", "tutor", `{"task":"once more"}`)),
		scripted.Reply("done"),
	)
	out, err := parent(t, pm, []tool.Tool{h}).Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"user:math 1", "assistant:answer to math 1", "user:math 2"}}, wm.calls("math 2"),
		"another key's history stays out")
	assert.Equal(t, [][]string{{"user:once more"}}, wm.calls("once more"), "an empty key runs afresh")
	assert.Empty(t, toolMessage(t, out.Messages, "c3").Metadata, "and is not recorded")
	assert.Contains(t, toolMessage(t, out.Messages, "c4").Metadata[handoff.MetaHistory], `"key":"math"`)
}

func TestPersistentHistoryInParallelCalls(t *testing.T) {
	wm := newTranscriber()
	h := tutor(t, wm, handoff.WithPersistentHistory(nil))
	pm := scripted.New(
		scripted.CallTools(scripted.CallWithID("c0", "tutor", `{"task":"W"}`)),
		scripted.CallTools(scripted.CallWithID("c1", "tutor", `{"task":"X"}`), scripted.CallWithID("c2", "tutor", `{"task":"Y"}`)),
		scripted.CallTools(scripted.CallWithID("c3", "tutor", `{"task":"Z"}`)),
		scripted.Reply("done"),
	)
	_, err := parent(t, pm, []tool.Tool{h}).Invoke(context.Background(), agent.Ask("go"))
	require.NoError(t, err)
	before := []string{"user:W", "assistant:answer to W"}
	assert.Equal(t, [][]string{append(before, "user:X")}, wm.calls("X"), "each call of a batch continues the history before it")
	assert.Equal(t, [][]string{append(before, "user:Y")}, wm.calls("Y"))
	assert.Equal(t, [][]string{append(before, "user:X", "assistant:answer to X", "user:Y", "assistant:answer to Y", "user:Z")}, wm.calls("Z"),
		"a later call sees the batch's calls in call order")
}

func TestPersistentHistoryResumesAnInterruptedAgent(t *testing.T) {
	wm := newTranscriber()
	h := tutor(t, wm, handoff.WithPersistentHistory(nil))
	pm := scripted.New(
		scripted.CallTools(scripted.CallWithID("c0", "tutor", `{"task":"W"}`)),
		scripted.CallTools(scripted.CallWithID("c1", "tutor", `{"task":"X"}`), scripted.CallWithID("c2", "tutor", `{"task":"ask:launch"}`)),
		scripted.CallTools(scripted.CallWithID("c3", "tutor", `{"task":"Z"}`)),
		scripted.Reply("done"),
	)
	g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err := g.Invoke(ctx, agent.Ask("go"), graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)

	// The answer to c1 is in the conversation now; c2's agent still resumes
	// the run it started, with the input it had.
	_, err = g.Resume(ctx, "t", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	before := []string{"user:W", "assistant:answer to W"}
	assert.Equal(t, [][]string{
		append(before, "user:ask:launch"),
		append(before, "user:ask:launch", "assistant:", "tool:yes"),
	}, wm.calls("ask:launch"), "the agent's first model call was not made again")
	assert.Equal(t, [][]string{append(before,
		"user:X", "assistant:answer to X",
		"user:ask:launch", "assistant:", "tool:yes", "assistant:answer to ask:launch (yes)",
		"user:Z")}, wm.calls("Z"))
}

func TestPersistentHistoryUnreadableRecord(t *testing.T) {
	h := tutor(t, newTranscriber(), handoff.WithPersistentHistory(nil))
	bad := model.ToolMessage("old", "tutor", false, model.TextPart("earlier answer"))
	bad.Metadata = map[string]string{handoff.MetaHistory: `{"key":"default","messages":[{`}
	conv := []model.Message{
		model.User("go"),
		model.Assistant("", scripted.CallWithID("old", "tutor", `{"task":"A"}`)), bad,
		model.Assistant("", scripted.CallWithID("new", "tutor", `{"task":"B"}`)),
	}
	ctx := tool.WithConversation(context.Background(), conv)
	r := tool.Invoke(ctx, h, model.ToolCall{ID: "new", Name: "tutor", Arguments: json.RawMessage(`{"task":"B"}`)})
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "the history recorded in the answer to call old is unreadable")
	assert.Contains(t, r.Text(), handoff.MetaHistory)

	// Another tool's message with the key is not the agent's record.
	other := bad
	other.ToolName = "someone_else"
	conv[2] = other
	ctx = tool.WithConversation(context.Background(), conv)
	r = tool.Invoke(ctx, h, model.ToolCall{ID: "new", Name: "tutor", Arguments: json.RawMessage(`{"task":"B"}`)})
	assert.False(t, r.IsError, r.Text())
	assert.Equal(t, "answer to B", r.Text())
}
