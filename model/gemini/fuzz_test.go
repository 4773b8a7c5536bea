package gemini_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/gemini"
	"github.com/trellis-go/trellis/model/internal/wiretest"
)

// FuzzStream feeds arbitrary bodies to the stream decoder: whatever a server
// sends, Stream ends with a reply or an error, never a panic.
func FuzzStream(f *testing.F) {
	join := func(events []string) string {
		var b strings.Builder
		for _, e := range events {
			b.WriteString("data: " + e + "\r\n\r\n")
		}
		return b.String()
	}
	f.Add(join(streamThinkingText))
	f.Add(join(streamCalls))
	f.Add(join(streamThinkingText[:2]))
	f.Add(join([]string{errorOverloaded}))
	f.Add("data: {\"candidates\":[null,{}]}\n\n")
	f.Add("data: {\"candidates\":[{\"content\":{\"parts\":[null,{\"functionCall\":{}}]},\"finishReason\":\"STOP\"}]}\n\n")
	f.Add("data: {not json\n\n")
	f.Add("")

	var body wiretest.StreamBody
	m, _ := newModel(f, newServer(f, body.Reply), gemini.WithRetry(model.Retry{MaxRetries: -1}))

	f.Fuzz(func(t *testing.T, in string) {
		body.Set(in)
		resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
		if err == nil {
			require.NotNil(t, resp)
			require.NotEmpty(t, resp.FinishReason, "a reply without a finish reason is reported as truncated")
		}
	})
}

// FuzzReply answers with arbitrary JSON: Generate never panics, and a
// reply it accepts can be sent back.
func FuzzReply(f *testing.F) {
	for _, s := range []string{replyText, replyCalls, replyImage, replyCode, replyBlocked, `{}`, `null`, `[1]`,
		`{"candidates":[{"content":{"parts":[{"thought":true,"thoughtSignature":"!!"}]},"finishReason":"X"}]}`,
		`{"candidates":[{"content":{"parts":[{"inlineData":{"data":"AAAA"}}]},"finishReason":"STOP"}]}`} {
		f.Add(s)
	}
	var body wiretest.JSONBody
	m, _ := newModel(f, newServer(f, body.Reply), gemini.WithRetry(model.Retry{MaxRetries: -1}))
	f.Fuzz(func(t *testing.T, in string) {
		body.Set(in)
		resp, err := m.Generate(context.Background(), userReq("x"))
		if err != nil {
			return
		}
		require.NotEmpty(t, resp.FinishReason)
		for _, tc := range resp.Message.ToolCalls {
			if tc.Name == "" {
				return // refused before sending, as it should be
			}
		}
		_, err = m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("x"), resp.Message}})
		require.NoError(t, err, "a reply goes back as it came")
	})
}
