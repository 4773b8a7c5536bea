package handoff

import (
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// MetaParentGoto is the key, in the metadata of a tool message of an
// agent run by a handoff, of the node its caller's graph goes to next
// (see ToParent).
const MetaParentGoto = "trellis.handoff.parent_goto"

// ToParent returns a tool result, for a tool of an agent that a handoff
// runs, that ends the agent's loop (Terminate: when every result of its
// batch terminates, as tool.AllTerminate says) and routes its caller: once
// the handoff returns, the caller's ToolsNode goes to node rather than
// back to the caller's model. graph.END ends the caller's turn, with the
// agent's answer as the turn's answer (the handoff's result terminates and
// escalates); another name continues the caller's graph at that node, a
// transfer (tool.Actions.TransferTo) that the caller's ToolsNode must
// declare (nodes.WithTransfers). text is what the agent's model sees as the
// tool's result.
//
// The route is recorded in the agent's conversation (MetaParentGoto on the
// tool message), so it survives the agent's checkpoints and a resumed
// call routes as the first run did. The last such message of the agent's
// run decides.
func ToParent(text, node string) tool.Result {
	r := tool.Text(text)
	r.Terminate = true
	r.Metadata = map[string]string{MetaParentGoto: strings.TrimSpace(node)}
	return r
}

// parentRoute returns the node that the last ToParent result among an
// agent's added messages names.
func parentRoute(added []model.Message) (string, bool) {
	for i := len(added) - 1; i >= 0; i-- {
		m := &added[i]
		if to := m.Metadata[MetaParentGoto]; m.Role == model.RoleTool && to != "" {
			return to, true
		}
	}
	return "", false
}
