package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/tool"
)

// Toolset is a tool.Toolset over one MCP server: the server's tools become
// Trellis tools. It opens a session on Init or on first use, re-lists the
// tools after the server says they changed, and opens a new session when the
// old one is lost (see WithReconnect).
//
// Requests the server sends while serving a call (elicitation, sampling,
// log messages) are handled with the values of the call's context when they
// provably belong to it: on protocol 2026-07-28 the go-sdk handles them with
// the call's context; on earlier versions a request must echo the call's
// token in its _meta (as Trellis servers do, see NewServer). Any other
// request is handled with no call's values (no run's, no user's): a toolset
// shared by several users never hands one user's request to another's call.
// WithSingleUser, for a toolset that serves one user, gives a request that
// echoes no token to the only call in flight.
//
// Whoever creates a Toolset closes it; Close ends the session and, for stdio,
// the server's process. A Toolset is safe for concurrent use.
type Toolset struct {
	cfg    Config
	name   string
	o      options
	client *sdk.Client
	http   *http.Client
	owned  *http.Transport // closed by Close, when the toolset made it

	connecting chan struct{}      // one slot: one connection attempt at a time
	done       chan struct{}      // closed by Close
	abort      context.CancelFunc // ends the connection attempt in progress

	mu      sync.Mutex
	sess    *session
	opened  int // sessions opened so far
	closed  bool
	tools   []tool.Tool
	changes uint64               // bumped by list_changed and by new sessions
	listed  uint64               // value of changes when tools was listed
	calls   map[string]*inflight // tool calls in flight, by token

	wg sync.WaitGroup // session watchers and change hooks
}

// session is one MCP session and what belongs to it.
type session struct {
	cs     *sdk.ClientSession
	proc   *process // stdio only
	cancel context.CancelFunc
	dead   chan struct{} // closed when the session ended
	once   sync.Once
}

// isDead reports whether the session has ended.
func (s *session) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// close ends the session and, for stdio, reaps its process and whatever it
// left in its process group.
func (s *session) close() error {
	var err error
	s.once.Do(func() {
		err = s.cs.Close()
		if _, ok := errors.AsType[*exec.ExitError](err); ok {
			// The server exited with a status or was signalled to end: that
			// is how a stdio session ends, not a failure to close it.
			err = nil
		}
		s.cancel()
		if s.proc != nil {
			if kerr := killGroup(s.proc.pid()); kerr != nil && err == nil {
				err = kerr
			}
		}
	})
	return err
}

// New returns a toolset over the server cfg describes. It checks cfg
// (ErrInvalidConfig) but does not connect: call Init to connect now and fail
// fast, or let the first Tools or call connect. Nil options are ignored.
func New(cfg Config, opts ...Option) (*Toolset, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.transportFunc == nil {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	if o.oauth != nil {
		h, err := oauthFor(cfg, &o)
		if err != nil {
			return nil, fmt.Errorf("%w: server %s: %w", ErrInvalidConfig, quote(cfg.ServerName()), err)
		}
		o.oauthHandler = h
	}
	ts := &Toolset{
		cfg:        cfg,
		name:       cfg.ServerName(),
		o:          o,
		connecting: make(chan struct{}, 1),
		done:       make(chan struct{}),
	}
	ts.client = sdk.NewClient(&sdk.Implementation{Name: o.clientName, Version: o.clientVersion}, ts.clientOptions())
	if len(cfg.Roots) > 0 {
		roots := make([]*sdk.Root, len(cfg.Roots))
		for i, r := range cfg.Roots {
			roots[i] = &sdk.Root{URI: r.URI, Name: r.Name}
		}
		ts.client.AddRoots(roots...)
	}
	if t := cfg.transport(); (t == TransportStreamableHTTP || t == TransportSSE) && o.transportFunc == nil {
		var err error
		if ts.http, ts.owned, err = newHTTPClient(cfg, &o); err != nil {
			return nil, fmt.Errorf("%w: server %s: %w", ErrInvalidConfig, quote(ts.name), err)
		}
	}
	return ts, nil
}

// Name returns the server's name (Config.Name, or one derived from the
// command or URL).
func (ts *Toolset) Name() string { return ts.name }

// Init connects to the server, performs the handshake and lists the tools,
// and reports the first failure: a command that cannot be started, a refused
// connection, a failed handshake (a *ConnectError matching ErrConnect). It
// does not retry. Calling Init on a connected toolset only lists the tools
// again.
func (ts *Toolset) Init(ctx context.Context) error {
	ts.mu.Lock()
	s, closed := ts.sess, ts.closed
	ts.mu.Unlock()
	if closed {
		return ts.closedErr("init")
	}
	if s == nil || s.isDead() {
		var err error
		if s, err = ts.connect(ctx); err != nil {
			if errors.Is(err, ErrClosed) {
				return ts.closedErr("init")
			}
			return err
		}
	}
	if _, err := ts.list(ctx, s); err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &ConnectError{Server: ts.name, Transport: ts.transportName(), Stage: "list tools", Err: err}
	}
	return nil
}

