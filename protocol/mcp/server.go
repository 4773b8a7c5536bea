package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// frameOps are the tool package's operations on the frame that holds a
// call's context (see internal/callctx): preparing the call's arguments in
// it, so that they are final, and invoking the call in it, so that the
// permission check made on them is not made again.
var frameOps = callctx.OpsOf[*tool.Invoker, tool.Tool, tool.Result, tool.InvokeOption]()

// ErrServe: a tool cannot be served over MCP (an empty or duplicate name, an
// input schema that is not an object schema), or a server option is
// invalid (an allowed origin that is not scheme://host[:port]).
var ErrServe = errors.New("mcp: tool cannot be served")

// Server exposes a Trellis toolset as an MCP server, so that any MCP client
// can list and call its tools. Each tool keeps its name, description and
// schemas; its metadata becomes MCP annotations; its results are converted
// back (see CallToolResult); calls run through a tool.Invoker, so arguments
// are coerced and validated and failures and panics become error results.
//
// The Server does not own the toolset: whoever created the toolset closes it.
type Server struct {
	set     tool.Toolset
	mcp     *sdk.Server
	invoker *tool.Invoker
	policy  tool.Policy
	origins map[origin]bool // the browser origins allowed over HTTP

	refresh sync.Mutex // one Refresh at a time
	mu      sync.RWMutex
	tools   map[string]tool.Tool
	prints  map[string]string // name → the JSON of the MCP tool last added

	stateKey []byte // signs the request states of multi round-trip calls
}

// ServerOption configures a Server.
type ServerOption func(*serverConfig)

type serverConfig struct {
	name, version string
	instructions  *string
	invoke        []tool.InvokeOption
	policy        tool.Policy
	base          sdk.ServerOptions
	origins       []string
	resources     []Resource
	templates     []ResourceTemplate
	prompts       []Prompt
	completer     Completer
	stateKey      []byte
}

// WithImplementation sets the name and version the server gives clients in
// the handshake (default: the toolset's name and "v0").
func WithImplementation(name, version string) ServerOption {
	return func(c *serverConfig) { c.name, c.version = name, version }
}

// WithInstructions sets the instructions the server gives clients. By
// default they are the tools' own instructions (tool.CollectInstructions).
func WithInstructions(text string) ServerOption {
	return func(c *serverConfig) { c.instructions = &text }
}

// WithInvokeOptions sets options of the tool.Invoker that runs the calls,
// for example tool.WithPending(&p) to complete long-running calls later, or
// tool.WithProgress(sink) to receive the progress of calls whose client did
// not ask for it (a call whose client sent a progress token reports its
// progress to that client instead). JSON repair has nothing to do here:
// MCP arguments arrive as JSON objects.
func WithInvokeOptions(opts ...tool.InvokeOption) ServerOption {
	return func(c *serverConfig) {
		for _, o := range opts {
			if o != nil {
				c.invoke = append(c.invoke, o)
			}
		}
	}
}

// WithPolicy sets a permission policy consulted (after each tool's own
// checker, see tool.Authorize) before every call; a call it does not allow
// gets the structured denied result instead of running. Both judge the
// arguments the tool runs with (see tool.Invoker.Prepare), not the ones
// the client sent: a policy sees an object a client sent as a JSON string
// as the object, and the arguments a PrepareArguments hook rewrote as
// rewritten.
func WithPolicy(p tool.Policy) ServerOption {
	return func(c *serverConfig) { c.policy = p }
}

// WithServerOptions sets the go-sdk server options the server starts from
// (logger, page size, keep-alive, ...). The tools capability is always
// advertised, with list-changed notifications.
func WithServerOptions(o sdk.ServerOptions) ServerOption {
	return func(c *serverConfig) { c.base = o }
}

// WithAllowedOrigins lets web pages of the given origins ("https://app.example.com",
// "http://localhost:5173": scheme, host and port, nothing else) call the
// server over HTTP. Handler and SSEHandler refuse, with 403 Forbidden, every
// request whose Origin header names another origin, or "null": a browser
// sends one with the requests of a page, and without this check any page the
// user opens could call the server on a local or internal address, directly
// or by DNS rebinding. Requests without an Origin header, as other programs
// send them, are served. A page's own origin is not allowed implicitly: a
// page rebound to the server's address would pass as same-origin.
// Authentication is a separate matter: see the package's documentation.
func WithAllowedOrigins(origins ...string) ServerOption {
	return func(c *serverConfig) { c.origins = append(c.origins, origins...) }
}

