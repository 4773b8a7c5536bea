package gemini_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/gemini"
	"github.com/trellis-go/trellis/model/internal/wiretest"
)

// The recording server and the wait recorder are shared with the other
// providers' wire tests.
type (
	server    = wiretest.Server
	replyFunc = wiretest.ReplyFunc
	waits     = wiretest.Waits
)

func newServer(t testing.TB, reply replyFunc) *server { return wiretest.NewServer(t, reply) }

// newModel returns a model that talks to s, with fast, recorded retries.
func newModel(t testing.TB, s *server, opts ...gemini.Option) (*gemini.Model, *waits) {
	t.Helper()
	w := &waits{}
	base := []gemini.Option{
		gemini.WithBaseURL(s.URL),
		gemini.WithAPIKey("test-key"),
		gemini.WithHTTPClient(s.Client),
		gemini.WithRetry(model.Retry{MaxRetries: 2, Sleep: w.Sleep}),
	}
	m, err := gemini.New("gemini-2.5-flash", append(base, opts...)...)
	require.NoError(t, err)
	return m, w
}

var (
	jsonReply = wiretest.JSONReply
	writeJSON = wiretest.WriteJSON
)

// sse writes events the way the Gemini API does: "data: {json}\r\n\r\n"
// per reply, and no end marker.
func sse(w http.ResponseWriter, events []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, e := range events {
		_, _ = io.WriteString(w, "data: "+strings.TrimSpace(e)+"\r\n\r\n")
		if f != nil {
			f.Flush()
		}
	}
}

func sseReply(events []string) replyFunc {
	return func(w http.ResponseWriter, _ int) { sse(w, events) }
}

// sequence answers attempt n with replies[n-1], repeating the last one.
func sequence(replies ...replyFunc) replyFunc {
	return func(w http.ResponseWriter, n int) {
		replies[min(n, len(replies))-1](w, n)
	}
}

func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.User(text)}}
}

func ptr[T any](v T) *T { return &v }
