package openai_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/openai"
)

// Compatible servers and gateways often send the error as a string, for
// example {"error":"Model is overloaded","error_type":"overloaded"}.
func TestErrorAsAStringKeepsStatusAndMessage(t *testing.T) {
	s := newServer(t, jsonReply(404, `{"error":"model \"llama9\" not found, try pulling it first"}`))
	m, _ := newModel(t, s)
	_, err := m.Generate(context.Background(), userReq("x"))
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe, "got %v", err)
	assert.Equal(t, 404, pe.StatusCode)
	assert.Equal(t, `model "llama9" not found, try pulling it first`, pe.Message)
	assert.False(t, model.IsTransient(err))
}

func TestErrorAsAStringIsRetriedWhenTransient(t *testing.T) {
	s := newServer(t, sequence(
		jsonReply(429, `{"error":"Model is overloaded","error_type":"overloaded"}`, "retry-after", "1"),
		jsonReply(200, completionText),
	))
	m, w := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "Paris is sunny today, around 21°C.", resp.Message.Text())
	assert.Len(t, s.Received(), 2)
	assert.Equal(t, []time.Duration{time.Second}, w.All(), "Retry-After is honoured")
}

func TestHTTPClientTimeoutIsRetried(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, n int) {
		if n == 1 {
			<-release // longer than the client waits
			return
		}
		writeJSON(w, 200, completionText)
	})
	t.Cleanup(func() { close(release) })
	client := &http.Client{Transport: s.Client.Transport, Timeout: 200 * time.Millisecond}
	m, w := newModel(t, s, openai.WithHTTPClient(client))
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "Paris is sunny today, around 21°C.", resp.Message.Text())
	assert.Len(t, w.All(), 1)
}

func TestConnectionClosedBeforeTheReplyIsRetried(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, n int) {
		if n == 1 {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = c.Close()
			}
			return
		}
		writeJSON(w, 200, completionText)
	})
	m, w := newModel(t, s)
	resp, err := m.Generate(context.Background(), userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, "Paris is sunny today, around 21°C.", resp.Message.Text())
	assert.Len(t, s.Received(), 2)
	assert.Len(t, w.All(), 1)
}

func TestStreamErrorBeforeTheReplyIsRetriedWhenTransient(t *testing.T) {
	overloaded := []string{`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`}
	s := newServer(t, sequence(
		func(w http.ResponseWriter, _ int) { sse(w, overloaded, false) },
		sseReply(streamText),
	))
	m, w := newModel(t, s)
	var text string
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		text += c.Text
	}
	assert.Equal(t, "Paris is sunny.", text)
	assert.Len(t, s.Received(), 2)
	assert.Len(t, w.All(), 1)

	invalid := []string{`{"error":{"message":"bad request","type":"invalid_request_error","param":null,"code":null}}`}
	s2 := newServer(t, func(w http.ResponseWriter, _ int) { sse(w, invalid, false) })
	m2, _ := newModel(t, s2)
	for _, err := range m2.Stream(context.Background(), userReq("x")) {
		var pe *model.ProviderError
		require.ErrorAs(t, err, &pe)
		assert.Zero(t, pe.StatusCode)
		break
	}
	assert.Len(t, s2.Received(), 1, "an invalid request is not retried")
}
