package anthropic_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/model/internal/wiretest"
)

// The recording server and the wait recorder are shared with the other
// provider's wire tests.
type (
	server    = wiretest.Server
	replyFunc = wiretest.ReplyFunc
	waits     = wiretest.Waits
)

func newServer(t testing.TB, reply replyFunc) *server { return wiretest.NewServer(t, reply) }

// newModel returns a model that talks to s, with fast, recorded retries.
func newModel(t testing.TB, s *server, opts ...anthropic.Option) (*anthropic.Model, *waits) {
	t.Helper()
	w := &waits{}
	base := []anthropic.Option{
		anthropic.WithBaseURL(s.URL),
		anthropic.WithAPIKey("sk-ant-test"),
		anthropic.WithHTTPClient(s.Client),
		anthropic.WithRetry(model.Retry{MaxRetries: 2, Sleep: w.Sleep}),
	}
	m, err := anthropic.New("claude-sonnet-4-5", append(base, opts...)...)
	require.NoError(t, err)
	return m, w
}

var (
	jsonReply = wiretest.JSONReply
	writeJSON = wiretest.WriteJSON
)

// event is one server-sent event of the Messages API.
type event struct{ name, data string }

// sse writes events the way Anthropic does: "event: name\ndata: {json}\n\n".
func sse(w http.ResponseWriter, events []event) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, e := range events {
		_, _ = io.WriteString(w, "event: "+e.name+"\ndata: "+strings.TrimSpace(e.data)+"\n\n")
		if f != nil {
			f.Flush()
		}
	}
}

func sseReply(events []event) replyFunc {
	return func(w http.ResponseWriter, _ int) { sse(w, events) }
}

// sequence answers attempt n with replies[n-1], repeating the last one.
func sequence(replies ...replyFunc) replyFunc {
	return func(w http.ResponseWriter, n int) {
		replies[min(n, len(replies))-1](w, n)
	}
}
