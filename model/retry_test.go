package model_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

// recorder is a Retry.Sleep that records waits instead of sleeping.
type recorder struct{ waits []time.Duration }

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.waits = append(r.waits, d)
	return ctx.Err()
}

func statusErr(code int, retryAfter time.Duration) error {
	return &model.ProviderError{Provider: "test", StatusCode: code, Message: "status " + fmt.Sprint(code), RetryAfter: retryAfter}
}

// failing returns an op that fails with errs in turn, then succeeds.
func failing(calls *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}
}

func TestRetryDo(t *testing.T) {
	tests := []struct {
		name      string
		policy    model.Retry
		errs      []error
		wantCalls int
		wantErr   error // checked with errors.Is; nil means success
		exhausted bool
		wantWaits int
	}{
		{name: "success at once", errs: nil, wantCalls: 1},
		{name: "429 then success", errs: []error{statusErr(429, 0)}, wantCalls: 2, wantWaits: 1},
		{name: "500 and 503 then success", errs: []error{statusErr(500, 0), statusErr(503, 0)}, wantCalls: 3, wantWaits: 2},
		{name: "408, 409 and 529 are transient", policy: model.Retry{MaxRetries: 3},
			errs: []error{statusErr(408, 0), statusErr(409, 0), statusErr(529, 0)}, wantCalls: 4, wantWaits: 3},
		{name: "connection refused is transient", errs: []error{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}}, wantCalls: 2, wantWaits: 1},
		{name: "cut-short reply is transient", errs: []error{io.ErrUnexpectedEOF}, wantCalls: 2, wantWaits: 1},
		{name: "400 fails at once", errs: []error{statusErr(400, 0)}, wantCalls: 1},
		{name: "401 fails at once", errs: []error{statusErr(401, 0)}, wantCalls: 1},
		{name: "404 fails at once", errs: []error{statusErr(404, 0)}, wantCalls: 1},
		{name: "plain error fails at once", errs: []error{errors.New("bad schema")}, wantCalls: 1},
		{name: "exhausted after default retries", errs: []error{statusErr(500, 0), statusErr(500, 0), statusErr(502, 0), nil},
			wantCalls: 3, exhausted: true, wantWaits: 2},
		{name: "negative MaxRetries disables retries", policy: model.Retry{MaxRetries: -1},
			errs: []error{statusErr(500, 0)}, wantCalls: 1},
		{name: "Retry-After longer than MaxDelay is not waited for", policy: model.Retry{MaxDelay: time.Second},
			errs: []error{statusErr(429, 5*time.Second)}, wantCalls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			p := tt.policy
			p.Sleep = rec.sleep
			calls := 0
			err := p.Do(context.Background(), failing(&calls, tt.errs...))
			assert.Equal(t, tt.wantCalls, calls, "attempts")
			assert.Len(t, rec.waits, tt.wantWaits, "waits")
			wantFail := tt.wantCalls <= len(tt.errs) && tt.errs[tt.wantCalls-1] != nil
			if !wantFail {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.errs[tt.wantCalls-1], "the last attempt's error is returned")
			assert.Equal(t, tt.exhausted, errors.Is(err, model.ErrRetriesExhausted))
		})
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	rec := &recorder{}
	var seen []int
	p := model.Retry{MaxRetries: 3, BaseDelay: time.Hour, Sleep: rec.sleep,
		OnRetry: func(n int, _ time.Duration, err error) { seen = append(seen, n); require.Error(t, err) }}
	calls := 0
	err := p.Do(context.Background(), failing(&calls, statusErr(429, 2*time.Second), statusErr(503, 1500*time.Millisecond)))
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{2 * time.Second, 1500 * time.Millisecond}, rec.waits)
	assert.Equal(t, []int{1, 2}, seen)
}

