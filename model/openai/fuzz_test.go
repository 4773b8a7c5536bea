package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/internal/wiretest"
	"github.com/trellis-go/trellis/model/openai"
)

// FuzzStream feeds arbitrary bodies to the stream decoder: whatever a server
// sends, Stream ends with a reply or an error, never a panic.
func FuzzStream(f *testing.F) {
	join := func(events []string) string {
		var b strings.Builder
		for _, e := range events {
			b.WriteString("data: " + e + "\n\n")
		}
		return b.String() + "data: [DONE]\n\n"
	}
	f.Add(join(streamText))
	f.Add(join(streamParallelCalls))
	f.Add(join(streamParallelCalls[:4]))
	f.Add("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-3}]},\"finish_reason\":\"stop\"}]}\n\n")
	f.Add("data: {\"error\":{\"message\":\"boom\"}}\n\n")
	f.Add("data: {not json\n\n")
	f.Add("")

	var body wiretest.StreamBody
	m, _ := newModel(f, newServer(f, body.Reply))

	f.Fuzz(func(t *testing.T, in string) {
		body.Set(in)
		resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
		if err == nil {
			require.NotNil(t, resp)
			require.NotEmpty(t, resp.FinishReason, "a reply without a finish reason is reported as truncated")
		}
	})
}

// FuzzWholeReply answers streaming requests with arbitrary JSON, as a server
// that ignores streaming does: Stream never panics, and it agrees with
// Generate on the same body — the same reply, or an error for both.
func FuzzWholeReply(f *testing.F) {
	f.Add(completionText)
	f.Add(completionToolCalls)
	f.Add(completionOllama)
	f.Add(`{"choices":[]}`)
	f.Add(`{"choices":[{"message":{"content":[{"type":"text","text":"a"}]}}]}`)
	f.Add(`{"choices":[{"message":{"tool_calls":[{"id":"1","function":{"name":"f","arguments":"{bad"}}]}}]}`)
	f.Add(`[1,2]`)
	f.Add(`null`)

	var body wiretest.JSONBody
	// No retries: both calls read the body once, and nothing waits.
	m, _ := newModel(f, newServer(f, body.Reply), openai.WithRetry(model.Retry{MaxRetries: -1}))
	f.Fuzz(func(t *testing.T, in string) {
		body.Set(in)
		wiretest.CheckStreamAgrees(t, m, userReq("x"))
	})
}