// Tools returns the server's tools (after the toolset's filters) as Trellis
// tools, in the server's order; a name the server lists more than once
// becomes one tool, the first listed. The list is fetched when the toolset
// connects and again after the server says it changed or a new session was
// opened; otherwise the last list is returned. Each tool forwards its calls
// to the server. Errors name the server.
func (ts *Toolset) Tools(ctx context.Context) ([]tool.Tool, error) {
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		return nil, ts.closedErr("list tools")
	}
	if s := ts.sess; s != nil && !s.isDead() && ts.listed == ts.changes && ts.tools != nil {
		tools := slices.Clone(ts.tools)
		ts.mu.Unlock()
		return tools, nil
	}
	ts.mu.Unlock()
	var tools []tool.Tool
	err := ts.do(ctx, "list tools", func(ctx context.Context, s *session) error {
		var err error
		tools, err = ts.list(ctx, s)
		return err
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(tools), nil
}

// closedErr is the error of a request made on the closed toolset: it
// matches ErrClosed and names the server and the request.
func (ts *Toolset) closedErr(method string) error {
	return fmt.Errorf("mcp: server %s: %s: %w", quote(ts.name), showMethod(method), ErrClosed)
}

// Close ends the session (for stdio: closes the server's input, waits for it
// to exit, signals it if it does not, and ends what it left in its process
// group) and releases the toolset's connections. Calls in progress fail;
// later calls fail with an error that matches ErrClosed and names the
// server. Close is idempotent.
func (ts *Toolset) Close() error {
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		return nil
	}
	ts.closed = true
	close(ts.done)
	s := ts.sess
	ts.sess = nil
	if ts.abort != nil {
		ts.abort()
	}
	ts.mu.Unlock()
	var err error
	if s != nil {
		err = s.close()
	}
	// Wait for a connection attempt in progress to give up its session.
	ts.connecting <- struct{}{}
	ts.wg.Wait()
	if ts.owned != nil {
		ts.owned.CloseIdleConnections()
	}
	if err != nil {
		return fmt.Errorf("mcp: closing server %s: %w", quote(ts.name), err)
	}
	return nil
}

// transportName returns the transport shown in errors.
func (ts *Toolset) transportName() Transport {
	if ts.o.transportFunc != nil && ts.cfg.transport() == "" {
		return "custom"
	}
	return ts.cfg.transport()
}

// toolsChanged handles notifications/tools/list_changed.
func (ts *Toolset) toolsChanged(context.Context, *sdk.ToolListChangedRequest) {
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		return
	}
	ts.changes++
	hook := ts.o.onToolsChanged
	if hook != nil {
		ts.wg.Add(1)
	}
	ts.mu.Unlock()
	if hook != nil {
		go func() {
			defer ts.wg.Done()
			hook()
		}()
	}
}

