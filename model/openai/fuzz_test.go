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

// FuzzResponsesStream feeds arbitrary bodies to the Responses API's stream
// decoder: Stream ends with a reply or an error, never a panic.
func FuzzResponsesStream(f *testing.F) {
	join := func(events []string) string {
		var b strings.Builder
		for _, e := range events {
			b.WriteString("data: " + e + "\n\n")
		}
		return b.String()
	}
	f.Add(join(responseStreamEvents))
	f.Add(join(responseStreamEvents[:12]))
	f.Add(join([]string{responseErrorEvent}))
	f.Add(join([]string{responseFailedEvent}))
	f.Add("data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":-1,\"delta\":\"x\"}\n\n")
	f.Add("")

	var body wiretest.StreamBody
	m, _ := newModel(f, newServer(f, body.Reply), openai.WithResponsesAPI(), openai.WithRetry(model.Retry{MaxRetries: -1}))
	f.Fuzz(func(t *testing.T, in string) {
		body.Set(in)
		resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
		if err == nil {
			require.NotEmpty(t, resp.FinishReason)
		}
	})
}

// FuzzResponsesReply answers with arbitrary JSON: Generate never panics,
// and a reply it accepts goes back as input.
func FuzzResponsesReply(f *testing.F) {
	for _, s := range []string{responseReasoningCall, responseWebSearch, responseIncomplete, `{}`, `null`,
		`{"status":"completed","output":[{"type":"reasoning"},{"type":"function_call"},null]}`} {
		f.Add(s)
	}
	var body wiretest.JSONBody
	m, _ := newModel(f, newServer(f, body.Reply), openai.WithResponsesAPI(), openai.WithRetry(model.Retry{MaxRetries: -1}))
	f.Fuzz(func(t *testing.T, in string) {
		body.Set(in)
		resp, err := m.Generate(context.Background(), userReq("x"))
		if err != nil {
			return
		}
		require.NotEmpty(t, resp.FinishReason)
		next := &model.Request{Messages: []model.Message{model.User("x"), resp.Message}}
		for _, tc := range resp.Message.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return // refused before sending, as it should be
			}
		}
		_, err = m.Generate(context.Background(), next)
		require.NoError(t, err)
	})
}
