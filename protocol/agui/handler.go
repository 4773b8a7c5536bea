package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/sse"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/tool"
)

// ThreadPrefix prefixes the checkpointer thread of an AG-UI thread served
// by a handler without owners: the conversation of threadId "t1" is
// thread "agui:t1". With WithOwner, threads are the owner's
// (OwnedThreadPrefix, ThreadKey).
const ThreadPrefix = "agui:"

// DefaultMaxRequestBytes is the largest request body a handler reads
// unless WithMaxRequestBytes says otherwise.
const DefaultMaxRequestBytes = 8 << 20

// DefaultKeepAlive is how often a handler writes an SSE comment while a
// run is quiet, unless WithKeepAlive says otherwise.
const DefaultKeepAlive = 15 * time.Second

// Option configures a Handler.
type Option func(*config)

type config struct {
	runOpts   []graph.RunOption
	maxBody   int64
	keepAlive time.Duration
	errorText func(error) string
	noSnap    bool
	deltas    bool
	interrupt func(graph.PendingInterrupt) Interrupt
	problems  []string
	setState  any // func(context.Context, json.RawMessage, *S) error
	viewState any // func(S) any
	owner     func(*http.Request) (string, error)
}

// WithRunOptions adds options to every run: a logger, a step limit, a
// durability mode.
func WithRunOptions(opts ...graph.RunOption) Option {
	return func(c *config) { c.runOpts = append(c.runOpts, opts...) }
}

// WithMaxRequestBytes caps the size of a request body (DefaultMaxRequestBytes
// by default); a larger one is refused with 413.
func WithMaxRequestBytes(n int64) Option {
	return func(c *config) {
		if n <= 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxRequestBytes(%d): the cap must be positive", n))
			return
		}
		c.maxBody = n
	}
}

// WithKeepAlive sets how often an SSE comment is written while a run
// sends nothing, so that proxies keep the connection (DefaultKeepAlive by
// default; 0 turns keep-alives off).
func WithKeepAlive(d time.Duration) Option {
	return func(c *config) {
		if d < 0 {
			c.problems = append(c.problems, fmt.Sprintf("WithKeepAlive(%v): the period must not be negative", d))
			return
		}
		c.keepAlive = d
	}
}

// WithErrorText sets how errors are told to the client: a failed run's in
// RUN_ERROR's message, a failed subagent's in SUBAGENT_ERROR's, a failed
// tool call's (tool.Result.Err) in the "error" member of its
// TOOL_CALL_RESULT metadata, and that of a request the handler could not
// start (500). By default the client is told only the kind of failure, in
// a sentence that matches RUN_ERROR's code, and nothing of the error's
// text, which may hold a stack trace, file paths, or the names of
// internals; a failed call's metadata then has its status and error code
// only. fn must not return such things either: for development,
// func(err error) string { return err.Error() } tells all. Whatever fn
// says, a failed call's Details (where a panic's stack is kept) are not
// sent.
func WithErrorText(fn func(err error) string) Option {
	return func(c *config) { c.errorText = fn }
}

// WithoutMessagesSnapshot turns off the MESSAGES_SNAPSHOT a handler sends
// before a run's end, which gives the client the conversation as the agent
// holds it (the IDs of the messages the run wrote, tool results as stored).
func WithoutMessagesSnapshot() Option {
	return func(c *config) { c.noSnap = true }
}

// WithInterrupts sets how the interrupts a run pauses on are described to
// the client (the default describes nodes.AskUser questions, calls of
// nested agents left to the caller, and other interrupts with their
// payload in the metadata). The ID must stay the interrupt's: resume
// entries answer by it.
func WithInterrupts(describe func(graph.PendingInterrupt) Interrupt) Option {
	return func(c *config) { c.interrupt = describe }
}

// WithState sets how the client's state (RunInput.State) is applied to the
// graph state before a new turn runs; without it the client's state is
// ignored. apply's error refuses the request (400). With a checkpointer,
// the request that answers calls of the application's tools brings the
// state those tools changed: the run that resumes the thread applies it
// with the answers (the waiting ToolsNode does, as it adds them), so the
// run goes on from it. A run that resumes other interrupts (a question)
// keeps the paused run's state, as does one whose thread waits for the
// application's tools and for something else at once. S must be the
// handler's state type.
func WithState[S any](apply func(ctx context.Context, in json.RawMessage, s *S) error) Option {
	return func(c *config) { c.setState = apply }
}

