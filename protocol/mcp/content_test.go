package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestParts(t *testing.T) {
	size := int64(12)
	tests := []struct {
		name string
		in   sdk.Content
		want model.Part
	}{
		{"text", &sdk.TextContent{Text: "hi"}, model.TextPart("hi")},
		{"image", &sdk.ImageContent{Data: pixel, MIMEType: "image/png"}, model.ImagePart("image/png", pixel)},
		{"resource link", &sdk.ResourceLink{URI: "file:///a.txt", Name: "a", MIMEType: "text/plain", Size: &size},
			model.JSONPart(json.RawMessage(`{"type":"resource_link","uri":"file:///a.txt","name":"a","mime_type":"text/plain","size":12}`))},
		{"text resource", &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://n", Text: "note"}},
			model.TextResourcePart("mem://n", "", "note")},
		{"image resource", &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://i", MIMEType: "image/gif", Blob: []byte("GIF")}},
			model.BlobResourcePart("mem://i", "image/gif", []byte("GIF"))},
		{"binary resource", &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "mem://z", MIMEType: "application/zip", Blob: []byte("PK")}},
			model.BlobResourcePart("mem://z", "application/zip", []byte("PK"))},
		{"audio", &sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"}, model.AudioPart("audio/wav", []byte("RIFF"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parts([]sdk.Content{tt.in})
			require.Len(t, got, 1)
			if tt.want.Type == model.PartJSON {
				assert.Equal(t, model.PartJSON, got[0].Type)
				assert.JSONEq(t, string(tt.want.JSON), string(got[0].JSON))
				return
			}
			assert.Equal(t, tt.want, got[0])
		})
	}
	assert.Empty(t, Parts([]sdk.Content{nil, &sdk.EmbeddedResource{}}), "empty content is dropped")
}

func TestContentRoundTripKeepsEveryKind(t *testing.T) {
	in := []sdk.Content{
		&sdk.TextContent{Text: "hi"},
		&sdk.ImageContent{Data: pixel, MIMEType: "image/png"},
		&sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://t", MIMEType: "text/plain", Text: "note"}},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://b", MIMEType: "application/zip", Blob: []byte("PK")}},
	}
	out := Content(Parts(in))
	want, err := json.Marshal(in)
	require.NoError(t, err)
	got, err := json.Marshal(out)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
}

func TestResult(t *testing.T) {
	weather := map[string]any{"temperature": 20, "sky": "clear"}
	tests := []struct {
		name   string
		in     *sdk.CallToolResult
		want   []model.Part
		failed bool
	}{
		{"nil", nil, nil, false},
		{"text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}},
			[]model.Part{model.TextPart("ok")}, false},
		{"structured replaces its text copy", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: "intro"}, &sdk.TextContent{Text: `{"sky": "clear", "temperature": 20}`}},
			StructuredContent: weather,
		}, []model.Part{model.TextPart("intro"), model.JSONPart(json.RawMessage(`{"sky":"clear","temperature":20}`))}, false},
		{"structured without a copy is appended", &sdk.CallToolResult{
			Content:           []sdk.Content{&sdk.TextContent{Text: "see data"}},
			StructuredContent: []int{1, 2},
		}, []model.Part{model.TextPart("see data"), model.JSONPart(json.RawMessage(`[1,2]`))}, false},
		{"tool error", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "no such city"}}, IsError: true},
			[]model.Part{model.TextPart("no such city")}, true},
		{"tool error without text", &sdk.CallToolResult{IsError: true},
			[]model.Part{model.TextPart("the tool reported an error")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Result("srv", "weather", tt.in)
			assert.Equal(t, tt.want, r.Content)
			assert.Equal(t, tt.failed, r.IsError)
			if tt.failed {
				assert.Equal(t, tool.StatusFailed, r.Status)
				assert.Equal(t, tool.CodeToolError, r.ErrorCode)
				assert.ErrorIs(t, r.Err, ErrToolFailed)
				assert.ErrorContains(t, r.Err, `server "srv": tool "weather"`)
			} else {
				assert.Equal(t, tool.StatusSuccess, r.Status)
				assert.NoError(t, r.Err)
			}
		})
	}
}

