package nodes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// The model asks the user: the run pauses with the question, and resumes
// with the answer as the call's result, which the model reads.
func TestAskUserPausesForTheAnswer(t *testing.T) {
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("q1", nodes.AskUserName, `{"question":"Which city?","choices":["Oslo","Lima"]}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("Weather in " + req.Messages[len(req.Messages)-1].Text() + ": sunny.")}, nil
		}),
	)
	g := loop(t, m, []tool.Tool{nodes.AskUser()}, nil, graph.WithCheckpointer(memory.New()))
	ctx := context.Background()
	_, err := g.Invoke(ctx, user("What is the weather?"), graph.WithThread("t"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)
	assert.Equal(t, nodes.Question{Question: "Which city?", Choices: []string{"Oslo", "Lima"}, CallID: "q1"}, ie.Interrupts[0].Payload)
	def := m.Requests()[0].Tools[0]
	assert.Equal(t, nodes.AskUserName, def.Name)
	assert.Contains(t, string(def.InputSchema), `"minLength":1`)

	out, err := g.Resume(ctx, "t", graph.WithResumeValue("Lima"))
	require.NoError(t, err)
	msgs := out.Messages
	require.Len(t, msgs, 4)
	assert.Equal(t, "q1", msgs[2].ToolCallID)
	assert.Equal(t, "Lima", msgs[2].Text())
	assert.Equal(t, "Weather in Lima: sunny.", msgs[3].Text())
}

// A question that is empty or blank goes back to the model as an invalid
// call, and nothing pauses.
func TestAskUserRefusesAnEmptyQuestion(t *testing.T) {
	for _, args := range []string{`{"question":""}`, `{"question":"   "}`, `{}`} {
		r := tool.Invoke(context.Background(), nodes.AskUser(), model.ToolCall{ID: "q", Name: nodes.AskUserName, Arguments: []byte(args)})
		assert.True(t, r.IsError, args)
	}
}

// Each question is put to the user, even with a cache in the executor: an
// answer is one user's, never served for the same question in another run.
func TestAskUserIsNeverCached(t *testing.T) {
	exec := executor.Parallel(executor.WithMiddleware(middleware.Cache()))
	saver := memory.New()
	ask := nodes.AskUser()
	run := func(thread, answer string) string {
		m := scripted.New(
			scripted.CallTools(scripted.CallWithID("q", nodes.AskUserName, `{"question":"Your PIN?"}`)),
			scripted.Func(func(req *model.Request) (*model.Response, error) {
				return &model.Response{Message: model.Assistant(req.Messages[len(req.Messages)-1].Text())}, nil
			}),
		)
		g := loop(t, m, []tool.Tool{ask}, []nodes.ToolsOption{nodes.WithExecutor(exec)}, graph.WithCheckpointer(saver))
		ctx := context.Background()
		_, err := g.Invoke(ctx, user("hi"), graph.WithThread(thread))
		var ie *graph.InterruptError
		require.ErrorAs(t, err, &ie, "thread %s is asked", thread)
		out, err := g.Resume(ctx, thread, graph.WithResumeValue(answer))
		require.NoError(t, err)
		return out.Messages[len(out.Messages)-1].Text()
	}
	assert.Equal(t, "1234", run("alice", "1234"))
	assert.Equal(t, "9999", run("bob", "9999"))
}
