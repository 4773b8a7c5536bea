package a2a

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/trellis-go/trellis/internal/sse"
	"github.com/trellis-go/trellis/internal/textcut"
)

// rpcFailure is a JSON-RPC error the server answers with.
type rpcFailure struct {
	code   int
	msg    string
	data   any
	status int // the HTTP status to answer with; 200 when zero
}

// Error returns the failure's message.
func (f *rpcFailure) Error() string { return f.msg }

// maxQuoted is the most bytes of one string, such as an ID or a method
// the client sent, that a failure's message quotes.
const maxQuoted = 64

// failf is a failure whose message is format with args. A string argument
// is cut to its first maxQuoted bytes (marked with "…"): the IDs and names
// a client sends are echoed by a bounded prefix, never in full.
func failf(code int, format string, args ...any) *rpcFailure {
	textcut.ClipArgs(args, maxQuoted, "…")
	return &rpcFailure{code: code, msg: fmt.Sprintf(format, args...)}
}

// rpcIn is a request as the server reads it.
type rpcIn struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// rpcOut is a response as the server writes it.
type rpcOut struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcErrorOut    `json:"error,omitempty"`
}

type rpcErrorOut struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// call is one request being served.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	id     json.RawMessage
	method string
	params json.RawMessage
	legacy bool   // answer in 0.3 shapes
	owner  string // whose the request is (WithOwner)
}

func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	if s.isClosed() {
		writeRPC(w, http.StatusServiceUnavailable, nil, nil, failf(RPCInternalError, "the server is shutting down"))
		return
	}
	var owner string
	if s.cfg.owner != nil {
		var err error
		if owner, err = s.cfg.owner(r); err != nil {
			// The error is the application's: it may name internals.
			writeRPC(w, http.StatusUnauthorized, nil, nil, failf(RPCInvalidRequest, "the request is not authenticated"))
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.cfg.maxBody)))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeRPC(w, http.StatusRequestEntityTooLarge, nil, nil, failf(RPCInvalidRequest, "the request body exceeds %d bytes", s.cfg.maxBody))
			return
		}
		writeRPC(w, http.StatusBadRequest, nil, nil, failf(RPCParseError, "reading the request body: %v", err))
		return
	}
	c, fail := parseCall(body)
	if fail != nil {
		writeRPC(w, http.StatusOK, c.id, nil, fail)
		return
	}
	c.w, c.r, c.owner = w, r, owner
	legacy, fail := generation(r.Header.Get(VersionHeader), c.method)
	if fail != nil {
		writeRPC(w, http.StatusOK, c.id, nil, fail)
		return
	}
	c.legacy = legacy
	s.dispatch(c)
}

// parseCall reads a JSON-RPC request. On failure the call holds the
// request's id when it could be read.
func parseCall(body []byte) (*call, *rpcFailure) {
	c := &call{id: json.RawMessage("null")}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if !json.Valid(trimmed) {
			return c, failf(RPCParseError, "the request is not valid JSON")
		}
		return c, failf(RPCInvalidRequest, "batch requests are not supported: send one request per HTTP request")
	}
	var in rpcIn
	if err := json.Unmarshal(body, &in); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || !json.Valid(body) {
			return c, failf(RPCParseError, "the request is not valid JSON: %v", err)
		}
		return c, failf(RPCInvalidRequest, "the request is not a JSON-RPC request object: %v", err)
	}
	if id := bytes.TrimSpace(in.ID); len(id) > 0 {
		switch id[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			c.id = id
		case 'n': // null
		default:
			return c, failf(RPCInvalidRequest, "the request's id must be a string or a number")
		}
	} else {
		return c, failf(RPCInvalidRequest, "the request has no id: A2A methods answer, so requests need one")
	}
	switch {
	case in.JSONRPC == nil || *in.JSONRPC != "2.0":
		return c, failf(RPCInvalidRequest, `the request's jsonrpc member must be "2.0"`)
	case in.Method == nil || *in.Method == "":
		return c, failf(RPCInvalidRequest, "the request has no method")
	}
	c.method = *in.Method
	c.params = in.Params
	if p := bytes.TrimSpace(c.params); len(p) > 0 && p[0] != '{' && !bytes.Equal(p, []byte("null")) {
		return c, failf(RPCInvalidParams, "params must be an object")
	}
	return c, nil
}

