package wiretest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/model/internal/wiretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestServerRecordsAndReplies(t *testing.T) {
	s := wiretest.NewServer(t, wiretest.JSONReply(http.StatusTeapot, `{"ok":true}`, "Retry-After", "2"))
	resp, err := s.Client.Post(s.URL+"/v1/x", "application/json", strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusTeapot, resp.StatusCode)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"))
	assert.JSONEq(t, `{"ok":true}`, string(body))
	calls := s.Received()
	require.Len(t, calls, 1)
	assert.Equal(t, "/v1/x", calls[0].Path)
	assert.Equal(t, `{"a":1}`, calls[0].Body)

	var w wiretest.Waits
	require.NoError(t, w.Sleep(context.Background(), time.Second))
	assert.Equal(t, []time.Duration{time.Second}, w.All())
}

func TestStreamBodyAnswersWithTheLatestBody(t *testing.T) {
	var b wiretest.StreamBody
	s := wiretest.NewServer(t, b.Reply)
	get := func() (string, string) {
		resp, err := s.Client.Get(s.URL)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.Header.Get("Content-Type"), string(body)
	}
	ct, body := get()
	assert.Equal(t, "text/event-stream", ct)
	assert.Empty(t, body)
	b.Set("data: one\n\n")
	_, body = get()
	assert.Equal(t, "data: one\n\n", body)
	b.Set("data: two\n\n")
	_, body = get()
	assert.Equal(t, "data: two\n\n", body)
}
