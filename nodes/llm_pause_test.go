package nodes_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
)

// A reply the provider paused (model.FinishPaused) goes back with the
// conversation, and the model goes on with its turn; after MaxPauses in a
// row the paused reply is the answer.
func TestPausedTurnContinues(t *testing.T) {
	var sizes []int
	paused := func(text string) scripted.Step {
		return scripted.Func(func(req *model.Request) (*model.Response, error) {
			sizes = append(sizes, len(req.Messages))
			return &model.Response{Message: model.Assistant(text), FinishReason: model.FinishPaused}, nil
		})
	}
	done := scripted.Func(func(req *model.Request) (*model.Response, error) {
		sizes = append(sizes, len(req.Messages))
		return &model.Response{Message: model.Assistant("Here is what I found."), FinishReason: "stop"}, nil
	})
	g, err := agent.NewReAct(scripted.New(paused("Searching..."), paused("Still searching..."), done))
	require.NoError(t, err)
	out, err := g.Invoke(context.Background(), agent.Ask("find it"))
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, sizes, "each call sees the paused replies before it")
	require.Len(t, out.Messages, 4)
	assert.Equal(t, "Here is what I found.", agent.FinalText(out.Messages))

	steps := make([]scripted.Step, nodes.MaxPauses+2)
	for i := range steps {
		steps[i] = paused("again")
	}
	m := scripted.New(steps...)
	g, err = agent.NewReAct(m)
	require.NoError(t, err)
	out, err = g.Invoke(context.Background(), agent.Ask("find it"))
	require.NoError(t, err)
	assert.Len(t, out.Messages, 1+nodes.MaxPauses+1, "the first reply and MaxPauses continuations")
}
