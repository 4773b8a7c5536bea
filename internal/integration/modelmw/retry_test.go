package modelmw_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/openai"
	"github.com/trellis-go/trellis/model/scripted"
)

const openAIReply = `{"id":"c1","object":"chat.completion","created":1,"model":"gpt-test",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`

// failingThen is an OpenAI-compatible server that answers the first n
// requests with status and headers, and the others with openAIReply.
func failingThen(t *testing.T, n int, status int, header http.Header, body string) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if int(calls.Add(1)) <= n {
			for k, v := range header {
				w.Header()[k] = v
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
			return
		}
		_, _ = w.Write([]byte(openAIReply))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// noRetries is a provider policy without retries, for a chain that
// retries itself.
var noRetries = model.Retry{MaxRetries: -1}

func TestRetryWaitsWhatRetryAfterAsks(t *testing.T) {
	srv, calls := failingThen(t, 2, http.StatusTooManyRequests, http.Header{"Retry-After": {"7"}},
		`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
	m, err := openai.New("gpt-test", openai.WithBaseURL(srv.URL), openai.WithAPIKey("k"), openai.WithRetry(noRetries))
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		waits []time.Duration
	)
	policy := model.Retry{MaxRetries: 3, Sleep: func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		return nil
	}}
	chained := modelmw.Chain(m, modelmw.Retry(policy))
	resp, err := chained.Generate(t.Context(), userReq("hi"))
	require.NoError(t, err)
	assert.Equal(t, "fine", resp.Message.Text())
	assert.Equal(t, int32(3), calls.Load())
	assert.Equal(t, []time.Duration{7 * time.Second, 7 * time.Second}, waits)
}

func TestRetryDoesNotResendAContextTooLong(t *testing.T) {
	srv, calls := failingThen(t, 1, http.StatusBadRequest, nil,
		`{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	m, err := openai.New("gpt-test", openai.WithBaseURL(srv.URL), openai.WithAPIKey("k"), openai.WithRetry(noRetries))
	require.NoError(t, err)
	_, err = modelmw.Chain(m, modelmw.Retry(model.Retry{Sleep: noSleep})).Generate(t.Context(), userReq("hi"))
	assert.ErrorIs(t, err, model.ErrContextTooLong)
	assert.Equal(t, int32(1), calls.Load())
}

func noSleep(context.Context, time.Duration) error { return nil }

func TestRetryResendsAStreamThatFailedBeforeItsFirstChunk(t *testing.T) {
	base := scripted.New(scripted.Fail(&model.ProviderError{StatusCode: 529, Type: "overloaded_error"}), scripted.Reply("second try"))
	text, err := textOf(modelmw.Chain(base, modelmw.Retry(model.Retry{Sleep: noSleep})).Stream(t.Context(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "second try", text)
}

func TestRetryDoesNotResendAStreamAfterItsFirstChunk(t *testing.T) {
	overloaded := &model.ProviderError{StatusCode: 529, Type: "overloaded_error"}
	var calls atomic.Int32
	flaky := modelmw.Funcs{StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
		return func(yield func(model.Chunk, error) bool) {
			calls.Add(1)
			if yield(model.Chunk{Text: "partial"}, nil) {
				yield(model.Chunk{}, overloaded)
			}
		}
	}}
	var got string
	var gotErr error
	for c, err := range modelmw.Chain(flaky, modelmw.Retry(model.Retry{Sleep: noSleep})).Stream(t.Context(), userReq("x")) {
		if err != nil {
			gotErr = err
			break
		}
		got += c.Text
	}
	assert.Equal(t, "partial", got)
	assert.ErrorIs(t, gotErr, model.ErrOverloaded)
	assert.Equal(t, int32(1), calls.Load())
}

func TestFallbackAfterAnOverloadedProvider(t *testing.T) {
	// Anthropic's 529 overloaded_error, then an OpenAI-compatible model.
	overloaded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(529)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	}))
	t.Cleanup(overloaded.Close)
	primary, err := anthropic.New("claude-test", anthropic.WithBaseURL(overloaded.URL), anthropic.WithAPIKey("k"), anthropic.WithRetry(noRetries))
	require.NoError(t, err)
	srv, calls := failingThen(t, 0, 0, nil, "")
	backup, err := openai.New("gpt-test", openai.WithBaseURL(srv.URL), openai.WithAPIKey("k"))
	require.NoError(t, err)

	m := modelmw.Chain(primary, modelmw.Fallback([]model.Model{backup}, model.ErrOverloaded))
	req := userReq("hi")
	req.Model = "claude-other" // a name for the primary only
	resp, err := m.Generate(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "fine", resp.Message.Text())
	assert.Equal(t, int32(1), calls.Load())

	text, err := textOf(m.Stream(t.Context(), userReq("hi")))
	require.NoError(t, err, "a stream that failed before its first chunk falls back too")
	assert.Equal(t, "fine", text)
}

func TestFallbackLeavesOtherErrorsAlone(t *testing.T) {
	bad := &model.ProviderError{StatusCode: 400, Type: "invalid_request_error"}
	backup := scripted.New(scripted.Reply("backup"))
	m := modelmw.Chain(scripted.New(scripted.Fail(bad)), modelmw.Fallback([]model.Model{backup}))
	_, err := m.Generate(t.Context(), userReq("x"))
	assert.ErrorIs(t, err, model.ErrBadRequest)
	assert.Zero(t, backup.Calls())
}

func TestFallbackReportsTheLastAndFirstErrors(t *testing.T) {
	first := &model.ProviderError{StatusCode: 529}
	last := errors.New("backup down")
	m := modelmw.Chain(scripted.New(scripted.Fail(first)),
		modelmw.Fallback([]model.Model{scripted.New(scripted.Fail(last))}, model.ErrOverloaded))
	_, err := m.Generate(t.Context(), userReq("x"))
	assert.ErrorIs(t, err, last)
	assert.ErrorIs(t, err, model.ErrOverloaded)
}
