package agui

import (
	"context"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// pageState returns how the client's state (WithState) reaches the run
// that resumes a thread waiting for the application's tools: the state
// comes with the answers, since the application's tools are what changes
// it (a cart a page's tool added to). The ToolsNode that waits applies the
// state with the answers, as a state update of the first answer
// (tool.Actions.Update), so that the run goes on from the application's
// state, its tools see it and its snapshots show it.
//
// It returns nil when there is nothing to carry: no WithState, no state
// in the request, or a thread that waits for more than the application's
// tools (a question of another task, whose resume keeps the paused run's
// state). A state that WithState refuses is an *InputError (400), found
// before anything runs.
func (r *graphRunner[S, PS]) pageState(ctx context.Context, in *RunInput, snap graph.Snapshot[S]) (func(map[string]tool.Result, []model.ToolCall), error) {
	if r.setState == nil || len(in.State) == 0 || len(snap.Interrupts) != 1 {
		return nil, nil
	}
	if _, ok := pendingCalls(snap.Interrupts[0]); !ok || len(snap.Interrupts[0].Path) > 0 {
		return nil, nil
	}
	scratch := snap.State
	if err := r.applyState(ctx, in, &scratch); err != nil {
		return nil, err
	}
	return func(answers map[string]tool.Result, calls []model.ToolCall) {
		for _, c := range calls {
			res, ok := answers[c.ID]
			if !ok {
				continue
			}
			res.Actions.Update = func(s *S) {
				// Checked on the thread's state above: WithState's function
				// takes it.
				_ = r.setState(ctx, in.State, s)
				// The answers stay among the run's resume values, which the
				// graph saves as JSON when the run pauses again (the model
				// calls the application's tools once more); a function is
				// not JSON. The ToolsNode has read its answers by now, and
				// it is the only task of its superstep (the thread waited
				// for nothing else), so nothing reads the map meanwhile.
				clean := answers[c.ID]
				clean.Actions.Update = nil
				answers[c.ID] = clean
			}
			answers[c.ID] = res
			return
		}
	}, nil
}
