package gemini_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

// Gemini's errors become provider errors that the retry policy and the
// error classes read: the status, Google's status name, the message, the
// wait RetryInfo asks for, and the code that names a context too long.
func TestErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		typ, code string
		transient bool
		wait      time.Duration
	}{
		{"rate limited", 429, errorRateLimited, "RESOURCE_EXHAUSTED", "", true, 17 * time.Second},
		{"overloaded", 503, errorOverloaded, "UNAVAILABLE", "", true, 0},
		{"server error", 500, errorInternal, "INTERNAL", "", true, 0},
		{"context too long", 400, errorContextTooLong, "INVALID_ARGUMENT", "context_length_exceeded", false, 0},
		{"bad request", 400, errorInvalidArgument, "INVALID_ARGUMENT", "", false, 0},
		{"bad key", 400, errorUnauthenticated, "INVALID_ARGUMENT", "", false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				s := newServer(t, jsonReply(c.status, c.body))
				m, w := newModel(t, s)
				var err error
				if stream {
					_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
				} else {
					_, err = m.Generate(context.Background(), userReq("x"))
				}
				pe, ok := errors.AsType[*model.ProviderError](err)
				require.True(t, ok, "%v", err)
				assert.Equal(t, "gemini", pe.Provider)
				assert.Equal(t, c.status, pe.StatusCode)
				assert.Equal(t, c.typ, pe.Type)
				assert.Equal(t, c.code, pe.Code)
				assert.NotEmpty(t, pe.Message)
				assert.Equal(t, c.transient, model.IsTransient(err))
				if c.transient {
					assert.ErrorIs(t, err, model.ErrRetriesExhausted)
					assert.Len(t, s.Received(), 3)
					if c.wait > 0 {
						assert.Equal(t, []time.Duration{c.wait, c.wait}, w.All())
					}
				} else {
					assert.Len(t, s.Received(), 1)
				}
			}
		})
	}
}

func TestAnErrorThatIsNotJSONKeepsItsStatus(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, _ int) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>bad gateway</html>"))
	})
	m, _ := newModel(t, s)
	_, err := m.Generate(context.Background(), userReq("x"))
	pe, ok := errors.AsType[*model.ProviderError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusBadGateway, pe.StatusCode)
	assert.Contains(t, pe.Message, "bad gateway")
}

func TestAnUnreachableServerIsTransient(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, replyText))
	m, w := newModel(t, s)
	s.Close()
	_, err := m.Generate(context.Background(), userReq("x"))
	require.Error(t, err)
	assert.True(t, model.IsTransient(err), "%v", err)
	assert.Len(t, w.All(), 2)
}
