package mcp

import (
	"context"
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// BenchmarkCallInMemory measures one tool call through the whole stack: a
// Trellis tool served over MCP, called through a Toolset over an in-memory
// connection (argument validation on both sides, JSON-RPC, result mapping).
func BenchmarkCallInMemory(b *testing.B) {
	srv, _ := newFixtureServer(b, nil)
	ts := memToolset(b, srv)
	ctx := context.Background()
	tools, err := ts.Tools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	add := find(b, tools, "add")
	call := model.ToolCall{ID: "c", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}
	iv := tool.NewInvoker()
	b.ReportAllocs()
	for b.Loop() {
		if r := iv.Invoke(ctx, add, call); r.IsError {
			b.Fatal(r.Text())
		}
	}
}

// BenchmarkResult measures the mapping of an MCP result with text,
// structured content and an image onto Trellis parts.
func BenchmarkResult(b *testing.B) {
	res := &sdk.CallToolResult{
		Content: []sdk.Content{
			&sdk.TextContent{Text: "intro"},
			&sdk.TextContent{Text: `{"temperature":20,"sky":"clear"}`},
			&sdk.ImageContent{Data: pixel, MIMEType: "image/png"},
		},
		StructuredContent: map[string]any{"temperature": 20, "sky": "clear"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := Result("s", "t", res); len(r.Content) != 3 {
			b.Fatal(r.Content)
		}
	}
}
