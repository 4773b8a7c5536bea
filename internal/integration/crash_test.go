package integration

import (
	"context"
	"iter"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/tool"
)

// slowTool blocks, when block is set, until its context ends (after
// closing started); otherwise it answers at once.
type slowTool struct {
	started chan struct{}
	block   bool
	runs    *counter
}

func (s *slowTool) tool() tool.Tool {
	return tool.MustFunc("draft", "drafts a text", func(ctx context.Context, in struct {
		Topic string `json:"topic"`
	}) (string, error) {
		s.runs.add(in.Topic)
		if s.block {
			close(s.started)
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "draft about " + in.Topic, nil
	}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
}

// writerAgent is a ReAct agent that drafts once with s and answers.
func writerAgent(t *testing.T, saver state.Saver, s *slowTool) *graph.Graph[agent.State] {
	t.Helper()
	m := oneToolWorker("writer", "draft", "writer: ", func(task string) string {
		return jsonArgs(map[string]string{"topic": task})
	})
	g, err := agent.NewReAct(m, agent.WithTools(s.tool()), agent.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// A run cancelled while a tool runs (a process stopping) must leave the
// call unanswered: a fresh graph over the same store resumes the thread,
// the tool runs again, and the model reads its real answer rather than
// the cancellation.
func TestCancelledToolRunsAgainOnResume(t *testing.T) {
	slow(t)
	eachStore(t, func(t *testing.T, saver state.Saver) {
		first := &slowTool{started: make(chan struct{}), block: true, runs: newCounter()}
		g := writerAgent(t, saver, first)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := g.Invoke(ctx, agent.Ask("goroutines"), graph.WithThread("crash"))
			done <- err
		}()
		<-first.started
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)

		_, err := agent.Continue(context.Background(), g, "crash", "anything else?")
		require.ErrorIs(t, err, agent.ErrUnansweredCalls, "the thread ends with a call no tool message answers")

		second := &slowTool{runs: newCounter()}
		out, err := writerAgent(t, saver, second).Resume(context.Background(), "crash")
		require.NoError(t, err)
		assert.Equal(t, []string{"goroutines"}, second.runs.drain(), "the cancelled call runs again")
		assert.Equal(t, "writer: draft about goroutines", agent.FinalText(out.Messages))
	})
}

// gateModel plays inner, except that its call number blockAt blocks until
// the call's context ends, after closing started.
type gateModel struct {
	inner   model.Model
	blockAt int
	started chan struct{}
	n       int
}

func (m *gateModel) blocks() bool {
	m.n++
	if m.n == m.blockAt {
		close(m.started)
		return true
	}
	return false
}

func (m *gateModel) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if m.blocks() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return m.inner.Generate(ctx, req)
}

func (m *gateModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	if m.blocks() {
		return func(yield func(model.Chunk, error) bool) {
			<-ctx.Done()
			yield(model.Chunk{}, ctx.Err())
		}
	}
	return m.inner.Stream(ctx, req)
}

// A run cancelled while its model reads the tool results (a process
// stopping) leaves the thread after the tools' superstep: a fresh graph over
// the same store resumes it without running the tool again, and the next
// turn continues the conversation.
func TestCancelledModelCallResumesOnAFreshGraph(t *testing.T) {
	slow(t)
	eachStore(t, func(t *testing.T, saver state.Saver) {
		gm := &gateModel{
			inner: oneToolWorker("writer", "draft", "writer: ", func(task string) string {
				return jsonArgs(map[string]string{"topic": task})
			}),
			blockAt: 2,
			started: make(chan struct{}),
		}
		tools := &slowTool{runs: newCounter()}
		g, err := agent.NewReAct(gm, agent.WithTools(tools.tool()), agent.WithCheckpointer(saver))
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := g.Invoke(ctx, agent.Ask("channels"), graph.WithThread("crash"))
			done <- err
		}()
		<-gm.started
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		assert.Equal(t, []string{"channels"}, tools.runs.drain())

		snap, err := g.GetState(context.Background(), "crash")
		require.NoError(t, err)
		assert.Equal(t, []string{agent.AgentNode}, snap.Next, "the model's step runs next")
		assert.Empty(t, snap.Interrupts)

		fresh := &slowTool{runs: newCounter()}
		g2 := writerAgent(t, saver, fresh)
		out, err := g2.Resume(context.Background(), "crash")
		require.NoError(t, err)
		assert.Empty(t, fresh.runs.drain(), "the tool's finished superstep is not run again")
		assert.Equal(t, "writer: draft about channels", agent.FinalText(out.Messages))

		out, err = agent.Continue(context.Background(), g2, "crash", "select")
		require.NoError(t, err)
		assert.Equal(t, "writer: draft about select", agent.FinalText(out.Messages))
		assert.Equal(t, []string{"select"}, fresh.runs.drain())
		assert.Equal(t, 2, userTurns(out.Messages))
	})
}
