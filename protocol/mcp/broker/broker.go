package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

// frameOps are the tool package's operations on the frame that holds a
// call's context (see internal/callctx): preparing the call's arguments in
// it, so that they are final, and invoking the call in it, so that the
// permission check made on them is not made again.
var frameOps = callctx.OpsOf[*tool.Invoker, tool.Tool, tool.Result, tool.InvokeOption]()

// The names of the broker's tools.
const (
	ListServersTool   = "mcp_list_servers"
	ListToolsTool     = "mcp_list_tools"
	DescribeToolsTool = "mcp_describe_tools"
	CallToolTool      = "mcp_call_tool"
)

// DefaultMaxAdHoc is how many ad-hoc servers a broker keeps connections to
// at most (see WithMaxAdHoc).
const DefaultMaxAdHoc = 8

// Error codes of the broker's error results.
const (
	// CodeUnknownServer: the server named is neither a named server nor an
	// allowed URL.
	CodeUnknownServer = "mcp_unknown_server"
	// CodeNotAllowed: an ad-hoc URL is not on the allow-list.
	CodeNotAllowed = "mcp_url_not_allowed"
)

// ErrInvalidBroker: a broker cannot be built as asked (a server config that
// does not validate, two servers with one name, a bad allow-list entry).
var ErrInvalidBroker = errors.New("broker: invalid configuration")

// Broker is a toolset of four tools through which a model discovers and
// calls the tools of MCP servers on demand:
//
//   - mcp_list_servers lists the named servers with their descriptions;
//   - mcp_list_tools lists one server's tools, with short descriptions;
//   - mcp_describe_tools gives the full schemas of selected tools;
//   - mcp_call_tool calls one tool with its arguments.
//
// A server is named in the broker's configuration, or given by an ad-hoc
// http(s) URL that the allow-list (WithAllowedURLs) permits. Connections are
// opened on first use and kept until Close. A Broker is safe for concurrent
// use; whoever creates it closes it.
type Broker struct {
	name     string
	order    []string
	named    map[string]*mcp.Toolset
	configs  map[string]mcp.Config
	allow    allowList
	tsOpts   []mcp.Option
	targetFn func(Target) []mcp.Option
	onError  func(context.Context, Target, error) error
	policy   tool.Policy
	maxAdHoc int
	tools    []tool.Tool

	mu     sync.Mutex
	adHoc  map[string]*mcp.Toolset
	closed bool
}

// Option configures a Broker.
type Option func(*config)

type config struct {
	name     string
	servers  []mcp.Config
	allow    []string
	tsOpts   []mcp.Option
	targetFn func(Target) []mcp.Option
	onError  func(context.Context, Target, error) error
	policy   tool.Policy
	maxAdHoc int
}

// Target describes a server the broker connects to, for WithTargetOptions.
type Target struct {
	// Name is the named server's name, or the URL of an ad-hoc server.
	Name string
	// URL is the server's URL; empty for a server started as a command.
	URL string
	// AdHoc is true for a URL the model gave (allowed by WithAllowedURLs),
	// false for a server of WithServers.
	AdHoc bool
}

// WithServers adds named servers. Each config's Name (or the name derived
// from its command or URL) is what the model uses; its Description is shown
// by mcp_list_servers.
func WithServers(cfgs ...mcp.Config) Option {
	return func(c *config) { c.servers = append(c.servers, cfgs...) }
}

// WithAllowedURLs lets the model name servers that are not configured by
// their streamable HTTP URL, when the URL matches an entry: an http or https
// URL matched exactly, or one ending with "*" that matches any path starting
// with what precedes the star, on the same scheme and host (for example
// "https://mcp.example.com/tools/*"). URLs with user information, dot
// segments (a backslash counts as a slash) or fragments never match. Every
// request to an ad-hoc server must match an entry, each redirect's
// included (see mcp.WithURLCheck): a redirect elsewhere gets an error
// result with code CodeNotAllowed and is not followed. Without entries,
// only named servers can be used.
func WithAllowedURLs(entries ...string) Option {
	return func(c *config) { c.allow = append(c.allow, entries...) }
}

// WithToolsetOptions sets options of every toolset the broker opens
// (reconnection, filters), ad-hoc servers at URLs the model chose included:
// give credentials with WithTargetOptions instead.
func WithToolsetOptions(opts ...mcp.Option) Option {
	return func(c *config) { c.tsOpts = append(c.tsOpts, opts...) }
}

