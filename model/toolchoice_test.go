package model_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/model"
)

func TestToolChoiceCheck(t *testing.T) {
	tools := []model.ToolDefinition{{Name: "search"}, {Name: "fetch"}}
	for _, tt := range []struct {
		name   string
		choice model.ToolChoice
		tools  []model.ToolDefinition
		want   string // "" for no error
	}{
		{"auto without tools", model.ToolChoice{}, nil, ""},
		{"none without tools", model.ToolChoice{Mode: model.ToolChoiceNone}, nil, ""},
		{"required with tools", model.ToolChoice{Mode: model.ToolChoiceRequired}, tools, ""},
		{"required without tools", model.ToolChoice{Mode: model.ToolChoiceRequired}, nil, "tool choice requires a tool call, but the request offers no tools"},
		{"a tool offered", model.ToolChoice{Mode: model.ToolChoiceTool, Name: "fetch"}, tools, ""},
		{"a tool not offered", model.ToolChoice{Mode: model.ToolChoiceTool, Name: "serch"}, tools, `tool choice names tool "serch", which the request does not offer (tools: search, fetch)`},
		{"a tool without tools", model.ToolChoice{Mode: model.ToolChoiceTool, Name: "search"}, nil, `tool choice names tool "search", but the request offers no tools`},
		{"no name: the provider's to judge", model.ToolChoice{Mode: model.ToolChoiceTool}, tools, ""},
		{"an unknown mode: the provider's to judge", model.ToolChoice{Mode: "often"}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.choice.Check(tt.tools)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.want)
		})
	}
}