// generation decides which protocol generation to answer in: the one the
// A2A-Version header names; without the header (which the protocol reads
// as 0.3), the one the method's name belongs to, so that a 1.0 client that
// forgets the header is still understood.
func generation(header, method string) (legacy bool, fail *rpcFailure) {
	switch protocolGeneration(header) {
	case "1":
		return false, nil
	case "0.3":
		return true, nil
	}
	if strings.TrimSpace(header) == "" {
		return strings.Contains(method, "/"), nil
	}
	f := failf(RPCVersionNotSupported, "protocol version %q is not supported: this agent speaks %s and %s", header, Version, LegacyVersion)
	f.data = map[string]any{"supportedVersions": []string{Version, LegacyVersion}}
	return false, f
}

func (s *Server) dispatch(c *call) {
	switch c.method {
	case MethodSendMessage, LegacyMethodSend:
		s.send(c, false)
	case MethodSendStreamingMessage, LegacyMethodStream:
		s.send(c, true)
	case MethodGetTask, LegacyMethodGetTask:
		s.getTask(c)
	case MethodCancelTask, LegacyMethodCancelTask:
		s.cancelTask(c)
	case MethodSubscribeToTask, LegacyMethodResubscribe:
		s.subscribe(c)
	case MethodListTasks, "tasks/list":
		s.listTasks(c)
	case MethodGetExtendedAgentCard, "agent/getAuthenticatedExtendedCard":
		c.fail(failf(RPCUnsupportedOperation, "this agent has no extended agent card"))
	case "CreateTaskPushNotificationConfig", "SetTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
		"ListTaskPushNotificationConfigs", "ListTaskPushNotificationConfig", "DeleteTaskPushNotificationConfig",
		"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
		c.fail(failf(RPCPushNotificationNotSupport, "this agent does not send push notifications"))
	default:
		f := failf(RPCMethodNotFound, "method %q not found", c.method)
		f.data = map[string]any{"method": c.method}
		c.fail(f)
	}
}

// decodeParams reads the call's params into v, naming what is wrong.
func (c *call) decodeParams(v any) *rpcFailure {
	p := bytes.TrimSpace(c.params)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		p = []byte("{}")
	}
	if err := json.Unmarshal(p, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return failf(RPCInvalidParams, "params.%s: want a JSON %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return failf(RPCInvalidParams, "invalid params: %v", err)
	}
	return nil
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "struct", "map", "ptr":
		return "object"
	}
	return "number"
}

// startEvents begins the call's answer as a stream of server-sent events.
// write sends one event and keepAlive a comment, each flushed at once;
// both report false once the client is gone.
func (c *call) startEvents() (write func(Event) bool, keepAlive func() bool) {
	w := c.w
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flushed := func(err error) bool {
		if err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	write = func(ev Event) bool { return flushed(sse.Write(w, sse.Event{Data: rpcResult(c.id, c.event(ev))})) }
	keepAlive = func() bool {
		_, err := w.Write([]byte(": keep-alive\n\n"))
		return flushed(err)
	}
	return write, keepAlive
}

func (c *call) fail(f *rpcFailure) { writeRPC(c.w, cmp.Or(f.status, http.StatusOK), c.id, nil, f) }

func (c *call) reply(result any) { writeRPC(c.w, http.StatusOK, c.id, result, nil) }

// event returns ev in the call's generation: as is for 1.0, as its 0.3
// object for 0.3.
func (c *call) event(ev Event) any {
	if c.legacy {
		return legacyEvent(ev)
	}
	return ev
}

// task returns a task result (GetTask, CancelTask) in the call's
// generation.
func (c *call) task(t *Task) any {
	if c.legacy {
		return toLegacyTask(t)
	}
	return t
}

// writeRPC writes a JSON-RPC response.
func writeRPC(w http.ResponseWriter, status int, id json.RawMessage, result any, fail *rpcFailure) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out := rpcOut{JSONRPC: "2.0", ID: id, Result: result}
	if fail != nil {
		out.Result = nil
		out.Error = &rpcErrorOut{Code: fail.code, Message: fail.msg, Data: fail.data}
	}
	writeJSON(w, status, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		body, _ = json.Marshal(rpcOut{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcErrorOut{Code: RPCInternalError, Message: "encoding the answer: " + err.Error()}})
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// rpcResult is the JSON of a JSON-RPC response carrying result, for an
// event of a stream.
func rpcResult(id json.RawMessage, result any) []byte {
	b, err := json.Marshal(rpcOut{JSONRPC: "2.0", ID: id, Result: result})
	if err != nil {
		b, _ = json.Marshal(rpcOut{JSONRPC: "2.0", ID: id, Error: &rpcErrorOut{Code: RPCInternalError, Message: "encoding the event: " + err.Error()}})
	}
	return b
}
