package model_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

// stalled is a server that answers nothing until the test ends.
func stalled(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv
}

func TestHTTPClientTimeoutsAreTransient(t *testing.T) {
	srv := stalled(t)
	tr := &http.Transport{ResponseHeaderTimeout: 20 * time.Millisecond}
	t.Cleanup(tr.CloseIdleConnections)
	for name, client := range map[string]*http.Client{
		"client timeout":          {Timeout: 20 * time.Millisecond, Transport: srv.Client().Transport},
		"response header timeout": {Transport: tr},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := client.Get(srv.URL)
			require.Error(t, err)
			assert.True(t, model.IsTransient(err), "the HTTP client gave up on one attempt: %v", err)
		})
	}
	t.Run("the caller's deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		_, err = srv.Client().Do(req)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.False(t, model.IsTransient(err), "the caller gave up: %v", err)
	})
}

func TestConnectionClosedBeforeTheReplyIsTransient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
			_ = c.Close()
		}
	}))
	defer srv.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	_, err := (&http.Client{Transport: tr}).Post(srv.URL, "application/json", strings.NewReader(`{}`))
	require.Error(t, err)
	assert.True(t, model.IsTransient(err), "connection closed before the reply: %v", err)
}

func TestRetryTriesAgainAfterAnAttemptTimedOutWhileTheCallerWaits(t *testing.T) {
	calls := 0
	err := model.Retry{MaxRetries: 2, Sleep: func(context.Context, time.Duration) error { return nil }}.Do(context.Background(), func(context.Context) error {
		calls++
		if calls == 1 {
			return context.DeadlineExceeded // the attempt's own deadline, not the caller's
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, calls)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls = 0
	err = model.Retry{MaxRetries: 2}.Do(ctx, func(context.Context) error {
		calls++
		return context.DeadlineExceeded
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 1, calls, "the caller's context ended: no retry")
}
