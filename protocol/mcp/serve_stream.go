package mcp

import (
	"context"
	"net/http"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resumable streams (SEP-1699, protocols 2025-11-25 and later): over
// streamable HTTP with an event store, a call's stream starts with a
// priming event, so that the client can resume it (GET with Last-Event-ID)
// when the connection drops, and a server may close it while a long call
// runs, telling the client when to come back.

type streamCloserKey struct{}

// CloseStream ends the HTTP stream of the MCP call ctx belongs to while the
// call goes on, and tells the client to reconnect after retryAfter (the
// SSE retry field): the answer is kept in the handler's event store
// (sdk.StreamableHTTPOptions.EventStore) and sent when the client resumes
// the stream. A long-running served tool uses it so as not to hold a
// connection open. It reports false, and does nothing, when the call did
// not come over streamable HTTP.
func CloseStream(ctx context.Context, retryAfter time.Duration) bool {
	fn, ok := ctx.Value(streamCloserKey{}).(func(sdk.CloseSSEStreamArgs))
	if !ok || fn == nil {
		return false
	}
	fn(sdk.CloseSSEStreamArgs{RetryAfter: retryAfter})
	return true
}

// withStreamCloser returns ctx carrying the stream closer of req, if any.
func withStreamCloser(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	if req.Extra == nil || req.Extra.CloseSSEStream == nil {
		return ctx
	}
	return context.WithValue(ctx, streamCloserKey{}, req.Extra.CloseSSEStream)
}

// protocolStreamsResumable is the first protocol version whose streams
// start with a priming event.
const protocolStreamsResumable = "2025-11-25"

// sessionVersion serves each request of a session as of the protocol
// version the session negotiated. The go-sdk decides what a stream carries
// (priming and close events) by the request's MCP-Protocol-Version header,
// which a client must set to the negotiated version; when a client names
// an older one there, the header is corrected to the session's version.
// Only such requests look the session up.
func (s *Server) sessionVersion(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const versionHeader, sessionHeader = "Mcp-Protocol-Version", "Mcp-Session-Id"
		hv, id := r.Header.Get(versionHeader), r.Header.Get(sessionHeader)
		if hv != "" && id != "" && hv < protocolStreamsResumable {
			if v := s.negotiated(id); v > hv {
				r = r.Clone(r.Context())
				r.Header.Set(versionHeader, v)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// negotiated returns the protocol version the session id negotiated, or ""
// when the server has no such session.
func (s *Server) negotiated(id string) string {
	for ss := range s.mcp.Sessions() {
		if ss.ID() != id {
			continue
		}
		ip := ss.InitializeParams()
		if ip == nil {
			return ""
		}
		// As the go-sdk negotiates: the client's version when the server
		// has it (initialize sessions stop at 2025-11-25), else 2025-11-25.
		if v := ip.ProtocolVersion; v < "2026-07-28" && slices.Contains(sdk.SupportedProtocolVersions(), v) {
			return v
		}
		return protocolStreamsResumable
	}
	return ""
}