func TestCallToolResult(t *testing.T) {
	r := tool.Result{Content: []model.Part{
		model.TextPart("here"),
		model.JSONPart(json.RawMessage(`{"n":1}`)),
		model.ImagePart("image/png", pixel),
		model.ImageURLPart("image/jpeg", "https://example.test/cat.jpg"),
	}}
	res := CallToolResult(r)
	require.Len(t, res.Content, 4)
	assert.Equal(t, &sdk.TextContent{Text: "here"}, res.Content[0])
	assert.Equal(t, &sdk.TextContent{Text: `{"n":1}`}, res.Content[1])
	assert.Equal(t, &sdk.ImageContent{Data: pixel, MIMEType: "image/png"}, res.Content[2])
	assert.Equal(t, &sdk.ResourceLink{URI: "https://example.test/cat.jpg", Name: "image", MIMEType: "image/jpeg"}, res.Content[3])
	assert.Equal(t, json.RawMessage(`{"n":1}`), res.StructuredContent)
	assert.False(t, res.IsError)

	two := CallToolResult(tool.Result{Content: []model.Part{model.JSONPart(json.RawMessage(`1`)), model.JSONPart(json.RawMessage(`2`))}})
	assert.Nil(t, two.StructuredContent, "no single structured value")
	assert.True(t, CallToolResult(tool.Errorf("bad")).IsError)
}

func TestRoundTrip(t *testing.T) {
	// Trellis result → MCP → Trellis result keeps what the model sees.
	in := tool.Result{Content: []model.Part{
		model.TextPart("a"),
		model.ImagePart("image/png", pixel),
		model.JSONPart(json.RawMessage(`{"k":"v"}`)),
	}}
	raw, err := json.Marshal(CallToolResult(in))
	require.NoError(t, err)
	var back sdk.CallToolResult
	require.NoError(t, json.Unmarshal(raw, &back))
	out := Result("s", "t", &back)
	assert.Equal(t, in.Content, out.Content)
}

