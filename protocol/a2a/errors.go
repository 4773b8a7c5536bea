package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/trellis-go/trellis/internal/httpstatus"
	"github.com/trellis-go/trellis/internal/textcut"
)

// Sentinel errors. The typed errors below match them with errors.Is.
var (
	// ErrCardNotFound: the agent's base URL has no agent card (404).
	ErrCardNotFound = errors.New("a2a: agent card not found")
	// ErrInvalidCard: the agent card is not JSON, or lacks what a client
	// needs (a name, a usable URL).
	ErrInvalidCard = errors.New("a2a: invalid agent card")
	// ErrNoJSONRPC: the agent card offers no JSON-RPC interface (only
	// gRPC or HTTP+JSON, which this package does not speak).
	ErrNoJSONRPC = errors.New("a2a: the agent offers no JSON-RPC interface")
	// ErrUnsupportedVersion: the agent offers JSON-RPC only in protocol
	// versions this package does not speak.
	ErrUnsupportedVersion = errors.New("a2a: unsupported protocol version")
	// ErrInvalidResponse: an answer that is not what the protocol says:
	// not JSON, not a JSON-RPC response, a result of the wrong shape.
	ErrInvalidResponse = errors.New("a2a: invalid response")
	// ErrResponseTooLarge: an answer, or an event of a stream, larger than
	// the client reads (WithMaxResponseBytes).
	ErrResponseTooLarge = errors.New("a2a: response too large")
	// ErrHeaderRefused: the header function (WithHeaderFunc) returned an
	// error, so the request was not sent.
	ErrHeaderRefused = errors.New("a2a: header function refused the request")

	// ErrTaskNotFound is matched by an *RPCError with code RPCTaskNotFound.
	ErrTaskNotFound = errors.New("a2a: task not found")
	// ErrTaskNotCancelable is matched by an *RPCError with code
	// RPCTaskNotCancelable.
	ErrTaskNotCancelable = errors.New("a2a: task not cancelable")
	// ErrUnsupportedOperation is matched by an *RPCError with code
	// RPCUnsupportedOperation.
	ErrUnsupportedOperation = errors.New("a2a: unsupported operation")
	// ErrVersionNotSupported is matched by an *RPCError with code
	// RPCVersionNotSupported.
	ErrVersionNotSupported = errors.New("a2a: protocol version not supported by the agent")

	// ErrNoOwner: RequestOwner found no owner in the request's context
	// (see ContextWithOwner).
	ErrNoOwner = errors.New("a2a: the request names no owner")

	// ErrServerClosed: the server was closed.
	ErrServerClosed = errors.New("a2a: server closed")
)

// JSON-RPC error codes: the standard ones and those the protocol adds.
const (
	RPCParseError                 = -32700
	RPCInvalidRequest             = -32600
	RPCMethodNotFound             = -32601
	RPCInvalidParams              = -32602
	RPCInternalError              = -32603
	RPCTaskNotFound               = -32001
	RPCTaskNotCancelable          = -32002
	RPCPushNotificationNotSupport = -32003
	RPCUnsupportedOperation       = -32004
	RPCContentTypeNotSupported    = -32005
	RPCInvalidAgentResponse       = -32006
	RPCExtendedCardNotConfigured  = -32007
	RPCExtensionSupportRequired   = -32008
	RPCVersionNotSupported        = -32009
)

// codeNames names the error codes in messages.
var codeNames = map[int]string{
	RPCParseError:                 "parse error",
	RPCInvalidRequest:             "invalid request",
	RPCMethodNotFound:             "method not found",
	RPCInvalidParams:              "invalid params",
	RPCInternalError:              "internal error",
	RPCTaskNotFound:               "task not found",
	RPCTaskNotCancelable:          "task not cancelable",
	RPCPushNotificationNotSupport: "push notifications not supported",
	RPCUnsupportedOperation:       "unsupported operation",
	RPCContentTypeNotSupported:    "content type not supported",
	RPCInvalidAgentResponse:       "invalid agent response",
	RPCExtendedCardNotConfigured:  "extended agent card not configured",
	RPCExtensionSupportRequired:   "extension support required",
	RPCVersionNotSupported:        "version not supported",
}

// RPCError is a JSON-RPC error an agent answered with.
type RPCError struct {
	// Method is the method called.
	Method string
	// Code is the error's code, such as RPCTaskNotFound.
	Code int
	// Message is the agent's message.
	Message string
	// Data is the error's data, if any.
	Data json.RawMessage
}

// Error names the method, the code and the agent's message.
func (e *RPCError) Error() string {
	name := codeNames[e.Code]
	if name == "" {
		name = "error"
	}
	msg := fmt.Sprintf("a2a: %s: JSON-RPC error %d (%s): %s", e.Method, e.Code, name, textcut.Clip(e.Message, 500, "..."))
	if len(e.Data) > 0 && string(e.Data) != "null" {
		msg += " " + textcut.Clip(string(e.Data), 300, "...")
	}
	return msg
}

// Is matches the sentinel of the error's code: ErrTaskNotFound,
// ErrTaskNotCancelable, ErrUnsupportedOperation, ErrVersionNotSupported.
func (e *RPCError) Is(target error) bool {
	switch target {
	case ErrTaskNotFound:
		return e.Code == RPCTaskNotFound
	case ErrTaskNotCancelable:
		return e.Code == RPCTaskNotCancelable
	case ErrUnsupportedOperation:
		return e.Code == RPCUnsupportedOperation
	case ErrVersionNotSupported:
		return e.Code == RPCVersionNotSupported
	}
	return false
}

// StatusError is an HTTP status outside 2xx that an agent answered with and
// that carried no JSON-RPC error. It is transient (retry middleware retries
// it) for 408, 429 and 5xx.
type StatusError struct {
	// URL is the address that answered.
	URL string
	// Status is the HTTP status code.
	Status int
	// Body is the start of the answer's body, for messages.
	Body string
}

// Error names the address and the status.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("a2a: %s answered %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Transient reports whether the request may succeed if sent again.
func (e *StatusError) Transient() bool { return httpstatus.Transient(e.Status) }

// Error codes carried by tool.Result.ErrorCode for failures of a remote
// agent tool.
const (
	// CodeTaskFailed: the remote agent failed, rejected or canceled the
	// task; the content quotes its message.
	CodeTaskFailed = "a2a_task_failed"
	// CodeUnavailable: the agent could not be reached, or answered with an
	// HTTP error; Result.Err says which (a *StatusError is transient for
	// 408, 429 and 5xx).
	CodeUnavailable = "a2a_unavailable"
	// CodeProtocol: the agent answered with a JSON-RPC error (Result.Err
	// is an *RPCError) or with something this package cannot read.
	CodeProtocol = "a2a_protocol_error"
	// CodeRefused: the header function refused the request, which was not
	// sent; Result.Err matches ErrHeaderRefused.
	CodeRefused = "a2a_refused"
)