// connect opens a new session, unless another caller opened a live one
// while this one waited for its turn.
func (ts *Toolset) connect(ctx context.Context) (*session, error) {
	select {
	case ts.connecting <- struct{}{}:
	case <-ts.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, fmt.Errorf("mcp: connecting to server %s: %w", quote(ts.name), ctx.Err())
	}
	defer func() { <-ts.connecting }()

	// The session outlives this call: its context keeps ctx's values (for
	// header functions) but not its cancellation, except while connecting.
	// Close cancels it through ts.abort, set together with the check of
	// ts.closed so that a Close in between cannot miss the attempt.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		cancel()
		return nil, ErrClosed
	}
	if s := ts.sess; s != nil && !s.isDead() {
		ts.mu.Unlock()
		cancel()
		return s, nil
	}
	old := ts.sess
	ts.sess = nil
	ts.abort = cancel
	ts.mu.Unlock()
	defer func() {
		ts.mu.Lock()
		ts.abort = nil
		ts.mu.Unlock()
	}()
	if old != nil {
		_ = old.close()
	}

	cerr := func(stage string, p *process, err error) error {
		ce := &ConnectError{Server: ts.name, Transport: ts.transportName(), Stage: stage, Err: err}
		if p != nil {
			ce.Stderr = p.stderr.String()
		}
		return ce
	}

	stop := context.AfterFunc(ctx, cancel)
	timer := startConnectClock(ts.cfg.connectTimeout(), cancel)
	sctx = context.WithValue(sctx, connectClockKey{}, timer)
	var (
		t    sdk.Transport
		proc *process
		err  error
	)
	if ts.o.transportFunc != nil {
		t, err = ts.o.transportFunc(sctx)
	} else {
		t, proc, err = newTransport(ts.cfg, &ts.o, ts.http)
	}
	if err != nil {
		stop()
		timer.stop()
		cancel()
		return nil, cerr("start", nil, err)
	}
	cs, err := ts.client.Connect(sctx, t, nil)
	stopped := stop()
	timerStopped := timer.stop()
	if err != nil {
		cancel()
		if proc != nil {
			// Connect closed what it started; reap the rest of the group.
			_ = killGroup(proc.pid())
		}
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("mcp: connecting to server %s: %w", quote(ts.name), ctx.Err())
		case !timerStopped:
			err = fmt.Errorf("no answer within %v: %w", ts.cfg.connectTimeout(), err)
		}
		stage := "connect"
		if proc != nil && proc.pid() == 0 {
			stage = "start"
		}
		return nil, cerr(stage, proc, err)
	}
	if !stopped || !timerStopped {
		// ctx ended or the time ran out just as the handshake finished.
		_ = cs.Close()
		cancel()
		if proc != nil {
			_ = killGroup(proc.pid())
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mcp: connecting to server %s: %w", quote(ts.name), ctx.Err())
		}
		return nil, cerr("connect", proc, fmt.Errorf("no answer within %v", ts.cfg.connectTimeout()))
	}

	if lvl := ts.o.logLevel; lvl != "" {
		if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil && ir.Capabilities.Logging != nil {
			// Best effort: a server that refuses the level still serves.
			lctx, lcancel := context.WithTimeout(sctx, ts.cfg.connectTimeout())
			_ = cs.SetLoggingLevel(lctx, &sdk.SetLoggingLevelParams{Level: sdk.LoggingLevel(lvl)})
			lcancel()
		}
	}
	s := &session{cs: cs, proc: proc, cancel: cancel, dead: make(chan struct{})}
	ts.mu.Lock()
	if ts.closed {
		ts.mu.Unlock()
		_ = s.close()
		return nil, ErrClosed
	}
	ts.sess = s
	ts.opened++
	ts.changes++
	ts.wg.Add(1)
	ts.mu.Unlock()
	go func() {
		defer ts.wg.Done()
		_ = cs.Wait()
		close(s.dead)
	}()
	return s, nil
}

// connectClock is the timeout of one connection attempt. It stands still
// while a person signs in (see pauseConnectClock): the time spent at the
// authorization server's page is theirs, not the server's.
type connectClock struct {
	d      time.Duration
	mu     sync.Mutex
	timer  *time.Timer
	paused int  // sign-ins in progress
	fired  bool // the time ran out
	ended  bool // the attempt is over
}

// connectClockKey is the context key of the attempt's connectClock.
type connectClockKey struct{}

// startConnectClock calls expire after d, unless stopped first.
func startConnectClock(d time.Duration, expire func()) *connectClock {
	c := &connectClock{d: d}
	c.timer = time.AfterFunc(d, func() {
		c.mu.Lock()
		c.fired = true
		c.mu.Unlock()
		expire()
	})
	return c
}

// stop ends the attempt's clock and reports whether the time had not run
// out.
func (c *connectClock) stop() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	c.timer.Stop()
	return !c.fired
}

// pauseConnectClock stops the clock of the connection attempt ctx belongs
// to, if any, until the function it returns is called; the clock then
// starts again from its full duration.
func pauseConnectClock(ctx context.Context) (resume func()) {
	c, ok := ctx.Value(connectClockKey{}).(*connectClock)
	if !ok {
		return func() {}
	}
	c.mu.Lock()
	if !c.ended && !c.fired && c.paused == 0 {
		c.timer.Stop()
	}
	c.paused++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.paused--
		if !c.ended && !c.fired && c.paused == 0 {
			c.timer.Reset(c.d)
		}
	}
}

// drop forgets s as the current session and closes it.
func (ts *Toolset) drop(s *session) {
	ts.mu.Lock()
	if ts.sess == s {
		ts.sess = nil
	}
	ts.mu.Unlock()
	_ = s.close()
}

// list fetches the server's tools, every page of them, over s, and returns
// those the filters keep. A name listed twice is kept once, the first time.
func (ts *Toolset) list(ctx context.Context, s *session) ([]tool.Tool, error) {
	ts.mu.Lock()
	seen := ts.changes
	ts.mu.Unlock()
	tools := []tool.Tool{}
	names := map[string]bool{}
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if !ts.keep(t) || names[t.Name] {
			continue
		}
		names[t.Name] = true
		rt, err := newRemoteTool(ts, t)
		if err != nil {
			return nil, err
		}
		tools = append(tools, rt)
	}
	tools = ts.withResourceTools(tools, s)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.sess == s {
		ts.tools = tools
		ts.listed = seen
	}
	return tools, nil
}