func TestResultMetadataTravelsAsMeta(t *testing.T) {
	// Trellis → MCP: the application's keys go as _meta, the framework's
	// stay behind.
	in := tool.Text("ok")
	in.Metadata = map[string]string{"vendor.example/trace": "t-1", "trellis.handoff.history": "{}", "io.modelcontextprotocol/related-task": "x"}
	res := CallToolResult(in)
	assert.Equal(t, sdk.Meta{"vendor.example/trace": "t-1"}, res.Meta)
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"_meta":{"vendor.example/trace":"t-1"}`)
	assert.Nil(t, CallToolResult(tool.Text("plain")).Meta)

	// MCP → Trellis: strings as they are, other values as JSON, and no
	// framework key a server could forge.
	var back sdk.CallToolResult
	require.NoError(t, json.Unmarshal([]byte(`{"content":[{"type":"text","text":"ok"}],"_meta":{"trace":"t-2","cost":{"usd":0.5},"n":3,"trellis.terminate":"true","io.modelcontextprotocol/serverInfo":{"name":"x"},"api.mcp.dev/x":"y","example.com/kept":"yes"}}`), &back))
	out := Result("s", "t", &back)
	assert.Equal(t, map[string]string{"trace": "t-2", "cost": `{"usd":0.5}`, "n": "3", "example.com/kept": "yes"}, out.Metadata,
		"nor the keys the protocol reserves for itself")
	assert.Nil(t, Result("s", "t", &sdk.CallToolResult{}).Metadata)
}

func TestMetadata(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		in   *sdk.ToolAnnotations
		want tool.Metadata
	}{
		{"none", nil, tool.Metadata{}},
		{"read only", &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &no, OpenWorldHint: &no}, tool.Metadata{ReadOnly: true}},
		{"destructive", &sdk.ToolAnnotations{DestructiveHint: &yes}, tool.Metadata{Destructive: true}},
		{"open world", &sdk.ToolAnnotations{OpenWorldHint: &yes}, tool.Metadata{OpenWorld: true}},
		{"missing hints stay false", &sdk.ToolAnnotations{IdempotentHint: true, Title: "T"}, tool.Metadata{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Metadata(tt.in))
		})
	}
}

func TestMCPTool(t *testing.T) {
	mt, err := MCPTool(model.ToolDefinition{Name: "n", Description: "d"}, tool.Metadata{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"type": "object"}, mt.InputSchema, "an empty schema is any object")
	assert.Nil(t, mt.Annotations)

	mt, err = MCPTool(model.ToolDefinition{Name: "n", InputSchema: json.RawMessage(`{"properties":{"x":{"type":"string"}}}`)},
		tool.Metadata{ReadOnly: true, ConcurrencySafe: true})
	require.NoError(t, err)
	assert.Equal(t, "object", mt.InputSchema.(map[string]any)["type"])
	require.NotNil(t, mt.Annotations)
	assert.True(t, mt.Annotations.ReadOnlyHint)
	assert.Nil(t, mt.Annotations.DestructiveHint)
	assert.Nil(t, mt.Annotations.OpenWorldHint)

	_, err = MCPTool(model.ToolDefinition{Name: "n", InputSchema: json.RawMessage(`[1]`)}, tool.Metadata{})
	assert.ErrorIs(t, err, ErrServe)
	_, err = MCPTool(model.ToolDefinition{Name: "n", OutputSchema: json.RawMessage(`{`)}, tool.Metadata{})
	assert.ErrorIs(t, err, ErrServe)
}

func TestResultStructuredTextCopy(t *testing.T) {
	// The result as it comes off the wire: the client decodes structured
	// content into Go values (numbers as float64), while the text copy
	// keeps the server's own spelling.
	tests := []struct {
		name, text, structured, want string
	}{
		{"decimal point", `{"temp": 20.0}`, `{"temp":20.0}`, `{"temp":20.0}`},
		{"big integer", `{"id": 12345678901234567891}`, `{"id":12345678901234567891}`, `{"id":12345678901234567891}`},
		{"escaped text", `{"city": "caf\u00e9"}`, `{"city":"café"}`, `{"city":"caf\u00e9"}`},
		{"html characters", `{"q":"a<b && c>d"}`, `{"q":"a<b && c>d"}`, `{"q":"a<b && c>d"}`},
		{"exponent", "[1e3,\n 2.50]", `[1000, 2.5]`, `[1e3,2.50]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := json.Marshal(tt.text)
			require.NoError(t, err)
			wire := `{"content":[{"type":"text","text":"intro"},{"type":"text","text":` + string(text) + `}],"structuredContent":` + tt.structured + `}`
			var res sdk.CallToolResult
			require.NoError(t, json.Unmarshal([]byte(wire), &res))
			r := Result("srv", "t", &res)
			require.Len(t, r.Content, 2, "the value is shown once: %v", r.Content)
			assert.Equal(t, model.TextPart("intro"), r.Content[0])
			require.Equal(t, model.PartJSON, r.Content[1].Type)
			assert.JSONEq(t, tt.want, string(r.Content[1].JSON))
			assert.Equal(t, tt.want, string(r.Content[1].JSON), "the server's own spelling is kept")
		})
	}

	// Without a text copy, the structured value is appended, readable.
	r := Result("srv", "t", &sdk.CallToolResult{StructuredContent: map[string]any{"q": "a<b"}})
	require.Len(t, r.Content, 1)
	assert.Equal(t, `{"q":"a<b"}`, string(r.Content[0].JSON))

	// A text block that only looks similar is not the copy.
	r = Result("srv", "t", &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: `{"n": 1, "extra": true}`}},
		StructuredContent: map[string]any{"n": 1},
	})
	require.Len(t, r.Content, 2)
	assert.Equal(t, model.TextPart(`{"n": 1, "extra": true}`), r.Content[0])
	assert.Equal(t, `{"n":1}`, string(r.Content[1].JSON))
}

// A Trellis server that serves the tools of another MCP server passes
// audio and embedded resources on as they came: MCP client → Trellis
// parts → MCP server keeps every content kind, nothing is flattened to
// text.
func TestProxiedToolKeepsEveryContentKind(t *testing.T) {
	media := []sdk.Content{
		&sdk.TextContent{Text: "here"},
		&sdk.ImageContent{Data: pixel, MIMEType: "image/png"},
		&sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://t", MIMEType: "text/plain", Text: "note"}},
		&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://b", MIMEType: "application/zip", Blob: []byte("PK")}},
	}
	upstream := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "v0"}, nil)
	upstream.AddTool(&sdk.Tool{Name: "media", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: media}, nil
	})
	ts, err := New(Config{Name: "upstream"}, WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		client, server := sdk.NewInMemoryTransports()
		if _, err := upstream.Connect(ctx, server, nil); err != nil {
			return nil, err
		}
		return client, nil
	}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Close() })
	ctx := ctxT(t, 10*time.Second)
	proxy, err := NewServer(ctx, ts)
	require.NoError(t, err)

	res, err := goClient(t, proxy, nil).CallTool(ctx, &sdk.CallToolParams{Name: "media", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	want, err := json.Marshal(media)
	require.NoError(t, err)
	got, err := json.Marshal(res.Content)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
}
