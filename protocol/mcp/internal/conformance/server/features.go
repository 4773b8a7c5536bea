package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// audioPart returns an audio part.
func audioPart(mimeType string, data []byte) model.Part {
	raw, _ := json.Marshal(map[string]any{"type": "audio", "mime_type": mimeType, "data": data})
	return model.JSONPart(raw)
}

// resourcePart returns an embedded text resource.
func resourcePart(_, _, text string) model.Part { return model.TextPart(text) }

// logInfo sends a log message at level info to the client.
func logInfo(context.Context, string) {}

// reportProgress reports progress of total.
func reportProgress(ctx context.Context, progress, total float64) {
	tool.ReportProgress(ctx, tool.Update{Message: fmt.Sprintf("%v/%v", progress, total)})
}

var errUnsupported = errors.New("not supported")

// samplingTools returns test_sampling.
func samplingTools() ([]tool.Tool, error) {
	return one(tool.New(model.ToolDefinition{Name: "test_sampling", Description: "Asks the client's model to answer a prompt.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}`)},
		func(context.Context, string, json.RawMessage) (tool.Result, error) {
			return tool.Result{}, errUnsupported
		}))
}

// elicitationTools returns the tools that ask the client's user.
func elicitationTools() ([]tool.Tool, error) {
	var out []tool.Tool
	for _, name := range []string{"test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"} {
		schema := `{"type":"object","properties":{}}`
		if name == "test_elicitation" {
			schema = `{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`
		}
		t, err := tool.New(model.ToolDefinition{Name: name, Description: "Asks the client's user.", InputSchema: json.RawMessage(schema)},
			func(context.Context, string, json.RawMessage) (tool.Result, error) {
				return tool.Result{}, errUnsupported
			})
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
