package mcp

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
)

// maxQuoted bounds how much of a name or ID an error message quotes: a
// server's or tool's name may come from a server or a model (an ad-hoc
// server of the broker is named by its URL), and an error must not repeat
// a huge one.
const maxQuoted = 64

// quote returns s quoted as %q would, cut to its first maxQuoted bytes
// (between characters) with "…" at the cut.
func quote(s string) string { return quoteN(s, maxQuoted) }

// showMethod returns a request's description ("list tools", "call <tool>")
// for an error, the tool's name cut as quote cuts it.
func showMethod(m string) string {
	if name, ok := strings.CutPrefix(m, "call "); ok {
		return "call " + textcut.Clip(name, maxQuoted, "…")
	}
	return m
}

// quoteN is quote with a bound of n bytes.
func quoteN(s string, n int) string { return strconv.Quote(textcut.Clip(s, n, "…")) }

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
	// ErrURLRefused: the toolset did not send an HTTP request to where the
	// server sent it: a redirect, or the message endpoint an SSE server
	// named, that leads to another origin than the Config's URL (unless
	// WithCrossOriginRedirects allows it), one that a URL check
	// (WithURLCheck) refuses, or one redirect too many. The error names the
	// URLs, without their queries.
	ErrURLRefused = errors.New("mcp: request URL refused")
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
	// CodeRefused: the toolset refused to send the request: the header
	// function refused it (Result.Err matches ErrHeaderRefused), or the
	// server redirected it where the toolset does not follow
	// (ErrURLRefused). It is not sent again.
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
	fmt.Fprintf(&b, "mcp: server %s (%s): %s: %v", quote(e.Server), e.Transport, e.Stage, e.Err)
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
	fmt.Fprintf(&b, "mcp: server %s: %s", quote(e.Server), showMethod(e.Method))
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
	return fmt.Sprintf("mcp: server %s: tool %s: %s", quote(e.Server), quote(e.Tool), e.Message)
}

// Is reports whether target is ErrToolFailed.
func (e *ToolError) Is(target error) bool { return target == ErrToolFailed }
