// Package mcp connects Trellis tools and the Model Context Protocol, both
// ways.
//
// # MCP servers as Trellis toolsets
//
// New returns a Toolset (a tool.Toolset) over one MCP server, reached through
// one of three transports, chosen by the Config:
//
//   - stdio: a command the toolset runs, speaking MCP on its standard input
//     and output (Config.Command, Args, Env, Dir);
//   - streamable HTTP: a URL (Config.URL);
//   - SSE, the older HTTP transport: a URL with Transport TransportSSE.
//
// HTTP requests carry Config.Headers, and a HeaderFunc (WithHeaderFunc) may
// add headers from each request's context, such as a token for the user on
// whose behalf a tool is called. Both go to the origin of Config.URL alone:
// the toolset follows redirects within that origin and refuses those that
// leave it (ErrURLRefused), unless WithCrossOriginRedirects allows them, and
// then sends no credentials there.
//
// WithOAuth authorizes the toolset to a streamable HTTP server with OAuth
// 2.1, as the MCP authorization spec describes: discovery from the
// server's 401, the authorization code grant with PKCE (the application's
// Authorizer takes the user through the browser step), refresh, scope
// step-up, or the client_credentials grant or cross-app access; tokens are
// kept in a TokenStore and go to the server's origin alone.
//
// Init connects, performs the handshake and lists the tools, and fails fast
// with a *ConnectError (ErrConnect) that says what failed: a command that
// cannot be started, a refused connection, a failed handshake (quoting what
// a stdio server wrote to its standard error). Without Init the toolset
// connects on first use.
//
// Each server tool becomes a Trellis tool: its definition carries the
// server's description and input and output schemas (an input schema that
// is not an object schema is made one, as models require); its metadata
// carries the server's explicit hints (readOnlyHint, destructiveHint,
// openWorldHint; see Metadata); its calls forward the raw JSON arguments.
// Results come back as content parts (see Result): text, images, resource
// links, embedded resources and structured content. A tool that reports an
// error (isError) gives an error result with the server's text; a call that
// gets no answer gives an error result whose Err (a *CallError) lets retry
// and circuit breaker middleware classify it. Neither panics nor aborts a
// run.
//
// WithInclude, WithExclude and WithFilter choose which of the server's tools
// become Trellis tools. The list is read in full (every page) when the toolset
// connects and read again after the server announces a change
// (notifications/tools/list_changed; see WithToolsChanged) or after a new
// session.
//
// When the session is lost (the server restarted, the stdio process died,
// the server forgot an expired session, the connection was refused or
// reset), the request that noticed opens a new session, relaunching the
// command for stdio, within a bounded number of attempts (WithReconnect);
// when they run out its error matches ErrReconnectExhausted.
//
// Whoever creates a Toolset closes it. Close ends the session; for stdio it
// closes the server's input, waits for the process to exit (signalling it if
// it does not) and reaps it, together with anything left in its process
// group, so no child process outlives the toolset.
//
// # Trellis toolsets as MCP servers
//
// NewServer exposes any tool.Toolset as an MCP server (a go-sdk server), so
// other MCP clients can use its tools: over stdio (Server.Run with a stdio
// transport), streamable HTTP (Server.Handler) or SSE (Server.SSEHandler).
// Tools keep their schemas; metadata becomes annotations; calls run through a
// tool.Invoker, so arguments are coerced and validated and failures become
// results with isError set. Server.Refresh publishes a changed tool list to
// connected clients. The HTTP handlers refuse requests from web pages of
// origins not allowed with WithAllowedOrigins (the Origin header), which
// keeps pages the user opens, DNS rebinding included, from calling a local
// server; they authenticate no one, so authentication goes in front of them
// as http.Handler middleware (docs/mcp.md shows the go-sdk's
// auth.RequireBearerToken).
//
// A server's requests during a tool call are handled with the call's
// context values, so they reach the graph run the call belongs to. By
// default a server's question for the user (elicitation) pauses the run
// with graph.Interrupt (InterruptElicitation; WithElicitation sets another
// handler), and the call is made again when the run is resumed with the
// answer. WithSampling(SampleWith(m, policy)) answers sampling requests
// with a model of the application, after a policy that allows, denies or
// pauses the run to ask. Log messages go to slog (WithLogger) and, as
// "mcp.log" custom events, into the run's stream. Config.Roots are the
// client's roots. Resources, ReadResource, ResourceMessage, Prompts,
// GetPrompt and PromptInstructions read what a server offers besides
// tools; WithResourceTools offers resources to the model as two tools.
//
// A served tool reaches the client that called it through its context:
// tool.Log, tool.Sample, tool.Elicit and tool.ReportProgress (with a Total)
// become MCP log messages, sampling and elicitation requests and progress
// notifications; without an MCP caller they fail with tool.ErrNoPeer. On
// protocol 2026-07-28 sampling and elicitation travel as multi round-trip
// requests (SEP-2322): the call's result asks, and the tool runs again with
// the answers. CloseStream frees the HTTP stream of a long call, for the
// client to resume.
// WithResources, WithResourceTemplates, WithPrompts and WithCompleter serve
// resources, templates (with subscriptions), prompts and completions from Go
// values. Audio and embedded resources travel as model.PartAudio and
// model.PartResource both ways.
//
// # Large tool surfaces
//
// The broker sub-package offers four tools that let a model discover and call
// the tools of many MCP servers on demand, instead of listing every tool up
// front.
package mcp
