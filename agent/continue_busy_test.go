package agent_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
)

// overtakingSaver runs overtake once, right after the next read of a
// thread's latest checkpoint: another turn lands between a Continue's
// read of the thread and its run.
type overtakingSaver struct {
	*memory.Saver
	overtake atomic.Pointer[func()]
}

func (s *overtakingSaver) Get(ctx context.Context, thread, ns, id string) (state.Tuple, error) {
	tup, err := s.Saver.Get(ctx, thread, ns, id)
	if f := s.overtake.Swap(nil); f != nil && id == "" {
		(*f)()
	}
	return tup, err
}

// echoAgent answers every user message by quoting it.
func echoAgent(t *testing.T, saver state.Saver) *graph.Graph[agent.State] {
	t.Helper()
	m := scripted.New()
	step := scripted.Func(func(req *model.Request) (*model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		return &model.Response{Message: model.Assistant("you said " + last.Text())}, nil
	})
	m.Fallback = &step
	g, err := agent.NewReAct(m, agent.WithCheckpointer(saver))
	require.NoError(t, err)
	return g
}

// TestContinueOvertakenByAnotherTurnIsRefused: a turn that another turn
// overtook between Continue's read of the thread and its run would, run,
// replace the thread's conversation with one that lacks the other turn.
// Continue refuses it instead, with an error matching graph.ErrThreadBusy,
// and the thread keeps the other turn and nothing of the refused one.
func TestContinueOvertakenByAnotherTurnIsRefused(t *testing.T) {
	ctx := context.Background()
	shared := memory.New()
	saver := &overtakingSaver{Saver: shared}
	g := echoAgent(t, saver)
	other := echoAgent(t, shared) // another replica, over the same store
	_, err := agent.Continue(ctx, g, "t", "hello")
	require.NoError(t, err)

	overtake := func() {
		_, err := agent.Continue(ctx, other, "t", "overtaking")
		require.NoError(t, err)
	}
	saver.overtake.Store(&overtake)
	_, err = agent.Continue(ctx, g, "t", "overtaken")
	require.ErrorIs(t, err, graph.ErrThreadBusy)
	assert.ErrorIs(t, err, state.ErrNotLatest)

	snap, err := g.GetState(ctx, "t")
	require.NoError(t, err)
	var texts []string
	for _, m := range snap.State.Messages {
		texts = append(texts, m.Text())
	}
	assert.Equal(t, []string{"hello", "you said hello", "overtaking", "you said overtaking"}, texts)

	// Read again, the turn goes through.
	out, err := agent.Continue(ctx, g, "t", "overtaken")
	require.NoError(t, err)
	assert.Equal(t, "you said overtaken", agent.FinalText(out.Messages))
	assert.Len(t, out.Messages, 6)
}
