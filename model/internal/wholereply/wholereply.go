package wholereply

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// MaxBody bounds the JSON reply read from a server that answers a streaming
// request without streaming.
const MaxBody = 32 << 20

// Capture holds the body of a whole reply to a streaming request. Its zero
// value is ready to use; use one per request.
type Capture struct {
	// Provider names the provider in errors.
	Provider string
	// Body is the JSON reply, nil when the server streamed (or failed).
	Body []byte
}

// Middleware is the streaming request's middleware (both providers' client
// libraries take this signature): a 2xx reply of type application/json has
// its body moved into c.Body.
func (c *Capture) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.StatusCode/100 != 2 || res.Body == nil {
		return res, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "application/json" {
		return res, nil
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxBody+1))
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	if len(b) > MaxBody {
		return nil, fmt.Errorf("%s: the server answered a streaming request with a JSON reply of more than %d bytes", c.Provider, MaxBody)
	}
	c.Body = b
	res.Body = io.NopCloser(strings.NewReader(""))
	res.ContentLength = 0
	return res, nil
}

// Decode reads the captured reply into a T, as the client libraries read
// the reply to a one-shot request: the first JSON value of the body. what
// names a T in the error, for example "a chat completion".
func Decode[T any](c *Capture, what string) (*T, error) {
	var v T
	if err := json.NewDecoder(bytes.NewReader(c.Body)).Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: the server answered a streaming request with JSON that is not %s: %w", c.Provider, what, err)
	}
	return &v, nil
}
