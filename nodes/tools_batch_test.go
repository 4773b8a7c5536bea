package nodes_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// TestToolsNodeMessageIDs calls a ToolsNode directly with calls whose IDs
// differ in length (one is empty) and checks that each answer is a tool
// message whose ID is ToolMessageID of its call's ID, in call order, with
// both executors; the input state is left as it was.
func TestToolsNodeMessageIDs(t *testing.T) {
	ids := []string{"call_0", "", "a", "call_with_a_much_longer_identifier_0123456789", "ü-ñ", "z"}
	calls := make([]model.ToolCall, len(ids))
	for i, id := range ids {
		calls[i] = model.ToolCall{ID: id, Name: "sleep", Arguments: []byte(`{"ms":0,"name":"n` + id + `"}`)}
	}
	for _, ex := range []struct {
		name string
		e    executor.Executor
	}{
		{"sequential", executor.Sequential(executor.WithObserver(nodes.ToolEvents))},
		{"parallel", executor.Parallel(executor.WithObserver(nodes.ToolEvents))},
	} {
		t.Run(ex.name, func(t *testing.T) {
			var ran atomic.Int32
			node := nodes.Tools[agentState]("llm", nodes.WithTools(sleeper(&ran)), nodes.WithExecutor(ex.e))
			in := agentState{Chat: nodes.Chat{Messages: slices.Clip([]model.Message{model.User("go"), model.Assistant("", calls...)})}}
			before := slices.Clone(in.Messages)

			out, cmd, err := node(context.Background(), in)
			require.NoError(t, err)
			assert.Equal(t, []string{"llm"}, cmd.Goto)
			assert.Equal(t, before, in.Messages, "the input state is not changed")
			require.Len(t, out.Messages, 2+len(ids))
			for i, id := range ids {
				m := out.Messages[2+i]
				assert.Equal(t, model.RoleTool, m.Role)
				assert.Equal(t, id, m.ToolCallID)
				assert.Equal(t, nodes.ToolMessageID(id), m.ID)
				assert.Equal(t, "tool:"+id, m.ID)
				assert.Equal(t, "sleep", m.ToolName)
				assert.Equal(t, "slept n"+id, m.Text())
			}
			assert.Equal(t, int32(len(ids)), ran.Load())
		})
	}
}

// TestToolsNodeMixedBatch interleaves calls of a caller-executed tool with
// calls the ToolsNode runs, several of each tool in a row: the node runs
// exactly its own calls, keeps their answers, pauses for the caller's calls
// and, on resume, answers those in call order.
func TestToolsNodeMixedBatch(t *testing.T) {
	var ran atomic.Int32
	ask, err := tool.NewDeclaration(model.ToolDefinition{Name: "ask_user", Description: "asks the user", InputSchema: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)})
	require.NoError(t, err)
	m := scripted.New(
		scripted.CallTools(
			scripted.CallWithID("s1", "sleep", `{"ms":0,"name":"one"}`),
			scripted.CallWithID("s2", "sleep", `{"ms":0,"name":"two"}`),
			scripted.CallWithID("x1", "ask_user", `{"q":"color?"}`),
			scripted.CallWithID("x2", "ask_user", `{"q":"size?"}`),
			scripted.CallWithID("s3", "sleep", `{"ms":0,"name":"three"}`),
			scripted.CallWithID("x3", "ask_user", `{"q":"name?"}`),
		),
		scripted.Reply("thanks"),
	)
	g := loop(t, m, []tool.Tool{sleeper(&ran), ask}, nil, graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err = g.Invoke(ctx, user("hi"), graph.WithThread("mixed"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	pending, ok := ie.Interrupts[0].Payload.(nodes.PendingToolCalls)
	require.True(t, ok)
	var pendingIDs []string
	for _, c := range pending.Calls {
		pendingIDs = append(pendingIDs, c.ID)
	}
	assert.Equal(t, []string{"x1", "x2", "x3"}, pendingIDs)
	assert.Equal(t, int32(3), ran.Load(), "the node ran its three calls and no other")

	out, err := g.Resume(ctx, "mixed", graph.WithResumeValue(map[string]tool.Result{
		"x3": tool.Text("Ada"), "x1": tool.Text("blue"), "x2": tool.Text("large"),
	}))
	require.NoError(t, err)
	var got []string
	for _, msg := range out.Messages {
		if msg.Role == model.RoleTool {
			got = append(got, msg.ToolCallID+"="+msg.Text())
			assert.Equal(t, nodes.ToolMessageID(msg.ToolCallID), msg.ID)
		}
	}
	assert.Equal(t, []string{"s1=slept one", "s2=slept two", "s3=slept three", "x1=blue", "x2=large", "x3=Ada"}, got,
		"the node's own answers are kept first, the caller's follow in call order")
	assert.Equal(t, int32(3), ran.Load(), "no call ran twice")
	assert.Equal(t, "thanks", out.Messages[len(out.Messages)-1].Text())
}
