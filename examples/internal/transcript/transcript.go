package transcript

import "github.com/trellis-go/trellis/model"

// ToolResults returns the tool messages after the last user message, in
// order.
func ToolResults(msgs []model.Message) []model.Message {
	start := len(msgs)
	for start > 0 && msgs[start-1].Role != model.RoleUser {
		start--
	}
	var out []model.Message
	for _, m := range msgs[start:] {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

// LastUser returns the text of the last user message, or "" when there is
// none.
func LastUser(msgs []model.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleUser {
			return msgs[i].Text()
		}
	}
	return ""
}