// WithStateSnapshots makes the handler send the client a STATE_SNAPSHOT
// of view(state) after every superstep of the run whose view differs from
// the last one sent. view should return what the application's interface
// shows of the state (JSON-encodable). S must be the handler's state type.
func WithStateSnapshots[S any](view func(s S) any) Option {
	return func(c *config) { c.viewState = view }
}

// WithStateDeltas makes the handler send the changes of the state's view
// (WithStateSnapshots) after its first snapshot of a run as STATE_DELTA
// events, JSON Patches (RFC 6902) against the view sent before, rather
// than as whole snapshots: less to send for a large state that changes a
// little at a time.
func WithStateDeltas() Option {
	return func(c *config) { c.deltas = true }
}

// Handler serves a Trellis agent to AG-UI clients: it is an http.Handler
// that runs the agent for each POSTed RunAgentInput and streams the run's
// events as server-sent events. Create it with NewHandler.
type Handler struct {
	cfg    config
	runner runner
}

// runner runs the agent for one request.
type runner interface {
	// prepare checks the input against the thread and returns the run's
	// events and the conversation it starts from; an *InputError refuses
	// the request.
	prepare(ctx context.Context, in *RunInput, modes graph.Mode) (iter.Seq2[graph.Event, error], []model.Message, error)
	// messages returns the conversation of a state, or false when st is
	// not the handler's state.
	messages(st any) ([]model.Message, bool)
	// view returns what WithStateSnapshots shows of st.
	view(st any) (any, bool)
	// checkpointed reports whether threads live in a checkpointer.
	checkpointed() bool
}

// NewHandler returns a handler that runs g, a compiled graph whose state
// holds a conversation (nodes.Chat), for AG-UI clients.
//
// Each request runs one turn. Without a checkpointer the request's
// messages are the whole conversation: the graph runs on them afresh. With
// one, each AG-UI thread is a thread of the checkpointer (ThreadKey: the
// thread ID, under its owner's name with WithOwner): the messages the
// thread does not have yet (by ID) are added to it, and a thread that
// waits is resumed: with the tool messages that answer the calls of the
// application's tools, and with the resume entries that answer its
// interrupts.
//
// The application's tools (RunInput.Tools) are added to the run as
// declaration-only tools (tool.AddTools): their calls end the run, which
// names them in RUN_FINISHED, and the client answers them in its next
// request. Its context entries reach the model through the system prompt
// (tool.AddInstructions). The run's context carries the input (InputFrom).
func NewHandler[S any, PS nodes.ChatState[S]](g *graph.Graph[S], opts ...Option) (*Handler, error) {
	cfg := config{maxBody: DefaultMaxRequestBytes, keepAlive: DefaultKeepAlive}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if g == nil {
		cfg.problems = append(cfg.problems, "the graph is nil")
	}
	r := &graphRunner[S, PS]{g: g, opts: cfg.runOpts}
	if cfg.setState != nil {
		f, ok := cfg.setState.(func(context.Context, json.RawMessage, *S) error)
		if !ok {
			cfg.problems = append(cfg.problems, fmt.Sprintf("WithState: the function takes %T, not the handler's state", cfg.setState))
		}
		r.setState = f
	}
	if cfg.viewState != nil {
		f, ok := cfg.viewState.(func(S) any)
		if !ok {
			cfg.problems = append(cfg.problems, fmt.Sprintf("WithStateSnapshots: the function takes %T, not the handler's state", cfg.viewState))
		}
		r.viewState = f
	}
	if len(cfg.problems) > 0 {
		return nil, fmt.Errorf("agui: NewHandler: %s", strings.Join(cfg.problems, "; "))
	}
	if cfg.interrupt == nil {
		cfg.interrupt = describeInterrupt
	}
	// Whether runs keep threads is the graph's configuration: asked of the
	// graph, not of its checkpointer, so that building a handler does no I/O.
	r.saver = g.Checkpointer() != nil
	return &Handler{cfg: cfg, runner: r}, nil
}

// inputKey is the context key of the run's input.
type inputKey struct{}

