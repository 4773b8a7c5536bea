package main

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

// noArgs is the input of the tools that take no arguments.
type noArgs struct{}

// toolset returns the tools the server scenarios call, by the names the
// suite gives them.
func toolset() (tool.Toolset, error) {
	pngData, wavData := redPixelPNG(), silentWAV()
	var (
		tools []tool.Tool
		errs  error
	)
	add := func(ts []tool.Tool, err error) {
		tools = append(tools, ts...)
		errs = errors.Join(errs, err)
	}
	raw := func(name, desc, schema string, fn tool.CallFunc) {
		add(one(tool.New(model.ToolDefinition{Name: name, Description: desc, InputSchema: json.RawMessage(schema)}, fn)))
	}
	none := `{"type":"object","properties":{}}`
	constant := func(name, desc string, parts ...model.Part) {
		raw(name, desc, none, func(context.Context, string, json.RawMessage) (tool.Result, error) {
			return tool.Parts(parts...), nil
		})
	}

	constant("test_simple_text", "Returns a simple text.", model.TextPart("This is a simple text response for testing."))
	constant("test_image_content", "Returns a 1x1 red PNG image.", model.ImagePart("image/png", pngData))
	constant("test_audio_content", "Returns a short silent WAV sound.", model.AudioPart("audio/wav", wavData))
	constant("test_embedded_resource", "Returns an embedded text resource.",
		model.TextResourcePart("test://embedded-resource", "text/plain", "This is an embedded resource content."))
	constant("test_multiple_content_types", "Returns text, an image and an embedded resource.",
		model.TextPart("Multiple content types test:"),
		model.ImagePart("image/png", pngData),
		model.TextResourcePart("test://mixed-content-resource", "application/json", `{"test":"data","value":123}`))
	raw("test_error_handling", "Always fails.", none, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Result{}, errors.New("this tool always fails, to test error handling")
	})
	raw("test_tool_with_logging", "Logs three messages while it runs.", none, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return tool.Result{}, ctx.Err()
			}
			logInfo(ctx, msg)
		}
		return tool.Text("Logging test completed."), nil
	})
	raw("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100.", none, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		for i, p := range []float64{0, 50, 100} {
			if i > 0 && !sleep(ctx, 50*time.Millisecond) {
				return tool.Result{}, ctx.Err()
			}
			reportProgress(ctx, p, 100)
		}
		return tool.Text("Progress test completed."), nil
	})
	add(samplingTools())
	add(elicitationTools())
	raw("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", jsonSchema202012,
		func(context.Context, string, json.RawMessage) (tool.Result, error) { return tool.Text("ok"), nil })
	raw("test_reconnection", "Closes its stream, then answers after a pause, long enough for the client to resume the stream.", none,
		func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
			mcp.CloseStream(ctx, 10*time.Millisecond)
			if !sleep(ctx, 100*time.Millisecond) {
				return tool.Result{}, ctx.Err()
			}
			return tool.Text("Reconnection test completed successfully"), nil
		})
	if errs != nil {
		return nil, errs
	}
	return tool.NewStatic("conformance", tools...), nil
}

// one lists t, unless err.
func one[T tool.Tool](t T, err error) ([]tool.Tool, error) {
	if err != nil {
		return nil, err
	}
	return []tool.Tool{t}, nil
}

// jsonSchema202012 is the input schema json-schema-2020-12 expects to see
// listed unchanged: $schema, $defs and additionalProperties.
const jsonSchema202012 = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "$defs": {
    "address": {
      "type": "object",
      "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
    }
  },
  "properties": {
    "name": {"type": "string"},
    "address": {"$ref": "#/$defs/address"}
  },
  "additionalProperties": false
}`

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
