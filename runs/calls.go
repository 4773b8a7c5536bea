package runs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
)

// CompleteCall answers a long-running tool call late, from any process:
// the call's run left a pending result in its thread's conversation (a
// tool returned tool.PendingResult, and its ToolsNode was not given an
// in-process tool.Pending), and the work has now finished. CompleteCall
// starts a run of graphName on the thread, queued behind any active run
// (StrategyEnqueue), whose input replaces the pending answer with r — a
// tool message with the ID nodes.ToolMessageID(callID), which the
// conversation's reducer (state.Keyed) puts in the pending one's place —
// and the graph runs from its entry node, so the agent reacts to the
// result. toolName is the called tool's name.
//
// The graph's state must keep its conversation as nodes.Chat does (a
// "messages" field with the keyed reducer), as the prebuilt agents' does.
func (m *Manager) CompleteCall(ctx context.Context, graphName, thread, callID, toolName string, r tool.Result) (Run, error) {
	if callID == "" || thread == "" {
		return Run{}, fmt.Errorf("runs: %w: completing a call needs its thread and its call ID", ErrInvalid)
	}
	if r.Pending {
		return Run{}, fmt.Errorf("runs: %w: call %s: a completion must be final, not pending again", ErrInvalid, quoteCut(callID))
	}
	msg := r.Message(callID, toolName)
	msg.ID = nodes.ToolMessageID(callID)
	in, err := json.Marshal(map[string]any{"messages": []any{msg}})
	if err != nil {
		return Run{}, fmt.Errorf("runs: call %s: the result does not encode as JSON: %w", quoteCut(callID), err)
	}
	return m.Start(ctx, Request{Graph: graphName, Thread: thread, IfNotExists: IfNotExistsReject,
		Input: in, Strategy: StrategyEnqueue, Metadata: map[string]any{"completes_call": callID}})
}