// WithTargetOptions sets options of the toolset the broker opens for each
// server by what the server is: fn gets the target and returns the options
// to add after those of WithToolsetOptions. It is where credentials go
// (mcp.WithHeaderFunc), so that a named server's token is sent to that
// server alone and never to a URL the model chose. fn runs when the broker
// is about to open a toolset (in New for the named servers, on first use
// for an ad-hoc one, while the broker's lock is held): it must not call the
// broker.
func WithTargetOptions(fn func(t Target) []mcp.Option) Option {
	return func(c *config) { c.targetFn = fn }
}

// WithErrorHandler sets a function that sees every error the broker meets
// talking to a server — connecting to it, listing its tools, calling one,
// including a remote tool's own failure (mcp.ToolError), but not arguments
// the broker refuses before sending — with the server it concerns, and
// returns the error to report in its place, or nil to keep err; the call's
// result keeps its status (a timeout stays a timeout). It can make an error clearer to the model (a
// refused token: "the user must sign in to this server"), record it, or
// pause the run by returning the error of graph.Interrupt (to have the user
// sign in, say): the call's error result carries it, and the call runs again
// when the run is resumed.
func WithErrorHandler(fn func(ctx context.Context, t Target, err error) error) Option {
	return func(c *config) { c.onError = fn }
}

// WithPolicy sets a permission policy that mcp_call_tool consults for the
// remote tool right before it calls it, on every attempt: the policy sees
// the remote tool, a call with the remote tool's name and the arguments it
// will be sent (validated and coerced toward its schema), and the
// remote tool's metadata (mapped from its MCP hints), so a rule such as "ask
// before destructive tools" holds for brokered tools too, in any executor.
// The tool's own checker, if the remote tool has one, is consulted first,
// as tool.Authorize does.
func WithPolicy(p tool.Policy) Option {
	return func(c *config) { c.policy = p }
}

// WithMaxAdHoc caps how many ad-hoc servers the broker connects to
// (DefaultMaxAdHoc). Beyond it, a new ad-hoc URL gets an error result. An
// ad-hoc server the broker could not connect to does not count.
func WithMaxAdHoc(n int) Option {
	return func(c *config) { c.maxAdHoc = n }
}

// WithName sets the toolset's name (default "mcp_broker").
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// New returns a broker. It checks every server config and allow-list entry
// (an error wraps ErrInvalidBroker) but connects to nothing. Nil options are
// ignored.
func New(opts ...Option) (*Broker, error) {
	c := config{name: "mcp_broker", maxAdHoc: DefaultMaxAdHoc}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	b := &Broker{
		name:     c.name,
		named:    map[string]*mcp.Toolset{},
		configs:  map[string]mcp.Config{},
		tsOpts:   c.tsOpts,
		targetFn: c.targetFn,
		onError:  c.onError,
		policy:   c.policy,
		maxAdHoc: c.maxAdHoc,
		adHoc:    map[string]*mcp.Toolset{},
	}
	var problems []string
	for _, p := range c.allow {
		pat, err := parsePattern(p)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		b.allow = append(b.allow, pat)
	}
	for _, cfg := range c.servers {
		ts, err := mcp.New(cfg, b.optionsFor(Target{Name: cfg.ServerName(), URL: cfg.URL})...)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		name := ts.Name()
		if _, dup := b.named[name]; dup {
			problems = append(problems, fmt.Sprintf("two servers are named %q", name))
			_ = ts.Close()
			continue
		}
		b.order = append(b.order, name)
		b.named[name] = ts
		b.configs[name] = cfg
	}
	if len(problems) > 0 {
		_ = b.Close()
		return nil, fmt.Errorf("%w: %s", ErrInvalidBroker, strings.Join(problems, "; "))
	}
	b.tools = b.buildTools()
	return b, nil
}

// Name returns the toolset's name.
func (b *Broker) Name() string { return b.name }

// Tools returns the four broker tools.
func (b *Broker) Tools(context.Context) ([]tool.Tool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, mcp.ErrClosed
	}
	return slices.Clone(b.tools), nil
}

// Close closes every toolset the broker opened. It is idempotent.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	sets := slices.Collect(maps.Values(b.named))
	sets = append(sets, slices.Collect(maps.Values(b.adHoc))...)
	b.adHoc = nil
	b.mu.Unlock()
	var errs []error
	for _, ts := range sets {
		errs = append(errs, ts.Close())
	}
	return errors.Join(errs...)
}

