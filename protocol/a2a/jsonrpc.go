package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/trellis-go/trellis/internal/sse"
	"github.com/trellis-go/trellis/internal/streamlimit"
	"github.com/trellis-go/trellis/internal/textcut"
)

// The JSON-RPC method names of the two protocol generations.
const (
	MethodSendMessage          = "SendMessage"
	MethodSendStreamingMessage = "SendStreamingMessage"
	MethodGetTask              = "GetTask"
	MethodListTasks            = "ListTasks"
	MethodCancelTask           = "CancelTask"
	MethodSubscribeToTask      = "SubscribeToTask"
	MethodGetExtendedAgentCard = "GetExtendedAgentCard"

	LegacyMethodSend        = "message/send"
	LegacyMethodStream      = "message/stream"
	LegacyMethodGetTask     = "tasks/get"
	LegacyMethodCancelTask  = "tasks/cancel"
	LegacyMethodResubscribe = "tasks/resubscribe"
)

// rpcRequest is a JSON-RPC 2.0 request as a client writes it.
type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// rpcResponse is a JSON-RPC 2.0 response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcErrorJSON   `json:"error,omitempty"`
}

type rpcErrorJSON struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// decodeResponse reads a JSON-RPC response to method and returns its
// result, an *RPCError for an error response, or an error matching
// ErrInvalidResponse.
func decodeResponse(method string, body []byte) (json.RawMessage, error) {
	return decodeResponseTo(method, 0, body)
}

// decodeResponseTo is decodeResponse for the request whose id was id: a
// response that carries another id answers some other request (a proxy
// or an agent that mixed answers up) and is refused. An error response may
// carry a null id, as JSON-RPC allows when the request could not be read.
// An id of 0 checks nothing.
func decodeResponseTo(method string, id int64, body []byte) (json.RawMessage, error) {
	var resp rpcResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("%w: %s: the answer is not a JSON-RPC response (%w): %s", ErrInvalidResponse, method, err, snippet(body))
	}
	if id != 0 && !sameID(resp.ID, id, resp.Error != nil) {
		return nil, fmt.Errorf("%w: %s: the JSON-RPC response has id %.40s, not the request's %d", ErrInvalidResponse, method, string(resp.ID), id)
	}
	if resp.Error != nil {
		return nil, &RPCError{Method: method, Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	if len(resp.Result) == 0 || bytes.Equal(resp.Result, []byte("null")) {
		return nil, fmt.Errorf("%w: %s: the JSON-RPC response has neither a result nor an error: %s", ErrInvalidResponse, method, snippet(body))
	}
	return resp.Result, nil
}

// sameID reports whether raw, a response's id, is id; a null or missing
// id passes for an error response.
func sameID(raw json.RawMessage, id int64, isError bool) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return isError
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return false
		}
		n = json.Number(str) // an agent that echoes the id as a string
	}
	got, err := n.Int64()
	return err == nil && got == id
}

// decodeEvent reads the result of SendMessage or an element of a stream:
// a Task, a Message, a StatusUpdate or an ArtifactUpdate, in 1.0 or 0.3
// form.
func decodeEvent(method string, result json.RawMessage) (Event, error) {
	var ev Event
	if err := json.Unmarshal(result, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: %s: unreadable result (%w): %s", ErrInvalidResponse, method, err, snippet(result))
	}
	switch {
	case ev.Task != nil && ev.Task.ID == "":
		return Event{}, fmt.Errorf("%w: %s: a task without an id: %s", ErrInvalidResponse, method, snippet(result))
	case ev.StatusUpdate != nil && ev.StatusUpdate.TaskID == "",
		ev.ArtifactUpdate != nil && ev.ArtifactUpdate.TaskID == "":
		return Event{}, fmt.Errorf("%w: %s: an update without a taskId: %s", ErrInvalidResponse, method, snippet(result))
	}
	return ev, nil
}

// decodeTask reads the result of GetTask or CancelTask: a Task, bare (both
// generations) or, leniently, wrapped as SendMessage wraps it.
func decodeTask(method string, result json.RawMessage) (*Task, error) {
	ev, err := decodeEvent(method, result)
	if err == nil && ev.Task != nil {
		return ev.Task, nil
	}
	var t Task
	if err := json.Unmarshal(result, &t); err != nil || t.ID == "" {
		return nil, fmt.Errorf("%w: %s: the result is not a task: %s", ErrInvalidResponse, method, snippet(result))
	}
	return &t, nil
}

// snippet quotes the start of body for error messages.
func snippet(body []byte) string {
	return fmt.Sprintf("%q", textcut.Clip(string(bytes.TrimSpace(body)), 200, "..."))
}

// sseReader reads the events of a text/event-stream, returning the data of
// each. It holds at most max bytes of one event.
type sseReader struct{ events *sse.Reader }

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{events: sse.NewReader(r, max)}
}

// next returns the data of the next event that has some, or io.EOF at the
// end of the stream. An event cut short by the end of the stream is
// discarded, as the format says. An event past the limit fails with
// ErrResponseTooLarge (and streamlimit.ErrEventTooLarge).
func (s *sseReader) next() ([]byte, error) {
	ev, err := s.events.Next()
	if errors.Is(err, streamlimit.ErrEventTooLarge) {
		return nil, fmt.Errorf("%w: %w", ErrResponseTooLarge, err)
	}
	return ev.Data, err
}
