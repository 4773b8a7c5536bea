package agent_test

import (
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
)

// echoLastTool answers with the text of the last tool message, prefixed.
func echoLastTool(prefix string) scripted.Step {
	return scripted.Func(func(req *model.Request) (*model.Response, error) {
		var texts []string
		for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == model.RoleTool; i-- {
			texts = append([]string{req.Messages[i].Text()}, texts...)
		}
		return &model.Response{Message: model.Assistant(prefix + strings.Join(texts, " | "))}, nil
	})
}

// cityIn is the argument of the tools these tests call.
type cityIn struct {
	City string `json:"city"`
}