// resolve returns the toolset for a server name or an allowed URL.
func (b *Broker) resolve(server string) (*mcp.Toolset, *tool.Result) {
	server = strings.TrimSpace(server)
	if ts, ok := b.named[server]; ok {
		return ts, nil
	}
	if !strings.Contains(server, "://") {
		r := tool.ErrorResult(CodeUnknownServer, b.unknownServer(server))
		return nil, &r
	}
	u, err := b.allow.check(server)
	if err != nil {
		r := tool.ErrorResult(CodeNotAllowed, err)
		return nil, &r
	}
	key := u.String()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		r := tool.ErrorResult(mcp.CodeUnavailable, mcp.ErrClosed)
		return nil, &r
	}
	if ts, ok := b.adHoc[key]; ok {
		return ts, nil
	}
	if len(b.adHoc) >= b.maxAdHoc {
		r := tool.Errorf("broker: already connected to %d ad-hoc servers, the most allowed; use one of them or a named server", len(b.adHoc))
		return nil, &r
	}
	// Every request to the server, each redirect's included, must match
	// the allow-list too: the check comes last, so no option removes it.
	opts := append(b.optionsFor(Target{Name: key, URL: key, AdHoc: true}), mcp.WithURLCheck(func(u *url.URL) error {
		_, err := b.allow.check(u.String())
		return err
	}))
	ts, err := mcp.New(mcp.Config{Name: key, URL: key}, opts...)
	if err != nil {
		r := tool.ErrorResult(CodeNotAllowed, err)
		return nil, &r
	}
	b.adHoc[key] = ts
	return ts, nil
}

// optionsFor returns the options of the toolset for t, in a slice of its
// own.
func (b *Broker) optionsFor(t Target) []mcp.Option {
	opts := slices.Clone(b.tsOpts)
	if b.targetFn == nil {
		return opts
	}
	return append(opts, b.targetFn(t)...)
}