// InputFrom returns the request a run serves, from the context of the run
// (of its nodes, tools and prompt functions): its forwarded properties,
// context entries and tools. It returns nil outside a handler's run.
func InputFrom(ctx context.Context) *RunInput {
	in, _ := ctx.Value(inputKey{}).(*RunInput)
	return in
}

// ServeHTTP runs the agent for the RunAgentInput in the request's body and
// streams the run's events. A request the handler refuses before the run
// starts is answered with an HTTP error and a plain-text reason: 405 for a
// method other than POST, 415 for a body that is not declared
// application/json (Content-Type missing or another type), 401 for a
// request WithOwner's function does not authorize (before the body is
// read), 413 for a body too large, 400 for malformed input, 409 for input
// that does not fit the thread (it waits for answers the request does not
// give). The run ends when the client goes away, or when the stream to it
// cannot be written.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "agui: runs are started with POST", http.StatusMethodNotAllowed)
		return
	}
	if err := checkContentType(r); err != nil {
		http.Error(w, err.Error(), http.StatusUnsupportedMediaType)
		return
	}
	r, ok := h.authorize(w, r)
	if !ok {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, fmt.Sprintf("agui: the body is larger than %d bytes", h.cfg.maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "agui: reading the body: "+err.Error(), http.StatusBadRequest)
		return
	}
	in, err := DecodeInput(body)
	if err != nil {
		h.refuse(w, err)
		return
	}
	// The run stops when the client goes away, and when the stream to it
	// fails (a write timeout, a broken proxy): nobody reads the run then.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	ctx = context.WithValue(ctx, inputKey{}, in)
	ctx, err = withClientTools(ctx, in)
	if err != nil {
		h.refuse(w, err)
		return
	}
	modes := graph.ModeEvents | graph.ModeMessages | graph.ModeValues | graph.ModeCustom
	seq, held, err := h.runner.prepare(ctx, in, modes)
	if err != nil {
		h.refuse(w, err)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	out := newSink(w, func(err error) { cancel(fmt.Errorf("agui: writing to the client: %w", err)) })
	stop := out.keepAlive(h.cfg.keepAlive)
	defer stop()
	t := newTranslator(h, in, out, held)
	t.run(seq)
}

// checkContentType refuses a body that does not say it is JSON: a request
// without Content-Type, or with another type. A browser sends a form or
// plain text to another origin without asking it first (no CORS
// preflight), but not JSON; requiring the JSON type keeps a page of
// another site from starting runs with the user's cookies.
func checkContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return errors.New("agui: the request has no Content-Type: the body must be application/json")
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return fmt.Errorf("agui: the body must be application/json, not %q", clip(ct))
	}
	return nil
}

// refuse answers a request the handler will not run: an *InputError with
// its status and message, another error (the checkpointer failed) with
// 500 and the handler's wording of it (errorText).
func (h *Handler) refuse(w http.ResponseWriter, err error) {
	if ie, ok := errors.AsType[*InputError](err); ok {
		http.Error(w, ie.Error(), ie.Status)
		return
	}
	http.Error(w, "agui: the run could not start: "+h.errorText(err), http.StatusInternalServerError)
}

// withClientTools returns ctx with the application's tools, as
// declaration-only tools, and its context entries, as instructions, added
// to the run's tool resolution.
func withClientTools(ctx context.Context, in *RunInput) (context.Context, error) {
	var opts []tool.ResolveOption
	if len(in.Tools) > 0 {
		decls := make([]tool.Tool, 0, len(in.Tools))
		for _, t := range in.Tools {
			schema := []byte(t.Parameters)
			if len(schema) == 0 || isNull(schema) {
				schema = []byte(`{"type":"object","properties":{}}`)
			}
			d, err := tool.NewDeclaration(model.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: schema})
			if err != nil {
				return nil, badInput("tool %q: %v", t.Name, err)
			}
			decls = append(decls, d)
		}
		opts = append(opts, tool.AddTools(decls...))
	}
	if len(in.Context) > 0 {
		var b strings.Builder
		b.WriteString("The application provides this context:")
		for _, c := range in.Context {
			fmt.Fprintf(&b, "\n- %s: %s", strings.TrimSpace(c.Description), c.Value)
		}
		opts = append(opts, tool.AddInstructions(b.String()))
	}
	if len(opts) == 0 {
		return ctx, nil
	}
	return tool.ResolveWith(ctx, opts...), nil
}

