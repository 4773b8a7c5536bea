package nodes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
)

func TestAppendReplyLeavesRoomForTheAnswers(t *testing.T) {
	msgs := slices.Clip([]model.Message{model.User("go")})
	calls := []model.ToolCall{{ID: "a", Name: "t"}, {ID: "b", Name: "t"}, {ID: "c", Name: "t"}}
	nodes.AppendReply(&msgs, model.Assistant("", calls...))
	require.Len(t, msgs, 2)
	assert.GreaterOrEqual(t, cap(msgs), 2+len(calls), "room for the three tool messages")
	assert.Equal(t, calls, msgs[1].ToolCalls)

	// Room enough already: appended in place.
	before := &msgs[0]
	nodes.AppendReply(&msgs, model.Assistant("", calls[0]))
	assert.Same(t, before, &msgs[0])

	// A reply without calls is appended as append does.
	plain := slices.Clip([]model.Message{model.User("hi")})
	nodes.AppendReply(&plain, model.Assistant("hello"))
	assert.Equal(t, []string{"hi", "hello"}, []string{plain[0].Text(), plain[1].Text()})
}

// TestToolsNodeAnswersInTheRoomTheLLMNodeLeft runs an LLM node whose
// model asks for two calls, then the ToolsNode: the tool messages are
// written into the room the LLM node left, without copying the
// conversation.
func TestToolsNodeAnswersInTheRoomTheLLMNodeLeft(t *testing.T) {
	m := scripted.New(scripted.CallTools(
		scripted.CallWithID("a", "echo", `{"text":"one"}`),
		scripted.CallWithID("b", "echo", `{"text":"two"}`),
	))
	llm := nodes.LLM[agentState](m, nodes.WithTools(echoTool()))
	s, err := llm(context.Background(), agentState{Chat: nodes.Chat{Messages: slices.Clip([]model.Message{model.User("go")})}})
	require.NoError(t, err)
	require.Len(t, s.Messages, 2)
	assert.GreaterOrEqual(t, cap(s.Messages), 4)

	out, _, err := nodes.Tools[agentState]("llm", nodes.WithTools(echoTool()))(context.Background(), s)
	require.NoError(t, err)
	require.Len(t, out.Messages, 4)
	assert.Same(t, &s.Messages[0], &out.Messages[0], "written in place")
	assert.Equal(t, "one", out.Messages[2].Text())
	assert.Equal(t, "two", out.Messages[3].Text())
	assert.Len(t, s.Messages, 2, "the input state still ends with the assistant message")
}

type echoIn struct {
	Text string `json:"text"`
}

func echoTool() tool.Tool {
	return tool.MustFunc("echo", "Repeats the text.", func(_ context.Context, in echoIn) (string, error) {
		return in.Text, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
}

// TestToolsNodeOutputsShareNoResultStorage runs ToolsNodes many times,
// one after the other and at once, on both executors, keeping every
// output: the storage the executor answered the calls in is used again by
// later batches, and no output may change because of it.
func TestToolsNodeOutputsShareNoResultStorage(t *testing.T) {
	for _, ex := range []struct {
		name string
		make func() executor.Executor
	}{
		{"sequential", func() executor.Executor { return executor.Sequential() }},
		{"parallel", func() executor.Executor { return executor.Parallel() }},
	} {
		t.Run(ex.name, func(t *testing.T) {
			node := nodes.Tools[agentState]("llm", nodes.WithTools(echoTool()), nodes.WithExecutor(ex.make()))
			batch := func(g, r, n int) agentState {
				calls := make([]model.ToolCall, n)
				for i := range calls {
					calls[i] = model.ToolCall{ID: fmt.Sprint("c", i), Name: "echo", Arguments: fmt.Appendf(nil, `{"text":"%d/%d/%d"}`, g, r, i)}
				}
				return agentState{Chat: nodes.Chat{Messages: []model.Message{model.User("go"), model.Assistant("", calls...)}}}
			}
			const goroutines, rounds = 4, 50
			outs := make([][]agentState, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for r := range rounds {
						out, _, err := node(context.Background(), batch(g, r, 1+r%5))
						if err != nil {
							t.Error(err)
							return
						}
						outs[g] = append(outs[g], out)
					}
				})
			}
			wg.Wait()
			for g := range goroutines {
				require.Len(t, outs[g], rounds)
				for r, out := range outs[g] {
					n := 1 + r%5
					require.Len(t, out.Messages, 2+n)
					for i := range n {
						m := out.Messages[2+i]
						assert.Equal(t, fmt.Sprint("c", i), m.ToolCallID)
						assert.Equal(t, fmt.Sprintf("%d/%d/%d", g, r, i), m.Text())
						assert.False(t, m.IsError)
					}
				}
			}
		})
	}
}

// TestToolsAppendingToTheRunStateLeaveTheNodesRoomAlone runs a batch of
// tools that read the run's state and append to its conversation, on a
// conversation with room for the answers (as the LLM node leaves it): the
// tools' appends go into slices of their own, and the tool messages the
// node writes into the room are intact (the race detector watches the
// room too).
func TestToolsAppendingToTheRunStateLeaveTheNodesRoomAlone(t *testing.T) {
	scribble := tool.MustFunc("scribble", "appends to the state it reads", func(ctx context.Context, in echoIn) (string, error) {
		s, ok := tool.RunState[agentState](ctx)
		if !ok {
			return "", errors.New("no run state")
		}
		for range 3 {
			s.Messages = append(s.Messages, model.User("scribbled "+in.Text))
		}
		conv := tool.Conversation(ctx)
		_ = append(conv, model.User("scribbled too"))
		return in.Text, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	calls := make([]model.ToolCall, 4)
	for i := range calls {
		calls[i] = model.ToolCall{ID: fmt.Sprint("c", i), Name: "scribble", Arguments: fmt.Appendf(nil, `{"text":"%d"}`, i)}
	}
	msgs := slices.Clip([]model.Message{model.User("go")})
	nodes.AppendReply(&msgs, model.Assistant("", calls...))
	in := agentState{Chat: nodes.Chat{Messages: msgs}}
	for _, ex := range []executor.Executor{executor.Parallel(), executor.Sequential()} {
		out, _, err := nodes.Tools[agentState]("llm", nodes.WithTools(scribble), nodes.WithExecutor(ex))(context.Background(), in)
		require.NoError(t, err)
		require.Len(t, out.Messages, 2+len(calls))
		assert.Same(t, &in.Messages[0], &out.Messages[0], "the node wrote into the room")
		for i := range calls {
			m := out.Messages[2+i]
			assert.Equal(t, model.RoleTool, m.Role)
			assert.Equal(t, fmt.Sprint("c", i), m.ToolCallID)
			assert.Equal(t, fmt.Sprint(i), m.Text())
		}
	}
}