// NewServer returns an MCP server for the tools set resolves to with ctx.
// A tool that cannot be served is an error wrapping ErrServe and no server
// is returned. Call Refresh when the set's tools change. Nil options are
// ignored.
func NewServer(ctx context.Context, set tool.Toolset, opts ...ServerOption) (*Server, error) {
	if set == nil {
		return nil, fmt.Errorf("%w: no toolset", ErrServe)
	}
	c := serverConfig{name: set.Name(), version: "v0"}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.name == "" {
		c.name = "trellis"
	}
	origins, err := parseOrigins(c.origins)
	if err != nil {
		return nil, err
	}
	tools, err := set.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp: listing the tools of %s: %w", quote(set.Name()), err)
	}
	prepared, err := prepareTools(tools)
	if err != nil {
		return nil, err
	}
	so := c.base
	if c.instructions != nil {
		so.Instructions = *c.instructions
	} else if so.Instructions == "" {
		so.Instructions = tool.CollectInstructions(tools)
	}
	caps := &sdk.ServerCapabilities{}
	if so.Capabilities != nil {
		*caps = *so.Capabilities
	}
	caps.Tools = &sdk.ToolCapabilities{ListChanged: true}
	if caps.Logging == nil {
		caps.Logging = &sdk.LoggingCapabilities{} // tools log through tool.Log
	}
	so.Capabilities = caps
	c.serveExtras(&so)
	s := &Server{
		set:     set,
		invoker: tool.NewInvoker(c.invoke...),
		policy:  c.policy,
		origins: origins,
		tools:   map[string]tool.Tool{},
		prints:  map[string]string{},

		stateKey: c.stateKey,
	}
	if s.stateKey == nil {
		s.stateKey = newStateKey()
	}
	s.mcp = sdk.NewServer(&sdk.Implementation{Name: c.name, Version: c.version}, &so)
	c.addExtras(s.mcp)
	s.apply(prepared)
	return s, nil
}

// MCP returns the go-sdk server, to connect it over any transport
// (Server.Connect, sdk.NewStreamableHTTPHandler, ...).
func (s *Server) MCP() *sdk.Server { return s.mcp }

// Run serves one session over t until the client leaves or ctx ends; with
// &sdk.StdioTransport{} it makes the program an MCP server on its standard
// input and output.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error { return s.mcp.Run(ctx, t) }

// Handler returns an http.Handler serving the streamable HTTP transport,
// behind the server's Origin check (see WithAllowedOrigins); opts may be
// nil. Requests of a session are served as of the protocol version the
// session negotiated, even when a client names an older one in its
// MCP-Protocol-Version header. It authenticates no one: put the application's authentication in
// front of it.
func (s *Server) Handler(opts *sdk.StreamableHTTPOptions) http.Handler {
	return s.CheckOrigin(s.sessionVersion(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.mcp }, opts)))
}

// SSEHandler returns an http.Handler serving the older HTTP+SSE transport,
// behind the server's Origin check (see WithAllowedOrigins); opts may be
// nil. It authenticates no one.
func (s *Server) SSEHandler(opts *sdk.SSEOptions) http.Handler {
	return s.CheckOrigin(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s.mcp }, opts))
}

