package handoff_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// An interrupt raised in a retried attempt resumes that attempt, with the
// answer, and nothing the failed attempt did runs again.
func TestInterruptInARetriedAttemptResumesThatAttempt(t *testing.T) {
	var asked int
	approve := tool.MustFunc("approve", "asks a human", func(ctx context.Context, in struct {
		Plan string `json:"plan"`
	}) (string, error) {
		asked++
		ok, err := graph.Interrupt[string](ctx, "approve "+in.Plan+"?")
		if err != nil {
			return "", err
		}
		return "human says " + ok, nil
	})
	wm := scripted.New(
		scripted.Fail(errors.New("model overloaded")),                                 // attempt 1 fails
		scripted.CallTools(scripted.CallWithID("a1", "approve", `{"plan":"launch"}`)), // attempt 2 asks
		lastToolText("worker: "),
	)
	h, err := handoff.New("planner", "plans", worker(t, "planner", wm, agent.WithTools(approve)), handoff.WithRetries(1, 0))
	require.NoError(t, err)
	pm := scripted.New(scripted.CallTools(scripted.CallWithID("p1", "planner", `{"task":"plan the launch"}`)), lastToolText("boss: "))
	g := parent(t, pm, []tool.Tool{h}, agent.WithCheckpointer(memory.New()))
	ctx := context.Background()

	_, err = g.Invoke(ctx, agent.Ask("launch?"), graph.WithThread("t1"))
	var ie *graph.InterruptError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Interrupts, 1)

	out, err := g.Resume(ctx, "t1", graph.WithResumeValue("yes"))
	require.NoError(t, err)
	assert.Equal(t, "boss: worker: human says yes", agent.FinalText(out.Messages),
		"the interrupted attempt resumes with the human's answer")
	assert.Equal(t, 3, wm.Calls(), "the failed attempt is not run again")
}
