package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/internal/wiretest"
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
