package nodes

import (
	"context"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
)

// ToolsCondition routes to toolsNode when the last message is an assistant
// message with tool calls, and to graph.END otherwise. Declare both
// destinations when adding it:
//
//	b.AddConditionalEdges("llm", nodes.ToolsCondition[State]("tools"), "tools", graph.END)
func ToolsCondition[S any, PS ChatState[S]](toolsNode string) graph.Route[S] {
	toTools, toEnd := []string{toolsNode}, []string{graph.END}
	return func(_ context.Context, s S) []string {
		if last, ok := lastMessage(*PS(&s).ChatMessages()); ok && last.Role == model.RoleAssistant && last.HasToolCalls() {
			return toTools
		}
		return toEnd
	}
}

func lastMessage(msgs []model.Message) (model.Message, bool) {
	if len(msgs) == 0 {
		return model.Message{}, false
	}
	return msgs[len(msgs)-1], true
}
