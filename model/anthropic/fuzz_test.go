package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/model/internal/wiretest"
)

// FuzzStream feeds arbitrary bodies to the stream decoder: whatever a server
// sends, Stream ends with a reply or an error, never a panic.
func FuzzStream(f *testing.F) {
	join := func(events []event) string {
		var b strings.Builder
		for _, e := range events {
			b.WriteString("event: " + e.name + "\ndata: " + e.data + "\n\n")
		}
		return b.String()
	}
	f.Add(join(streamText))
	f.Add(join(streamToolUse))
	f.Add(join(streamToolUse[:12]))
	f.Add(join(streamWebSearch))
	f.Add(join(streamWebSearch[:11]))                                                   // cut inside the server tool's result
	f.Add(join(append(streamWebSearch[:5:5], streamWebSearch[len(streamWebSearch)-1]))) // stopped inside the server tool's call
	f.Add(join([]event{{"error", errorOverloadedEvent}}))
	f.Add("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":-1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	f.Add("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":9}\n\n")
	f.Add("data: {\n\n")
	f.Add("")

	var body wiretest.StreamBody
	m, _ := newModel(f, newServer(f, body.Reply))

	f.Fuzz(func(t *testing.T, in string) {
		body.Set(in)
		resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
		if err == nil {
			require.NotNil(t, resp)
			checkServerBlocks(t, resp)
		}
	})
}

// FuzzWholeReply answers streaming requests with arbitrary JSON, as a server
// that ignores streaming does: Stream never panics, and it agrees with
// Generate on the same body — the same reply, or an error for both.
func FuzzWholeReply(f *testing.F) {
	f.Add(messageText)
	f.Add(messageToolUse)
	f.Add(`{"content":[]}`)
	f.Add(`{"content":[{"type":"tool_use","id":"t","name":"f","input":"not an object"}],"stop_reason":"tool_use"}`)
	f.Add(messageWebSearch)
	f.Add(messageSearchThenTool)
	f.Add(`{"content":[{"type":"server_tool_use","id":"s","name":"web_search","input":{"q":1e400}},{"type":"web_search_tool_result","content":"x"},{"type":""},{"type":"text","text":"a"}]}`)
	f.Add(`{"content":[{"type":{}}]}`)
	f.Add(`{"content":[{"type":"0","type":"tool_use"}]}`)
	f.Add(`{"type":"message"}`)
	f.Add(`[1,2]`)
	f.Add(`null`)

	var body wiretest.JSONBody
	// No retries: both calls read the body once, and nothing waits.
	m, _ := newModel(f, newServer(f, body.Reply), anthropic.WithRetry(model.Retry{MaxRetries: -1}))
	f.Fuzz(func(t *testing.T, in string) {
		body.Set(in)
		wiretest.CheckStreamAgrees(t, m, userReq("x"))
		// The content itself, provider parts and their record included.
		want, werr := m.Generate(context.Background(), userReq("x"))
		got, gerr := model.Collect(m.Stream(context.Background(), userReq("x")))
		if werr == nil && gerr == nil {
			require.Equal(t, want.Message, got.Message)
			checkServerBlocks(t, want)
		}
	})
}

// checkServerBlocks checks what a reply keeps of server tools: provider
// parts of this package, each a JSON object of a type that is not text,
// thinking or a tool_use.
func checkServerBlocks(t *testing.T, resp *model.Response) {
	t.Helper()
	for _, p := range resp.Message.Content {
		if p.Type != model.PartProvider {
			continue
		}
		require.Equal(t, anthropic.ContentBlockMIMEType, p.MIMEType)
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(p.JSON, &obj))
		var typ string
		require.NoError(t, json.Unmarshal(obj["type"], &typ))
		require.NotContains(t, []string{"", "text", "thinking", "redacted_thinking", "tool_use"}, typ)
	}
}