// CheckOrigin returns next behind the server's Origin check, for a handler
// built from MCP() rather than by Handler or SSEHandler: a request whose
// Origin header names an origin WithAllowedOrigins did not allow, or
// "null", or that a browser marks as cross-site without an Origin
// (Sec-Fetch-Site), gets 403 Forbidden; one without an Origin header goes
// to next.
func (s *Server) CheckOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.originAllowed(r) {
			http.Error(w, "Forbidden: this MCP server does not accept requests from web pages of this origin", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed reports whether r comes from no web page, or from a page of
// an allowed origin. (net/http's CrossOriginProtection lets through a
// request whose Origin matches its Host, which is what a page rebound to
// the server's address sends, and every GET: hence a check of its own.)
func (s *Server) originAllowed(r *http.Request) bool {
	values := r.Header.Values("Origin")
	switch len(values) {
	case 0:
		// A browser sends Origin with every request that is not a
		// same-origin GET or HEAD; Sec-Fetch-Site, where it comes, says
		// where the page is.
		site := r.Header.Get("Sec-Fetch-Site")
		return site == "" || site == "none" || site == "same-origin"
	case 1:
	default:
		return false
	}
	o, ok := parseOrigin(values[0])
	return ok && s.origins[o]
}

// parseOrigins reads the entries of WithAllowedOrigins.
func parseOrigins(entries []string) (map[origin]bool, error) {
	out := map[origin]bool{}
	var bad []string
	for _, e := range entries {
		o, ok := parseOrigin(strings.TrimSpace(e))
		if !ok {
			bad = append(bad, quote(e))
			continue
		}
		out[o] = true
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: WithAllowedOrigins: %s: want an origin, scheme://host[:port], such as \"https://app.example.com\"",
			ErrServe, strings.Join(bad, ", "))
	}
	return out, nil
}

// parseOrigin reads an origin, as a browser's Origin header gives it:
// an http or https scheme and a host, with a port or not, and no path,
// query, fragment or user information ("null" is no origin).
func parseOrigin(raw string) (origin, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.Contains(raw, "#") {
		return origin{}, false
	}
	return originOf(u), true
}

// Refresh resolves the toolset again with ctx and brings the server's tools
// up to date: new tools are added, changed ones replaced, missing ones
// removed. Connected clients are told that the list changed. If a tool
// cannot be served nothing changes and the error wraps ErrServe.
func (s *Server) Refresh(ctx context.Context) error {
	s.refresh.Lock()
	defer s.refresh.Unlock()
	tools, err := s.set.Tools(ctx)
	if err != nil {
		return fmt.Errorf("mcp: listing the tools of %s: %w", quote(s.set.Name()), err)
	}
	prepared, err := prepareTools(tools)
	if err != nil {
		return err
	}
	s.apply(prepared)
	return nil
}

// Tools returns the names of the tools served, sorted.
func (s *Server) Tools() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.tools))
}

// servedTool is a tool ready to be added to the go-sdk server.
type servedTool struct {
	t     tool.Tool
	mcp   *sdk.Tool
	print string
}

// prepareTools converts tools into MCP tools, or says which cannot be.
func prepareTools(tools []tool.Tool) ([]servedTool, error) {
	var problems []string
	seen := map[string]bool{}
	out := make([]servedTool, 0, len(tools))
	for i, t := range tools {
		if t == nil {
			problems = append(problems, fmt.Sprintf("tool %d is nil", i))
			continue
		}
		def := t.Definition()
		switch {
		case def.Name == "":
			problems = append(problems, fmt.Sprintf("tool %d has no name", i))
			continue
		case seen[def.Name]:
			problems = append(problems, fmt.Sprintf("two tools are named %s", quote(def.Name)))
			continue
		}
		seen[def.Name] = true
		mt, err := MCPTool(def, tool.MetadataOf(t))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		mt.Title = tool.TitleOf(t)
		print, err := json.Marshal(mt)
		if err != nil {
			problems = append(problems, fmt.Sprintf("tool %s: %v", quote(def.Name), err))
			continue
		}
		out = append(out, servedTool{t: t, mcp: mt, print: string(print)})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrServe, strings.Join(problems, "; "))
	}
	return out, nil
}

// MCPTool converts a Trellis tool definition and its metadata into an MCP
// tool. The input schema must be an object schema (one without a "type" is
// taken as an object schema; an empty one is an object with any
// properties). Metadata becomes annotations, explicit hints only: ReadOnly
// sets readOnlyHint, Destructive sets destructiveHint true, OpenWorld sets
// openWorldHint true; a false field leaves the hint out, as Trellis cannot
// tell "no" from "unknown".
func MCPTool(def model.ToolDefinition, m tool.Metadata) (*sdk.Tool, error) {
	in := map[string]any{}
	if len(def.InputSchema) > 0 {
		if err := json.Unmarshal(def.InputSchema, &in); err != nil {
			return nil, fmt.Errorf("%w: tool %s: the input schema is not a JSON object: %w", ErrServe, quote(def.Name), err)
		}
	}
	switch typ, ok := in["type"]; {
	case !ok:
		in["type"] = "object"
	case typ != "object":
		return nil, fmt.Errorf("%w: tool %s: the input schema's type is %s, want \"object\"", ErrServe, quote(def.Name), textcut.Clip(fmt.Sprint(typ), maxQuoted, "…"))
	}
	mt := &sdk.Tool{Name: def.Name, Description: def.Description, InputSchema: in}
	if len(def.OutputSchema) > 0 {
		if !json.Valid(def.OutputSchema) {
			return nil, fmt.Errorf("%w: tool %s: the output schema is not valid JSON", ErrServe, quote(def.Name))
		}
		mt.OutputSchema = def.OutputSchema
	}
	if m.ReadOnly || m.Destructive || m.OpenWorld {
		a := &sdk.ToolAnnotations{ReadOnlyHint: m.ReadOnly}
		if m.Destructive {
			a.DestructiveHint = new(true)
		}
		if m.OpenWorld {
			a.OpenWorldHint = new(true)
		}
		mt.Annotations = a
	}
	return mt, nil
}

