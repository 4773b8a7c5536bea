package openai_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/internal/wiretest"
	"github.com/trellis-go/trellis/model/openai"
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
func newModel(t testing.TB, s *server, opts ...openai.Option) (*openai.Model, *waits) {
	t.Helper()
	w := &waits{}
	base := []openai.Option{
		openai.WithBaseURL(s.URL + "/v1"),
		openai.WithAPIKey("sk-test"),
		openai.WithHTTPClient(s.Client),
		openai.WithRetry(model.Retry{MaxRetries: 2, Sleep: w.Sleep}),
	}
	m, err := openai.New("gpt-4o-mini", append(base, opts...)...)
	require.NoError(t, err)
	return m, w
}

var (
	jsonReply = wiretest.JSONReply
	writeJSON = wiretest.WriteJSON
)

// sse writes events the way OpenAI does: "data: {json}\n\n" per chunk,
// then "data: [DONE]\n\n".
func sse(w http.ResponseWriter, events []string, done bool) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, e := range events {
		_, _ = io.WriteString(w, "data: "+strings.TrimSpace(e)+"\n\n")
		if f != nil {
			f.Flush()
		}
	}
	if done {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
}

func sseReply(events []string) replyFunc {
	return func(w http.ResponseWriter, _ int) { sse(w, events, true) }
}

// sequence answers attempt n with replies[n-1], repeating the last one.
func sequence(replies ...replyFunc) replyFunc {
	return func(w http.ResponseWriter, n int) {
		replies[min(n, len(replies))-1](w, n)
	}
}