// keep reports whether the toolset's filters keep t.
func (ts *Toolset) keep(t *sdk.Tool) bool {
	if t == nil || t.Name == "" {
		return false
	}
	if ts.o.include != nil && !ts.o.include[t.Name] {
		return false
	}
	if ts.o.exclude[t.Name] {
		return false
	}
	return ts.o.filter == nil || ts.o.filter(t)
}

// do runs fn on the current session, opening one when there is none or the
// current one is lost, within the reconnection budget. An error that means
// the session or connection was lost is returned as a *CallError; every
// error names the server and the request.
func (ts *Toolset) do(ctx context.Context, method string, fn func(context.Context, *session) error) error {
	reconnects := 0
	var last error
	for {
		ts.mu.Lock()
		closed, s, opened := ts.closed, ts.sess, ts.opened
		ts.mu.Unlock()
		if closed {
			return ts.closedErr(method)
		}
		if s == nil || s.isDead() {
			if opened > 0 {
				// A reconnection: within the budget, after a wait.
				if reconnects >= ts.o.reconnect {
					if last == nil {
						last = errors.New("the session was lost")
					}
					return &CallError{Server: ts.name, Method: method, Attempts: reconnects + 1, Err: last,
						lost: true, exhausted: true}
				}
				reconnects++
				if err := pause.Sleep(ctx, ts.backoff(reconnects)); err != nil {
					return fmt.Errorf("mcp: server %s: %s: %w", quote(ts.name), showMethod(method), err)
				}
			}
			var err error
			if s, err = ts.connect(ctx); err != nil {
				if errors.Is(err, ErrClosed) {
					return ts.closedErr(method)
				}
				if ctx.Err() != nil || opened == 0 || errors.Is(err, ErrURLRefused) {
					return err
				}
				last = err
				continue
			}
		}
		err := fn(ctx, s)
		if err == nil {
			return nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("mcp: server %s: %s: %w", quote(ts.name), showMethod(method), cerr)
		}
		if !lost(err, s) || ts.answers(ctx, err, s) {
			// The server answered (a JSON-RPC error, a result this client
			// cannot read): a new session would get the same answer.
			return fmt.Errorf("mcp: server %s: %s: %w", quote(ts.name), showMethod(method), err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("mcp: server %s: %s: %w", quote(ts.name), showMethod(method), cerr)
		}
		last = err
		ts.drop(s)
		ts.mu.Lock()
		closed = ts.closed
		ts.mu.Unlock()
		if closed {
			return ts.closedErr(method)
		}
		if ts.o.reconnect == 0 {
			return &CallError{Server: ts.name, Method: method, Attempts: 1, Err: err, lost: true}
		}
	}
}

// backoff returns the wait before the n-th reconnection (1-based).
func (ts *Toolset) backoff(n int) time.Duration {
	d := ts.o.reconnectDelay
	for i := 1; i < n && d < maxReconnectDelay; i++ {
		d *= 2
	}
	return min(d, maxReconnectDelay)
}

// answers reports whether s still answers requests after one failed on it
// with err, an error that did not come as an answer from the server. It asks
// the server for a ping when err could be an answer the client could not
// read (a result it cannot decode): then the session is not lost, and a new
// one would only get the same answer, after running the request again.
func (ts *Toolset) answers(ctx context.Context, err error, s *session) bool {
	if s == nil || s.isDead() || errors.Is(err, ErrConnect) ||
		errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) {
		return false
	}
	if _, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return false // refused by the transport, or the session is unknown
	}
	pctx, cancel := context.WithTimeout(ctx, ts.cfg.connectTimeout())
	defer cancel()
	perr := s.cs.Ping(pctx, nil)
	return perr == nil || !lost(perr, s)
}

// errRejected matches the go-sdk's "rejected by transport" error: the request
// never reached the server, or the server's HTTP layer refused it.
var errRejected = &jsonrpc.Error{Code: -32005}

// lost reports whether err means that the session or its connection is gone,
// so that a new session may succeed where s failed. An answer from the server
// (a JSON-RPC error such as an unknown tool) is not, unless it says that the
// server does not know the session.
func lost(err error, s *session) bool {
	if errors.Is(err, ErrHeaderRefused) || errors.Is(err, ErrURLRefused) {
		return false
	}
	if errors.Is(err, ErrConnect) || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) {
		return true
	}
	if s != nil && s.isDead() {
		return true
	}
	we, ok := errors.AsType[*jsonrpc.Error](err)
	if !ok {
		return true // no answer from the server: the transport failed
	}
	if errors.Is(err, errRejected) {
		return true
	}
	return strings.Contains(strings.ToLower(we.Message), "session")
}