// apply makes the go-sdk server serve exactly tools.
func (s *Server) apply(tools []servedTool) {
	s.mu.Lock()
	keep := map[string]bool{}
	var add []servedTool
	for _, st := range tools {
		name := st.mcp.Name
		keep[name] = true
		s.tools[name] = st.t
		if s.prints[name] != st.print {
			s.prints[name] = st.print
			add = append(add, st)
		}
	}
	var remove []string
	for name := range s.tools {
		if !keep[name] {
			remove = append(remove, name)
			delete(s.tools, name)
			delete(s.prints, name)
		}
	}
	s.mu.Unlock()
	if len(remove) > 0 {
		s.mcp.RemoveTools(remove...)
	}
	for _, st := range add {
		s.mcp.AddTool(st.mcp, s.handler(st.mcp.Name))
	}
}

// handler returns the go-sdk handler of the named tool. It looks the tool up
// at call time, so a refreshed tool is called in its newest form.
func (s *Server) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.mu.RLock()
		t, ok := s.tools[name]
		s.mu.RUnlock()
		if !ok {
			return CallToolResult(tool.UnknownTool(name, s.Tools())), nil
		}
		call := model.ToolCall{ID: "mcp_" + uuid.NewString(), Name: name, Arguments: req.Params.Arguments}
		if args := bytes.TrimSpace(call.Arguments); len(args) == 0 || bytes.Equal(args, []byte("null")) {
			// No arguments, or null: a call without arguments.
			call.Arguments = json.RawMessage(`{}`)
		}
		// The tool's own checker and the server's policy, in that order,
		// judge the arguments the tool runs with: those the invoker makes
		// of the received ones (JSON repair when it repairs, the tool's
		// PrepareArguments hook, coercion toward its schema), which the
		// tool is then invoked with, in the frame that records them as
		// final and authorized. Without a policy, Invoke prepares the
		// arguments and consults the checker itself.
		var frame *callctx.Frame
		if s.policy != nil {
			frame = new(callctx.Frame)
			prepared, res, ok := frameOps.Prepare(s.invoker, frame, t, call)
			if !ok {
				return CallToolResult(res), nil // arguments the tool would refuse: it does not run
			}
			if denied, ok := tool.Authorize(ctx, t, prepared, s.policy); !ok {
				return CallToolResult(denied), nil
			}
			frame.MarkAuthorized(t, prepared)
			call = prepared
		}
		var opts []tool.InvokeOption
		if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
			n := 0
			opts = append(opts, tool.WithProgress(func(u tool.Update) {
				n++
				msg := u.Message
				if msg == "" && len(u.Content) > 0 {
					msg = tool.Result{Content: u.Content}.Text()
				}
				p := &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg}
				if u.Total > 0 {
					p.Progress, p.Total = u.Progress, u.Total
				}
				_ = req.Session.NotifyProgress(ctx, p)
			}))
		}
		ctx = withStreamCloser(ctx, req)
		if multiRoundTrip(req.Session) {
			p, err := s.roundTrip(req, name, req.Params.Arguments)
			if err != nil {
				return nil, err
			}
			ctx = tool.WithPeer(ctx, p)
			return s.finish(p, CallToolResult(frameOps.Invoke(s.invoker, ctx, frame, t, call, opts...))), nil
		}
		if req.Session != nil {
			ctx = tool.WithPeer(ctx, sessionPeer{ss: req.Session, token: callToken(req.Params.Meta)})
		}
		return CallToolResult(frameOps.Invoke(s.invoker, ctx, frame, t, call, opts...)), nil
	}
}
