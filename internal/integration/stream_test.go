package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state"
)

// pathOf joins an event's path, for grouping.
func pathOf(ev graph.Event) string { return strings.Join(ev.Path, "/") }

// toolEvents returns "<kind> <path>:<tool>" for the tool events of evs.
func toolEvents(evs []graph.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Kind == nodes.KindToolStart || ev.Kind == nodes.KindToolEnd {
			out = append(out, string(ev.Kind)+" "+pathOf(ev)+":"+ev.Name)
		}
	}
	return out
}

// checkNodesBalanced asserts that, per path, every node start is followed
// by its end before the stream finishes.
func checkNodesBalanced(t *testing.T, evs []graph.Event) {
	t.Helper()
	open := map[string]int{}
	for _, ev := range evs {
		key := pathOf(ev) + "|" + ev.Node
		switch ev.Kind {
		case graph.KindNodeStart:
			open[key]++
		case graph.KindNodeEnd:
			open[key]--
			assert.GreaterOrEqual(t, open[key], 0, "node end without start: %s", key)
		}
	}
	for k, n := range open {
		assert.Zero(t, n, "node %s started without ending", k)
	}
}

// The whole team streamed: the workers' events arrive with their names as
// Path, the pause is the stream's one interrupt event followed by an
// *InterruptError, and the resumed stream carries only the work left (the
// payer's), ending with the final state.
func TestSupervisorStreamAndResumeStream(t *testing.T) {
	slow(t)
	eachStore(t, func(t *testing.T, saver state.Saver) {
		ctx := context.Background()
		team := newBillingTeam(t, saver)
		modes := graph.ModeEvents | graph.ModeUpdates | graph.ModeCustom | graph.ModeValues

		evs, err := collect(team.sup.Stream(ctx, agent.Ask("INV-7"), graph.WithThread("s"), graph.WithModes(modes)))
		var ie *graph.InterruptError
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Interrupts, 1)
		require.NotEmpty(t, evs)
		last := evs[len(evs)-1]
		require.Equal(t, graph.KindInterrupt, last.Kind, "the stream's last event: %s", describe(last))
		assert.Empty(t, last.Path)
		assert.Equal(t, ie.Interrupts, last.Payload)
		n := 0
		for _, ev := range evs {
			if ev.Kind == graph.KindInterrupt {
				n++
			}
		}
		assert.Equal(t, 1, n, "one interrupt event, for the top-level run")
		checkNodesBalanced(t, evs)

		te := toolEvents(evs)
		for _, want := range []string{
			"tool_start :researcher", "tool_start :payer",
			"tool_start researcher:lookup", "tool_end researcher:lookup",
			"tool_start payer:pay", "tool_end payer:pay",
			"tool_end :researcher",
		} {
			assert.Contains(t, te, want)
		}
		// The researcher's handoff finishes in the first part of the batch;
		// the payer's call then waits alone, in a new superstep, where its
		// agent resumes from its checkpoints and asks again.
		count := func(evs []string, s string) int {
			n := 0
			for _, e := range evs {
				if e == s {
					n++
				}
			}
			return n
		}
		assert.Equal(t, 1, count(te, "tool_start :researcher"))
		assert.Equal(t, 2, count(te, "tool_start :payer"))
		assert.Equal(t, 1, team.payM.Calls(), "the payer's model is called once")
		assert.Equal(t, 1, team.supM.Calls())
		assert.Less(t, slices.Index(te, "tool_start researcher:lookup"), slices.Index(te, "tool_end :researcher"))

		evs, err = collect(team.sup.ResumeStream(ctx, "s", graph.WithResumeValue(true), graph.WithModes(modes)))
		require.NoError(t, err)
		require.NotEmpty(t, evs)
		done := evs[len(evs)-1]
		require.Equal(t, graph.KindDone, done.Kind)
		final, ok := done.State.(agent.State)
		require.True(t, ok, "the final state is the supervisor's: %T", done.State)
		assert.Equal(t, "done: found: INV-7 is due | payer: paid INV-7", agent.FinalText(final.Messages))
		checkNodesBalanced(t, evs)
		for _, ev := range evs {
			assert.NotEqual(t, "researcher", pathOf(ev), "the researcher's work is not redone: %s", describe(ev))
			assert.NotEqual(t, graph.KindInterrupt, ev.Kind)
		}
		te = toolEvents(evs)
		assert.Equal(t, []string{
			"tool_start :payer", "tool_start payer:pay", "tool_end payer:pay", "tool_end :payer",
		}, te)

		// The last values event of the top-level graph is the final state.
		var lastValues *graph.Event
		for i := range evs {
			if evs[i].Kind == graph.KindValues && len(evs[i].Path) == 0 {
				lastValues = &evs[i]
			}
		}
		require.NotNil(t, lastValues)
		assert.Equal(t, final, lastValues.State)
		assert.Equal(t, []string{"INV-7"}, team.paid.drain())
	})
}