// unknownServer is the error for a name that is no named server.
func (b *Broker) unknownServer(name string) error {
	var msg strings.Builder
	fmt.Fprintf(&msg, "broker: no server named %s", quote(name))
	if s := tool.Suggest(name, b.order, 3); len(s) > 0 {
		fmt.Fprintf(&msg, "; did you mean %s?", quoteAll(s))
	}
	if len(b.order) > 0 {
		fmt.Fprintf(&msg, " Named servers: %s.", quoteAll(b.order))
	}
	if len(b.allow) > 0 {
		fmt.Fprintf(&msg, " Ad-hoc URLs matching %s may be used too.", quoteAll(b.allow.entries()))
	}
	return errors.New(msg.String())
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// remoteTools lists a server's tools.
func (b *Broker) remoteTools(ctx context.Context, server string) ([]tool.Tool, *tool.Result) {
	_, tools, fail := b.serverTools(ctx, server, true)
	return tools, fail
}

// serverTools lists a server's tools and returns its toolset too; handle
// says whether a failure goes to the error handler.
func (b *Broker) serverTools(ctx context.Context, server string, handle bool) (*mcp.Toolset, []tool.Tool, *tool.Result) {
	ts, fail := b.resolve(server)
	if fail != nil {
		return nil, nil, fail
	}
	tools, err := ts.Tools(ctx)
	if err != nil {
		if _, ok := errors.AsType[*mcp.CallError](err); !ok && errors.Is(err, mcp.ErrConnect) {
			// The toolset never connected: it does not hold a place among
			// the ad-hoc servers.
			b.forgetAdHoc(ts)
		}
		code := mcp.CodeUnavailable
		switch {
		case errors.Is(err, ErrNotAllowed):
			code = CodeNotAllowed // a redirect off the allow-list
		case errors.Is(err, mcp.ErrURLRefused), errors.Is(err, mcp.ErrHeaderRefused):
			code = mcp.CodeRefused
		}
		if h := b.handleError(ctx, ts, err, handle); h != nil {
			err = h
		}
		r := tool.ErrorResult(code, err)
		return ts, nil, &r
	}
	return ts, tools, nil
}

// handleError returns what the error handler reports in place of err, an
// error met talking to the server of ts: nil to keep err (always, without
// a handler).
func (b *Broker) handleError(ctx context.Context, ts *mcp.Toolset, err error, handle bool) error {
	if b.onError == nil || err == nil || !handle {
		return nil
	}
	t := Target{Name: ts.Name(), URL: ts.Name(), AdHoc: true}
	if named, ok := b.named[ts.Name()]; ok && named == ts {
		t = Target{Name: ts.Name(), URL: b.configs[ts.Name()].URL}
	}
	return b.onError(ctx, t, err)
}

// forgetAdHoc drops and closes ts if it is an ad-hoc server's toolset.
func (b *Broker) forgetAdHoc(ts *mcp.Toolset) {
	b.mu.Lock()
	found := false
	for key, x := range b.adHoc {
		if x == ts {
			delete(b.adHoc, key)
			found = true
		}
	}
	b.mu.Unlock()
	if found {
		_ = ts.Close()
	}
}

// lookup finds the named tool among tools, or explains which exist.
func lookup(tools []tool.Tool, server, name string) (tool.Tool, *tool.Result) {
	all := make([]string, len(tools))
	for i, t := range tools {
		all[i] = tool.Name(t)
		if all[i] == name {
			return t, nil
		}
	}
	// The name comes from the model: the answer quotes its beginning.
	r := tool.UnknownTool(textcut.Clip(name, maxQuoted, "…"), all)
	r.Content = append([]model.Part{model.TextPart(fmt.Sprintf("Server %s has no tool %s.", quoteURL(server), quote(name)))}, r.Content...)
	return nil, &r
}

// --- the four tools ---

type noArgs struct{}

type serverArgs struct {
	Server string `json:"server" jsonschema:"description=A server name from mcp_list_servers or an allowed MCP URL,minLength=1"`
}

type describeArgs struct {
	Server string   `json:"server" jsonschema:"description=A server name from mcp_list_servers or an allowed MCP URL,minLength=1"`
	Tools  []string `json:"tools" jsonschema:"description=Names of the tools to describe (from mcp_list_tools),minItems=1"`
}

type callArgs struct {
	Server    string          `json:"server" jsonschema:"description=A server name from mcp_list_servers or an allowed MCP URL,minLength=1"`
	Tool      string          `json:"tool" jsonschema:"description=The tool's name on that server,minLength=1"`
	Arguments json.RawMessage `json:"arguments,omitempty" jsonschema:"description=The tool's arguments: an object matching its input schema (see mcp_describe_tools)"`
}

// ServerInfo is one entry of mcp_list_servers.
type ServerInfo struct {
	Name        string        `json:"name"`
	Transport   mcp.Transport `json:"transport"`
	Description string        `json:"description,omitempty"`
}

// ServerList is the answer of mcp_list_servers.
type ServerList struct {
	Servers []ServerInfo `json:"servers"`
	// AllowedURLs are the allow-list entries for ad-hoc servers.
	AllowedURLs []string `json:"allowed_urls,omitempty"`
}

// ToolSummary is one entry of mcp_list_tools.
type ToolSummary struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"read_only,omitempty"`
	Destructive bool   `json:"destructive,omitempty"`
}

// ToolList is the answer of mcp_list_tools.
type ToolList struct {
	Server string        `json:"server"`
	Tools  []ToolSummary `json:"tools"`
}

// ToolDescription is one entry of mcp_describe_tools.
type ToolDescription struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Metadata     tool.Metadata   `json:"metadata,omitzero"`
}

// UnknownTool is a requested tool the server does not have.
type UnknownTool struct {
	// Name is the name asked for, cut to its first 64 bytes.
	Name        string   `json:"name"`
	Suggestions []string `json:"suggestions,omitempty"`
}

// ToolDescriptions is the answer of mcp_describe_tools.
type ToolDescriptions struct {
	Server  string            `json:"server"`
	Tools   []ToolDescription `json:"tools"`
	Unknown []UnknownTool     `json:"unknown,omitempty"`
}

// summaryLength caps the descriptions mcp_list_tools shows.
const summaryLength = 200

// summary shortens a description to its first line, at most summaryLength
// bytes (cut at a rune boundary).
func summary(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return textcut.Clip(s, summaryLength, "…")
}

func (b *Broker) buildTools() []tool.Tool {
	readOnly := tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true, OpenWorld: len(b.allow) > 0})
	listServers := tool.MustFunc(ListServersTool,
		"List the MCP servers whose tools can be used, with what each offers. Start here.",
		func(context.Context, noArgs) (ServerList, error) {
			out := ServerList{Servers: []ServerInfo{}, AllowedURLs: b.allow.entries()}
			for _, name := range b.order {
				cfg := b.configs[name]
				t := cfg.Transport
				if t == "" {
					if cfg.Command != "" {
						t = mcp.TransportStdio
					} else {
						t = mcp.TransportStreamableHTTP
					}
				}
				out.Servers = append(out.Servers, ServerInfo{Name: name, Transport: t, Description: cfg.Description})
			}
			return out, nil
		}, readOnly)

	listTools := tool.MustFunc(ListToolsTool,
		"List the tools of one MCP server with short descriptions. Then use mcp_describe_tools for the schemas of the tools you need.",
		func(ctx context.Context, in serverArgs) (tool.Result, error) {
			tools, fail := b.remoteTools(ctx, in.Server)
			if fail != nil {
				return *fail, nil
			}
			out := ToolList{Server: in.Server, Tools: make([]ToolSummary, 0, len(tools))}
			for _, t := range tools {
				m := tool.MetadataOf(t)
				out.Tools = append(out.Tools, ToolSummary{Name: tool.Name(t), Description: summary(t.Definition().Description),
					ReadOnly: m.ReadOnly, Destructive: m.Destructive})
			}
			return tool.JSON(out), nil
		}, readOnly)

	describe := tool.MustFunc(DescribeToolsTool,
		"Show the full description and input schema of selected tools of one MCP server, to prepare a call with mcp_call_tool.",
		func(ctx context.Context, in describeArgs) (tool.Result, error) {
			tools, fail := b.remoteTools(ctx, in.Server)
			if fail != nil {
				return *fail, nil
			}
			byName := map[string]tool.Tool{}
			all := make([]string, len(tools))
			for i, t := range tools {
				all[i] = tool.Name(t)
				byName[all[i]] = t
			}
			out := ToolDescriptions{Server: in.Server, Tools: []ToolDescription{}}
			for _, name := range in.Tools {
				t, ok := byName[name]
				if !ok {
					out.Unknown = append(out.Unknown, UnknownTool{Name: textcut.Clip(name, maxQuoted, "…"), Suggestions: tool.Suggest(name, all, 3)})
					continue
				}
				def := t.Definition()
				out.Tools = append(out.Tools, ToolDescription{Name: def.Name, Description: def.Description,
					InputSchema: def.InputSchema, OutputSchema: def.OutputSchema, Metadata: tool.MetadataOf(t)})
			}
			return tool.JSON(out), nil
		}, readOnly)

	call := tool.MustFunc(CallToolTool,
		"Call one tool of an MCP server. Put the tool's own arguments in \"arguments\", as described by mcp_describe_tools.",
		func(ctx context.Context, in callArgs) (tool.Result, error) {
			ts, tools, fail := b.serverTools(ctx, in.Server, true)
			if fail != nil {
				return *fail, nil
			}
			t, fail := lookup(tools, in.Server, in.Tool)
			if fail != nil {
				return *fail, nil
			}
			call := model.ToolCall{ID: tool.CallID(ctx), Name: in.Tool, Arguments: innerArguments(in.Arguments)}
			var (
				iv    tool.Invoker
				frame *callctx.Frame
			)
			if b.policy != nil {
				// The policy judges the remote tool that is about to run,
				// on every attempt: nothing before this point knows it. It
				// judges the arguments the tool runs with (coerced toward
				// the remote tool's schema), which the tool is then
				// invoked with, in the frame that records them as final
				// and authorized.
				frame = new(callctx.Frame)
				prepared, res, ok := frameOps.Prepare(&iv, frame, t, call)
				if !ok {
					return res, nil // arguments the remote tool would refuse: nothing is sent
				}
				if denied, ok := tool.Authorize(ctx, t, prepared, b.policy); !ok {
					return denied, nil
				}
				frame.MarkAuthorized(t, prepared)
				call = prepared
			}
			r := frameOps.Invoke(&iv, ctx, frame, t, call)
			// The server's failures, not the arguments the broker refused
			// before sending them, nor a pause of the run (a server's
			// question the run waits on).
			if r.IsError && r.Err != nil && r.ErrorCode != tool.CodeInvalidArguments && !errors.Is(r.Err, graph.ErrInterrupted) {
				if err := b.handleError(ctx, ts, r.Err, true); err != nil {
					// The same answer (status, details, content), led by
					// the error the handler reports.
					r.Err, r.Content = err, append([]model.Part{model.TextPart(err.Error())}, r.Content...)
				}
			}
			return r, nil
		},
		tool.WithMetadata(tool.Metadata{OpenWorld: true}))
	return []tool.Tool{listServers, listTools, describe, call}
}

// innerArguments returns the remote tool's arguments: {} when the model left
// them out, and the object a JSON string holds when the model sent the
// object as a string.
func innerArguments(raw json.RawMessage) json.RawMessage {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil && json.Valid([]byte(s)) {
			return json.RawMessage(s)
		}
	}
	return raw
}