// sink writes SSE events to a response; it is safe for concurrent use
// (the keep-alive writes from its own goroutine). After a write fails it
// writes nothing more, and calls fail once.
type sink struct {
	mu     sync.Mutex
	w      io.Writer
	flush  func()
	fail   func(error)
	failed bool
	wrote  chan struct{} // a send since the last keep-alive tick
}

func newSink(w http.ResponseWriter, fail func(error)) *sink {
	s := &sink{w: w, flush: func() {}, fail: fail, wrote: make(chan struct{}, 1)}
	rc := http.NewResponseController(w)
	s.flush = func() { _ = rc.Flush() }
	s.flush()
	return s
}

// send writes one event as an SSE data line.
func (s *sink) send(ev event) {
	b, _ := sse.Encode(sse.Event{Data: encodeEvent(ev, time.Now().UnixMilli())}) // fails only for an ID or type
	s.write(string(b))
	select {
	case s.wrote <- struct{}{}:
	default:
	}
}

func (s *sink) write(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return
	}
	if _, err := io.WriteString(s.w, text); err != nil {
		s.failed = true
		s.fail(err)
		return
	}
	s.flush()
}

// keepAlive writes an SSE comment every period in which nothing was sent,
// until the returned function is called (which waits for the goroutine).
func (s *sink) keepAlive(period time.Duration) (stop func()) {
	if period <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				select {
				case <-s.wrote:
				default:
					s.write(sse.KeepAlive)
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// graphRunner runs a compiled graph for the handler.
type graphRunner[S any, PS nodes.ChatState[S]] struct {
	g         *graph.Graph[S]
	saver     bool
	opts      []graph.RunOption
	setState  func(context.Context, json.RawMessage, *S) error
	viewState func(S) any
}

func (r *graphRunner[S, PS]) checkpointed() bool { return r.saver }

func (r *graphRunner[S, PS]) messages(st any) ([]model.Message, bool) {
	s, ok := st.(S)
	if !ok {
		return nil, false
	}
	return *PS(&s).ChatMessages(), true
}

func (r *graphRunner[S, PS]) view(st any) (any, bool) {
	s, ok := st.(S)
	if !ok || r.viewState == nil {
		return nil, false
	}
	return r.viewState(s), true
}

func (r *graphRunner[S, PS]) prepare(ctx context.Context, in *RunInput, modes graph.Mode) (iter.Seq2[graph.Event, error], []model.Message, error) {
	msgs, err := toModel(in.Messages)
	if err != nil {
		return nil, nil, err
	}
	opts := append(slices.Clone(r.opts), graph.WithModes(modes))
	if !r.saver {
		var s S
		held := PS(&s).ChatMessages()
		*held = answerOpenCalls(statelessAnswers(msgs, in.Resume), unanswered)
		if err := r.applyState(ctx, in, &s); err != nil {
			return nil, nil, err
		}
		return r.g.Stream(ctx, s, opts...), slices.Clip(*held), nil
	}
	thread := ThreadKey(OwnerFrom(ctx), in.ThreadID)
	snap, err := r.g.GetState(ctx, thread)
	switch {
	case err == nil && len(snap.Interrupts) > 0:
		held := *PS(&snap.State).ChatMessages()
		carry, err := r.pageState(ctx, in, snap)
		if err != nil {
			return nil, nil, err
		}
		resume, drop, err := resumeOptions(snap.Interrupts, held, msgs, in.Resume, carry)
		if err != nil {
			return nil, nil, err
		}
		if !drop {
			// The resume values answer what the thread waited for when
			// read, or the resume fails (graph.IfLatest).
			resume = append(resume, graph.IfLatest(snap.CheckpointID))
			return r.g.ResumeStream(ctx, thread, append(opts, resume...)...), held, nil
		}
		// Every interrupt was abandoned: the paused step is dropped (the
		// calls it left open are answered as cancelled) and the request
		// is a new turn. The client's state is checked first, so that a
		// request refused for it leaves the thread as it was.
		if r.setState != nil && len(in.State) > 0 {
			scratch := snap.State
			if err := r.applyState(ctx, in, &scratch); err != nil {
				return nil, nil, err
			}
		}
		if _, err := r.g.UpdateState(ctx, thread, graph.END, func(s S) S {
			m := PS(&s).ChatMessages()
			*m = answerOpenCalls(slices.Clone(*m), abandoned)
			return s
		}); err != nil {
			return nil, nil, fmt.Errorf("dropping the abandoned interrupts of thread %q: %w", thread, err)
		}
		if snap, err = r.g.GetState(ctx, thread); err != nil {
			return nil, nil, fmt.Errorf("reading thread %q: %w", thread, err)
		}
	case err == nil || errors.Is(err, state.ErrNotFound):
	default:
		return nil, nil, fmt.Errorf("reading thread %q: %w", thread, err)
	}
	s := snap.State
	held := PS(&s).ChatMessages()
	*held = answerOpenCalls(append(slices.Clone(*held), unseen(*held, msgs)...), unanswered)
	if err := r.applyState(ctx, in, &s); err != nil {
		return nil, nil, err
	}
	// The turn continues the checkpoint it was made from, or fails with
	// graph.ErrThreadBusy having stored nothing: a turn another overtook
	// would erase it.
	return r.g.Stream(ctx, s, append(opts, graph.WithThread(thread), graph.IfLatest(snap.CheckpointID))...), slices.Clip(*held), nil
}

func (r *graphRunner[S, PS]) applyState(ctx context.Context, in *RunInput, s *S) error {
	if r.setState == nil || len(in.State) == 0 {
		return nil
	}
	if err := r.setState(ctx, in.State, s); err != nil {
		return badInput("the state: %v", err)
	}
	return nil
}

// unseen returns the messages of in that held does not have, in order: by
// ID, and for tool messages also by the call they answer (the thread
// stores the client's answer to a call of its tools under an ID of its
// own).
func unseen(held, in []model.Message) []model.Message {
	ids := make(map[string]bool, len(held))
	answered := map[string]bool{}
	for i, m := range held {
		ids[messageID(i, m)] = true
		if m.Role == model.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	var out []model.Message
	for _, m := range in {
		if !ids[m.ID] && !(m.Role == model.RoleTool && answered[m.ToolCallID]) {
			out = append(out, m)
		}
	}
	return out
}

// The answers answerOpenCalls gives.
const (
	unanswered = "The call has no result: the application did not answer it."
	abandoned  = "The call was abandoned: the user dismissed it."
)

// answerOpenCalls answers, with an error that says why, the tool calls that no tool
// message answers before the conversation goes on (or ends): a client that
// sent calls without their results, or a run that stopped between a
// model's calls and their answers. Providers refuse such a conversation.
func answerOpenCalls(msgs []model.Message, why string) []model.Message {
	// The answer to a call that comes after the conversation went on (a
	// client that appended a result late) moves up to its call.
	late := map[string]int{} // call ID → index of its first answer
	for i, m := range msgs {
		if m.Role == model.RoleTool {
			if _, seen := late[m.ToolCallID]; !seen {
				late[m.ToolCallID] = i
			}
		}
	}
	var out []model.Message // a copy, made at the first change
	moved := map[int]bool{}
	open := map[string]string{}
	var order []string
	flush := func(at int) {
		if len(order) == 0 {
			return
		}
		if out == nil {
			out = slices.Clone(msgs[:at])
		}
		for _, id := range order {
			name, ok := open[id]
			if !ok {
				continue
			}
			if j, ok := late[id]; ok && j > at && !moved[j] {
				moved[j] = true
				out = append(out, msgs[j])
				continue
			}
			m := model.ToolMessage(id, name, true, model.TextPart(why))
			m.ID = nodes.ToolMessageID(id)
			out = append(out, m)
		}
		clear(open)
		order = order[:0]
	}
	for i, m := range msgs {
		switch {
		case moved[i]:
			continue
		case m.Role == model.RoleTool:
			delete(open, m.ToolCallID)
		default:
			flush(i)
			for _, c := range m.ToolCalls {
				if _, dup := open[c.ID]; !dup {
					order = append(order, c.ID)
				}
				open[c.ID] = c.Name
			}
		}
		if out != nil {
			out = append(out, m)
		}
	}
	flush(len(msgs))
	if out == nil {
		return msgs
	}
	return out
}

// resumeOptions returns how to resume a thread that waits on interrupts:
// the calls of the application's tools are answered by the request's tool
// messages, and other interrupts by its resume entries. drop reports that
// every entry abandons its interrupt (and no tool call waits), which ends
// the pause instead. A thread the request does not answer fully is an
// *InputError (409), as is a request that adds other messages to it.
// carry, when not nil, gets the answers to the application's calls (and
// the calls) before they are given to the run (see pageState).
func resumeOptions(waiting []graph.PendingInterrupt, held, msgs []model.Message, entries []ResumeEntry, carry func(map[string]tool.Result, []model.ToolCall)) (opts []graph.RunOption, drop bool, err error) {
	byCall := map[string]model.Message{}
	known := map[string]bool{}
	for i, m := range held {
		known[messageID(i, m)] = true
	}
	for _, m := range msgs {
		if m.Role == model.RoleTool {
			byCall[m.ToolCallID] = m
		}
	}
	byID := map[string]ResumeEntry{}
	for _, e := range entries {
		byID[e.InterruptID] = e
	}
	answered := map[string]bool{} // call IDs answered by this resume
	var cancelled, missing listed
	var resolved []string
	for _, in := range waiting {
		if calls, ok := pendingCalls(in); ok && len(in.Path) == 0 {
			results := map[string]tool.Result{}
			for _, c := range calls {
				m, ok := byCall[c.ID]
				if !ok {
					missing = append(missing, fmt.Sprintf("tool call %q (%s)", clip(c.ID), clip(c.Name)))
					continue
				}
				results[c.ID] = tool.Result{Content: m.Content, IsError: m.IsError}
				answered[c.ID] = true
			}
			if carry != nil && len(results) > 0 {
				carry(results, calls)
			}
			opts = append(opts, graph.WithResume(in.ID, results))
			continue
		}
		e, ok := byID[in.ID]
		switch {
		case !ok:
			missing = append(missing, fmt.Sprintf("interrupt %q", clip(in.ID)))
		case e.Status == ResumeCancelled:
			cancelled = append(cancelled, strconv.Quote(clip(in.ID)))
		default:
			payload := e.Payload
			if len(payload) == 0 {
				payload = json.RawMessage("null")
			}
			if calls, ok := pendingCalls(in); ok {
				v, err := nestedResults(calls, payload)
				if err != nil {
					return nil, false, badInput("resume entry for %q: %v", in.ID, err)
				}
				opts = append(opts, graph.WithResume(in.ID, v))
			} else {
				opts = append(opts, graph.WithResume(in.ID, payload))
			}
			resolved = append(resolved, in.ID)
		}
	}
	if len(missing) > 0 {
		return nil, false, conflict("the thread waits for answers the request does not give: %s", missing)
	}
	if len(cancelled) > 0 {
		if len(resolved) > 0 || len(answered) > 0 {
			return nil, false, conflict("the request abandons interrupts %s but answers others; answer all of them, or abandon all", cancelled)
		}
		return nil, true, nil
	}
	for _, m := range msgs {
		if known[m.ID] || m.Role == model.RoleTool && answered[m.ToolCallID] {
			continue
		}
		return nil, false, conflict("message %q cannot be added while the thread waits: answer what it waits for first", m.ID)
	}
	return opts, false, nil
}

// pendingCalls returns the calls of an interrupt of a ToolsNode that left
// calls to the caller (nodes.PendingToolCalls, or its JSON after a
// checkpoint).
func pendingCalls(in graph.PendingInterrupt) ([]model.ToolCall, bool) {
	switch p := in.Payload.(type) {
	case nodes.PendingToolCalls:
		return p.Calls, len(p.Calls) > 0
	case *nodes.PendingToolCalls:
		if p == nil {
			return nil, false
		}
		return p.Calls, len(p.Calls) > 0
	case json.RawMessage:
		var pc struct {
			Calls []model.ToolCall `json:"calls"`
		}
		var probe map[string]json.RawMessage
		if json.Unmarshal(p, &probe) != nil || len(probe) != 1 || probe["calls"] == nil {
			return nil, false
		}
		if json.Unmarshal(p, &pc) != nil || len(pc.Calls) == 0 {
			return nil, false
		}
		return pc.Calls, true
	}
	return nil, false
}

// nestedResults reads the answer to the calls a nested agent left to the
// caller: an object from call ID to the result's text.
func nestedResults(calls []model.ToolCall, payload json.RawMessage) (map[string]tool.Result, error) {
	var texts map[string]string
	if err := json.Unmarshal(payload, &texts); err != nil {
		return nil, errors.New("the payload must be an object from call ID to the result's text")
	}
	out := make(map[string]tool.Result, len(calls))
	for _, c := range calls {
		t, ok := texts[c.ID]
		if !ok {
			return nil, fmt.Errorf("the payload has no result for call %q", c.ID)
		}
		out[c.ID] = tool.Text(t)
	}
	return out, nil
}

// ToolProgressEvent names the CUSTOM events that carry the progress of a
// running tool call (tool.ReportProgress, the pieces of a streaming tool):
// their value has the toolCallId, the toolName, and the update's message,
// content (a string, or content parts) and details, as the tool gave them.
const ToolProgressEvent = "trellis.tool_progress"

// AnswerPrefix starts the ID of a question (nodes.AskUser) that a handler
// without a checkpointer reports: the rest is the question's call ID, and
// the resume entry that answers it becomes the call's result.
const AnswerPrefix = "call:"

// ErrNeedsCheckpointer is the error of a run, served without a
// checkpointer, that paused for something other than a question of the
// agent's own (an interrupt in a node, a nested agent's question): nothing
// kept the run, so it cannot be resumed.
var ErrNeedsCheckpointer = errors.New("agui: the run paused, and needs a checkpointer to resume")

// statelessAnswers adds to a conversation without a checkpointer the
// answers that resume entries give to the agent's questions: each becomes
// the result of the question's call (the answer's text, or an error for
// an abandoned question). Entries for calls the conversation does not
// hold, or already answers, are left out.
func statelessAnswers(msgs []model.Message, entries []ResumeEntry) []model.Message {
	if len(entries) == 0 {
		return msgs
	}
	calls := map[string]string{} // call ID → tool name
	answered := map[string]bool{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c.Name
		}
		if m.Role == model.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	out := msgs
	for _, e := range entries {
		id, ok := strings.CutPrefix(e.InterruptID, AnswerPrefix)
		name, known := calls[id]
		if !ok || !known || answered[id] {
			continue
		}
		answered[id] = true
		var m model.Message
		if e.Status == ResumeCancelled {
			m = model.ToolMessage(id, name, true, model.TextPart("The user dismissed the question."))
		} else {
			m = model.ToolMessage(id, name, false, model.TextPart(payloadText(e.Payload)))
		}
		m.ID = nodes.ToolMessageID(id)
		out = append(slices.Clip(out), m)
	}
	return out
}

// payloadText is a resume payload as text: a JSON string's value, or the
// JSON itself.
func payloadText(p json.RawMessage) string {
	var s string
	if json.Unmarshal(p, &s) == nil {
		return s
	}
	return string(p)
}

// question returns the question of an interrupt raised by nodes.AskUser.
func question(in graph.PendingInterrupt) (nodes.Question, bool) {
	var q nodes.Question
	switch p := in.Payload.(type) {
	case nodes.Question:
		q = p
	case *nodes.Question:
		if p != nil {
			q = *p
		}
	case json.RawMessage:
		_ = json.Unmarshal(p, &q)
	}
	return q, q.Question != ""
}

// describeInterrupt is the default description of an interrupt.
func describeInterrupt(in graph.PendingInterrupt) Interrupt {
	out := Interrupt{ID: in.ID, Reason: "interrupt", Metadata: map[string]any{"node": in.Node}}
	if in.Payload != nil {
		out.Metadata["payload"] = in.Payload
	}
	if calls, ok := pendingCalls(in); ok {
		out.Reason = "tool_calls"
		names := make([]string, len(calls))
		for i, c := range calls {
			names[i] = c.Name + " (" + c.ID + ")"
		}
		out.Message = "Results needed for: " + strings.Join(names, ", ")
		out.ResponseSchema = json.RawMessage(`{"type":"object","additionalProperties":{"type":"string"}}`)
		return out
	}
	if p, ok := in.Payload.(string); ok {
		out.Message = p
	}
	if q, ok := question(in); ok {
		out.Reason, out.Message, out.ToolCallID = "input_required", q.Question, q.CallID
		schema := map[string]any{"type": "string"}
		if len(q.Choices) > 0 {
			schema["examples"] = q.Choices // suggestions: any answer goes
		}
		out.ResponseSchema, _ = json.Marshal(schema)
	}
	return out
}
