package wholereply_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/model/internal/wholereply"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func reply(status int, contentType, body string) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) {
		h := http.Header{}
		if contentType != "" {
			h.Set("Content-Type", contentType)
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
	}
}

func TestCaptureTakesOnlySuccessfulJSONReplies(t *testing.T) {
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	require.NoError(t, err)
	for _, tc := range []struct {
		name        string
		status      int
		contentType string
		captured    bool
	}{
		{"a JSON reply", 200, "application/json", true},
		{"with parameters", 200, "application/json; charset=utf-8", true},
		{"an event stream", 200, "text/event-stream", false},
		{"an error", 500, "application/json", false},
		{"no type", 200, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c wholereply.Capture
			res, err := c.Middleware(req, reply(tc.status, tc.contentType, `{"a":1}`))
			require.NoError(t, err)
			rest, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			if tc.captured {
				assert.Equal(t, `{"a":1}`, string(c.Body))
				assert.Empty(t, rest, "the client's decoder gets an empty stream")
			} else {
				assert.Nil(t, c.Body)
				assert.Equal(t, `{"a":1}`, string(rest), "the reply is left as it was")
			}
		})
	}
}

func TestCaptureRefusesAHugeReply(t *testing.T) {
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	require.NoError(t, err)
	c := wholereply.Capture{Provider: "p"}
	_, err = c.Middleware(req, reply(200, "application/json", strings.Repeat(" ", wholereply.MaxBody+1)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p: the server answered a streaming request with a JSON reply of more than")
}

func TestDecodeReadsTheFirstJSONValue(t *testing.T) {
	type reply struct {
		A int `json:"a"`
	}
	c := wholereply.Capture{Provider: "p", Body: []byte(`{"a":1} trailing`)}
	v, err := wholereply.Decode[reply](&c, "a reply")
	require.NoError(t, err)
	assert.Equal(t, 1, v.A)

	c.Body = []byte(`{"a":`)
	_, err = wholereply.Decode[reply](&c, "a reply")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p: the server answered a streaming request with JSON that is not a reply")
}
