package mcp

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. The typed errors below match them with errors.Is.
var (
	// ErrInvalidConfig: a Config is incomplete or contradictory.
	ErrInvalidConfig = errors.New("mcp: invalid server config")
	// ErrConnect: a server could not be reached: its command did not start,
	// its URL refused the connection, or the handshake or the first listing
	// of tools failed. See ConnectError.
	ErrConnect = errors.New("mcp: cannot connect to server")
	// ErrClosed: the toolset was closed.
	ErrClosed = errors.New("mcp: toolset closed")
	// ErrTransport: a request did not get an answer because the connection
	// or the session was lost. See CallError.
	ErrTransport = errors.New("mcp: connection to server lost")
	// ErrReconnectExhausted: a request failed on every session the toolset
	// was allowed to open for it. See CallError.
	ErrReconnectExhausted = errors.New("mcp: reconnection attempts exhausted")
	// ErrHeaderRefused: the header function (WithHeaderFunc) returned an
	// error, so the request was not sent.
	ErrHeaderRefused = errors.New("mcp: header function refused the request")
	// ErrToolFailed: the server ran the tool and the tool reported an error
	// (isError). See ToolError.
	ErrToolFailed = errors.New("mcp: tool reported an error")
)

// Error codes carried by tool.Result.ErrorCode for failures specific to MCP.
// A tool that reports an error itself gets tool.CodeToolError.
const (
	// CodeUnavailable: the server could not be reached or the session was
	// lost; Result.Err is a *CallError and the call may succeed if retried.
	CodeUnavailable = "mcp_unavailable"
	// CodeProtocol: the server refused the request with a JSON-RPC error
	// (an unknown tool, invalid parameters, ...), or answered with a result
	// the client cannot read; the session is not lost and the request is
	// not sent again.
	CodeProtocol = "mcp_protocol_error"
	// CodeRefused: the header function refused the request, which was not
	// sent; Result.Err matches ErrHeaderRefused.
	CodeRefused = "mcp_refused"
)

// ConnectError reports a failed attempt to open a session with a server.
type ConnectError struct {
	// Server is the server's name.
	Server string
	// Transport is the transport used.
	Transport Transport
	// Stage is the step that failed: "start" (the command), "connect"
	// (reaching the URL and the initialize handshake) or "list tools".
	Stage string
	// Stderr is the end of what a stdio server wrote to its standard error,
	// which usually says why it failed.
	Stderr string
	// Err is the underlying error.
	Err error
}

// Error says which server failed, at which step, and why.
func (e *ConnectError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp: server %q (%s): %s: %v", e.Server, e.Transport, e.Stage, e.Err)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		fmt.Fprintf(&b, " (server stderr: %s)", s)
	}
	return b.String()
}

// Is reports whether target is ErrConnect.
func (e *ConnectError) Is(target error) bool { return target == ErrConnect }

// Unwrap returns the underlying error.
func (e *ConnectError) Unwrap() error { return e.Err }

// CallError reports a request (a tool call or a listing of tools) that got no
// answer from the server. It matches ErrTransport when the connection or the
// session was lost, and ErrReconnectExhausted when every allowed session
// failed.
type CallError struct {
	// Server is the server's name.
	Server string
	// Method is what was asked: "call <tool>" or "list tools".
	Method string
	// Attempts is the number of sessions the request was tried on.
	Attempts int
	// Err is the error of the last attempt.
	Err error

	lost      bool
	exhausted bool
}

// Error says which request failed on which server, and why.
func (e *CallError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mcp: server %q: %s", e.Server, e.Method)
	if e.exhausted {
		fmt.Fprintf(&b, ": gave up after %d attempt(s)", e.Attempts)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Is reports whether target is ErrTransport (the connection or session was
// lost) or ErrReconnectExhausted (no allowed session answered).
func (e *CallError) Is(target error) bool {
	return (target == ErrTransport && e.lost) || (target == ErrReconnectExhausted && e.exhausted)
}

// Unwrap returns the error of the last attempt.
func (e *CallError) Unwrap() error { return e.Err }

// Transient reports whether the request may succeed if made again later:
// it is true when the connection or the session was lost.
func (e *CallError) Transient() bool { return e.lost }

// ToolError is the error behind the result of a call that the server's tool
// reported as failed (isError).
type ToolError struct {
	// Server is the server's name.
	Server string
	// Tool is the tool's name on the server.
	Tool string
	// Message is the text the tool returned.
	Message string
}

// Error names the tool and repeats its message.
func (e *ToolError) Error() string {
	return fmt.Sprintf("mcp: server %q: tool %q: %s", e.Server, e.Tool, e.Message)
}

// Is reports whether target is ErrToolFailed.
func (e *ToolError) Is(target error) bool { return target == ErrToolFailed }