func TestRetryBackoffGrowsAndIsCapped(t *testing.T) {
	rec := &recorder{}
	p := model.Retry{MaxRetries: 6, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, Sleep: rec.sleep}
	calls := 0
	errs := make([]error, 6)
	for i := range errs {
		errs[i] = statusErr(500, 0)
	}
	require.NoError(t, p.Do(context.Background(), failing(&calls, errs...)))
	nominal := []time.Duration{100, 200, 400, 800, 1000, 1000}
	require.Len(t, rec.waits, len(nominal))
	for i, n := range nominal {
		d := n * time.Millisecond
		assert.GreaterOrEqual(t, rec.waits[i], d/2, "wait %d", i)
		assert.LessOrEqual(t, rec.waits[i], d, "wait %d", i)
	}
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := model.Retry{MaxRetries: 5, BaseDelay: time.Hour, MaxDelay: time.Hour}
	calls := 0
	attempted := make(chan struct{})
	go func() {
		// Cancel once the first attempt has failed: the policy is waiting,
		// or about to.
		<-attempted
		cancel()
	}()
	attempt := failing(&calls, statusErr(503, 0), statusErr(503, 0))
	err := p.Do(ctx, func(ctx context.Context) error {
		defer func() {
			if calls == 1 {
				close(attempted)
			}
		}()
		return attempt(ctx)
	})
	require.ErrorIs(t, err, context.Canceled)
	var pe *model.ProviderError
	assert.ErrorAs(t, err, &pe, "the provider error stays visible")
	assert.Equal(t, 1, calls)

	// An attempt that fails because the context ended is not retried.
	calls = 0
	err = model.Retry{MaxRetries: 3}.Do(ctx, func(ctx context.Context) error { calls++; return ctx.Err() })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, calls)
}

func TestRetryRealSleep(t *testing.T) {
	calls := 0
	p := model.Retry{MaxRetries: 2, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	require.NoError(t, p.Do(context.Background(), failing(&calls, statusErr(500, 0))))
	assert.Equal(t, 2, calls)
}

func TestIsTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), false},
		{statusErr(429, 0), true},
		{&model.ProviderError{Provider: "openai", StatusCode: 429, Type: "insufficient_quota", Code: "insufficient_quota"}, false}, // waiting does not refill a quota
		{fmt.Errorf("wrapped: %w", statusErr(502, 0)), true},
		{statusErr(400, 0), false},
		{statusErr(422, 0), false},
		{&model.ProviderError{Provider: "x", Err: syscall.ECONNRESET}, false}, // a ProviderError's status decides
		{syscall.ECONNRESET, true},
		{fmt.Errorf("read: %w", syscall.EPIPE), true},
		{&net.OpError{Op: "read", Err: errors.New("boom")}, true},
		{io.ErrUnexpectedEOF, true},
		{io.EOF, false},
		{errors.New("invalid"), false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, model.IsTransient(tt.err), "%v", tt.err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		ok      bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"fractional seconds", map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond, true},
		{"milliseconds preferred", map[string]string{"Retry-After": "3", "Retry-After-Ms": "120"}, 120 * time.Millisecond, true},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "3", "Retry-After-Ms": "soon"}, 3 * time.Second, true},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second, true},
		{"http date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "later"}, 0, false},
		{"huge", map[string]string{"Retry-After": "1e300"}, time.Duration(1<<63 - 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			got, ok := model.RetryAfter(h, now)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestProviderErrorMessage(t *testing.T) {
	inner := errors.New("sdk error")
	err := &model.ProviderError{Provider: "openai", StatusCode: 400, Type: "invalid_request_error",
		Code: "context_length_exceeded", Message: "This model's maximum context length is 8192 tokens.", Err: inner}
	assert.Equal(t, "openai: 400 Bad Request: invalid_request_error (context_length_exceeded): This model's maximum context length is 8192 tokens.", err.Error())
	assert.ErrorIs(t, err, inner)
	assert.False(t, err.Transient())

	assert.Equal(t, "anthropic: 529: overloaded_error: Overloaded",
		(&model.ProviderError{Provider: "anthropic", StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"}).Error())
	assert.Equal(t, "x: error: boom", (&model.ProviderError{Provider: "x", Message: "boom"}).Error())
}
