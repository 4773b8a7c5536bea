package openai_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
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

	var (
		mu   sync.Mutex
		body string
	)
	s := newServer(f, func(w http.ResponseWriter, _ int) {
		mu.Lock()
		b := body
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(b))
	})
	m, _ := newModel(f, s)

	f.Fuzz(func(t *testing.T, in string) {
		mu.Lock()
		body = in
		mu.Unlock()
		resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
		if err == nil {
			require.NotNil(t, resp)
			require.NotEmpty(t, resp.FinishReason, "a reply without a finish reason is reported as truncated")
		}
	})
}
