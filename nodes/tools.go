package nodes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unsafe"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/callroom"
	"github.com/trellis-go/trellis/internal/deadline"
	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/internal/runkey"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type toolsConfig struct {
	toolSource
	exec      executor.Executor
	policy    ErrorPolicy
	policies  map[string]ErrorPolicy
	pending   *tool.Pending
	transfers []string
	// response is the set-model-response tool of structured output, when
	// it is added to the run's tools after the resolve options (see
	// runTools).
	response *tool.SetModelResponseTool
}

// ErrorPolicy says what a ToolsNode does with a tool's error result.
type ErrorPolicy int

const (
	// InformModel hands the error to the model as the tool's result, so that
	// it can retry, rephrase or give up (the default).
	InformModel ErrorPolicy = iota
	// ReturnError fails the ToolsNode with a *ToolError: the run stops and
	// the caller gets the error.
	ReturnError
)

// WithExecutor runs the calls through e (a parallel executor unless set).
// Give e the option StreamToolEvents to see tool events in the graph's
// stream. An executor that returns a result count other than the batch's
// call count fails the node (see executor.Guard for executors that may).
func WithExecutor(e executor.Executor) ToolsOption {
	return toolsOption(func(c *toolsConfig) { c.exec = e })
}

// WithErrorPolicy sets the error policy of the named tools, or of every tool
// when no name is given.
func WithErrorPolicy(p ErrorPolicy, toolNames ...string) ToolsOption {
	return toolsOption(func(c *toolsConfig) {
		if len(toolNames) == 0 {
			c.policy = p
			return
		}
		if c.policies == nil {
			c.policies = map[string]ErrorPolicy{}
		}
		for _, n := range toolNames {
			c.policies[n] = p
		}
	})
}

// WithPendingCalls lets long-running tools complete in-process: a call
// answered with a pending result is awaited on p (see tool.Pending) before
// the ToolsNode answers it. Without it, the pending result is the call's
// answer, and the final one can take its place later: a tool message with
// the ID ToolMessageID(callID), written to the thread's state (for example
// with graph.Graph.UpdateState), replaces it through the messages reducer.
func WithPendingCalls(p *tool.Pending) ToolsOption {
	return toolsOption(func(c *toolsConfig) { c.pending = p })
}

// WithTransfers declares the nodes tools may transfer control to
// (tool.Actions.TransferTo), for AddTools to declare as destinations.
func WithTransfers(nodes ...string) ToolsOption {
	return toolsOption(func(c *toolsConfig) { c.transfers = append(c.transfers, nodes...) })
}

// ErrToolFailed is matched by *ToolError.
var ErrToolFailed = errors.New("tool failed")

// ToolError is a tool's error result under the ReturnError policy.
type ToolError struct {
	// Call is the failed call.
	Call model.ToolCall
	// Result is its result.
	Result tool.Result
}

// Error returns the error's message.
func (e *ToolError) Error() string {
	return fmt.Sprintf("nodes: tool %q (call %s) failed: %s", e.Call.Name, e.Call.ID, e.Result.Text())
}

// Unwrap returns the tool's Go error, if it had one.
func (e *ToolError) Unwrap() error { return e.Result.Err }

// Is reports whether target is ErrToolFailed.
func (e *ToolError) Is(target error) bool { return target == ErrToolFailed }

// PendingToolCalls is the payload of the interrupt a ToolsNode raises for
// calls the caller executes: calls of declaration-only tools and of tools
// the run resolved as not executable. Resume the thread with a
// map[string]tool.Result that answers each call by ID.
type PendingToolCalls struct {
	Calls []model.ToolCall `json:"calls"`
}

// ToolEvents is an executor observer that forwards tool events into the
// stream of the graph run the batch belongs to (graph.ModeEvents), with the
// event kinds KindToolStart, KindToolUpdate and KindToolEnd and the
// executor.Event as payload.
func ToolEvents(ctx context.Context, ev executor.Event) {
	if !graph.Emitting(ctx, graph.ModeEvents) {
		return
	}
	graph.Emit(ctx, graph.ModeEvents, graph.Event{Kind: graph.EventKind(ev.Kind), Name: ev.Call.Name, Payload: ev, Duration: ev.Duration})
}

// StreamToolEvents is the executor option that forwards tool events into
// the graph's stream (ToolEvents) when the run streams graph.ModeEvents, and
// builds no events at all when it does not. Give it to the executors of
// ToolsNodes:
//
//	nodes.WithExecutor(executor.Parallel(nodes.StreamToolEvents(), executor.WithMiddleware(mws...)))
func StreamToolEvents() executor.Option {
	return executor.WithObserverIf(ToolEvents, func(ctx context.Context) bool {
		return graph.Emitting(ctx, graph.ModeEvents)
	})
}

// Event kinds of tool calls in a graph's stream (see ToolEvents).
const (
	KindToolStart  = graph.EventKind(executor.ToolStart)
	KindToolUpdate = graph.EventKind(executor.ToolUpdate)
	KindToolEnd    = graph.EventKind(executor.ToolEnd)
)

// ToolMessageID is the ID of the tool message that answers the call callID.
// It is derived from the call so that the answer can be replaced later (see
// WithPendingCalls).
func ToolMessageID(callID string) string { return toolMessagePrefix + callID }

// toolMessagePrefix starts the ID of every tool message a ToolsNode writes.
const toolMessagePrefix = "tool:"

// AddTools adds a ToolsNode named name that returns to next, declaring its
// destinations: next, itself (it continues in a new superstep when part of a
// batch must wait for the caller), graph.END (escalation, or a batch whose
// results all terminate) and the targets of WithTransfers.
func AddTools[S any, PS ChatState[S]](b *graph.Builder[S], name, next string, opts ...ToolsOption) *graph.Builder[S] {
	var cfg toolsConfig
	for _, o := range opts {
		if o != nil {
			o.applyTools(&cfg)
		}
	}
	dests := append([]string{next, name, graph.END}, cfg.transfers...)
	if len(cfg.toolsets) > 0 && len(cfg.resolve) == 0 && tool.IsStatic(cfg.toolsets...) {
		// Tools given as a list have their names now: two with one name,
		// or one named like the set-model-response tool, fail Compile
		// rather than the first run.
		list, err := tool.Resolve(context.Background(), cfg.toolsets)
		if err == nil && cfg.response != nil {
			_, err = list.With(cfg.response, structuredSource)
		}
		if err != nil {
			b.Problem(fmt.Errorf("ToolsNode %q: %w", name, err))
		}
	}
	return b.AddCommandNode(name, Tools[S, PS](next, opts...), dests)
}

// Tools returns a ToolsNode: it runs the tool calls of the last assistant
// message through the executor and appends one tool message per call, in
// call order, then continues with next. Add it with AddTools, or with
// AddCommandNode declaring next, the node itself, graph.END and any
// transfer targets.
//
// Tools see the run: the state is in their context (tool.RunState), and
// their results' Actions are applied in call order — Update (a func(*S) or
// func(S) S) changes the state, TransferTo continues at another node (the
// first transfer in call order wins), Escalate ends the loop (graph.END;
// it wins over transfers). A batch whose results all set Terminate ends the
// loop too.
//
// Calls the caller executes (declaration-only tools, tools resolved as not
// executable) interrupt the run with PendingToolCalls; resume it with a
// map[string]tool.Result of their answers by call ID. Calls already answered
// are never run again: a call counts as answered once a tool message with
// its ID follows the assistant message.
//
// Nil options are ignored.
func Tools[S any, PS ChatState[S]](next string, opts ...ToolsOption) graph.CommandFunc[S] {
	n := &toolsNode[S, PS]{toNext: graph.Command[S]{Goto: []string{next}}, kind: runctx.NewKind[S, PS, callroom.Room]()}
	cfg := &n.cfg
	for _, o := range opts {
		if o != nil {
			o.applyTools(cfg)
		}
	}
	if cfg.exec == nil {
		cfg.exec = executor.Parallel(StreamToolEvents())
	}
	if cfg.response != nil && len(cfg.resolve) == 0 {
		// No filter of the node's: the set-model-response tool is resolved
		// with the others (once, when they are all static), in a Fixed set,
		// which the run's filters (tool.ResolveWith) leave alone.
		cfg.toolsets = append(slices.Clip(cfg.toolsets), tool.Fixed(tool.NewStatic(structuredSource, cfg.response)))
		cfg.response = nil
	}
	return func(ctx context.Context, s S) (S, graph.Command[S], error) {
		// s is the node's working copy of the state: the context the tools
		// get carries another (see withRun). The storage the node lends
		// the executor comes with it (see internal/callroom), and the
		// results' part goes back to the pool once the node has read
		// them. Not when the node panicked: calls may still be answering.
		// One lookup of the graph run serves the node's questions to it
		// (nil outside a run).
		gr := runkey.NodeOf(ctx)
		ctx, w, room := withRun(n.kind, cfg.withMemory(ctx), s)
		out, cmd, err := n.run(ctx, gr, s, w, room)
		room.Release()
		return out, cmd, err
	}
}

// toolsNode is a ToolsNode (see Tools).
type toolsNode[S any, PS ChatState[S]] struct {
	cfg    toolsConfig
	toNext graph.Command[S]
	kind   *runctx.Kind[S, PS, callroom.Room]
}

// run runs the node on s in four steps, each passing the next what it
// came to: plan (which calls the batch leaves to run, which to the caller,
// which a resume answered), execute (the executor's results), settle (the
// answers the node writes now, or the interrupt that waits for them) and
// apply (the tool messages, state updates and route). When the executor
// answers in the storage room lends it, the caller releases it once run
// has returned. s is the node's working copy of the state in; gr is the
// graph run ctx belongs to, nil outside one.
func (n *toolsNode[S, PS]) run(ctx context.Context, gr runkey.Node, in S, s *S, room *callroom.Room) (S, graph.Command[S], error) {
	var p batchPlan
	if err := n.plan(ctx, gr, *PS(s).ChatMessages(), &p); err != nil {
		return *s, graph.Command[S]{}, err
	}
	if len(p.calls) == 0 {
		return in, n.toNext, nil
	}
	results, err := n.execute(ctx, gr, &p, room)
	if err != nil {
		return *s, graph.Command[S]{}, err
	}
	o, err := n.settle(ctx, &p, results)
	if err != nil {
		return *s, graph.Command[S]{}, err
	}
	cmd, err := n.apply(ctx, s, o)
	return *s, cmd, err
}

// batchPlan is what a batch leaves to do: the calls of the last assistant
// message that are not answered yet, the tools they resolve to, and which
// of them the executor runs, the caller executes, or a resume answered.
type batchPlan struct {
	// calls are the unanswered calls, in call order; whole says they are
	// all of the message's calls.
	calls []model.ToolCall
	whole bool
	list  *tool.ToolList
	// run are the calls the executor runs, ext those the caller is asked
	// for, supplied the answers a resume brought; together they are calls.
	run, ext []model.ToolCall
	supplied []answer
	// ids is room for the ID of the tool message that answers a single
	// call run, allocated with its result's part (see answerRoom).
	ids []byte
}

// plan fills p for the conversation msgs. It leaves p.calls empty when
// nothing is left to answer.
func (n *toolsNode[S, PS]) plan(ctx context.Context, gr runkey.Node, msgs []model.Message, p *batchPlan) error {
	p.calls, p.whole = unanswered(msgs)
	if len(p.calls) == 0 {
		return nil
	}
	list, err := n.cfg.runTools(ctx, p.calls)
	if err != nil {
		return err
	}
	p.list = list
	// The executor reads the calls and does not change them (see
	// executor.Batch): it runs the assistant message's own, unless the
	// caller executes some of them.
	p.run = slices.Clip(p.calls)
	if !list.ExecutesAll() {
		p.run, p.ext = splitExternal(list, p.calls)
	}
	if gr == nil || !gr.Resuming(ctx) { // graph.Resuming
		return nil
	}
	// A resume answers the calls the caller was asked for. Its answers
	// are used whatever the resuming run's tools make of those calls
	// (another ResolveWith may have dropped a tool, or made it one the
	// framework runs); the caller's answer is not run again.
	answers, err := askCaller(ctx, p.ext)
	if err != nil {
		return err
	}
	var rest []model.ToolCall
	for _, c := range p.calls {
		if r, ok := answers[c.ID]; ok {
			p.supplied = append(p.supplied, answer{call: c, result: r})
		} else {
			rest = append(rest, c)
		}
	}
	p.run, p.ext = rest, nil
	return nil
}

// askCaller interrupts the run for the calls the caller executes and
// returns their answers once a resume brings one for each.
func askCaller(ctx context.Context, ext []model.ToolCall) (map[string]tool.Result, error) {
	answers, err := graph.Interrupt[map[string]tool.Result](ctx, PendingToolCalls{Calls: ext})
	if err != nil {
		return nil, err
	}
	if err := allAnswered(ext, answers); err != nil {
		return nil, err
	}
	return answers, nil
}

// execute runs the plan's calls through the executor and returns their
// results, one per call (none when the executor has nothing to run).
func (n *toolsNode[S, PS]) execute(ctx context.Context, gr runkey.Node, p *batchPlan, room *callroom.Room) ([]tool.Result, error) {
	if len(p.run) == 0 {
		return nil, nil
	}
	if gr != nil {
		ctx = gr.Detach(ctx) // graph.Detach
	}
	// The calls see the node that made them even if middleware gives up
	// on them and they outlive it. The results are read into tool
	// messages and routes before the node returns: the executor of this
	// module the node calls takes storage for them from a pool, and it
	// goes back there (see internal/callroom).
	room.Lend(n.cfg.exec)
	if len(p.run) == 1 {
		// A single call's result part and its tool message's ID come
		// in one allocation: the executor lends the call the part, and
		// the message holds both.
		var part *model.Part
		if part, p.ids = answerRoom(len(toolMessagePrefix) + len(p.run[0].ID)); part != nil {
			room.LendPart(part)
		}
	}
	results, err := n.cfg.exec.Execute(ctx, executor.Batch{Calls: p.run, Tools: p.list})
	if err != nil {
		return nil, err
	}
	if len(results) != len(p.run) {
		// An executor that breaks its contract (see executor.Guard).
		return nil, fmt.Errorf("nodes: the executor returned %d results for %d calls (%s)", len(results), len(p.run), callNames(p.run))
	}
	return results, nil
}

// outcome is what a batch came to: the calls the node answers now, with
// their results in call order, and how the run goes on from them.
type outcome struct {
	calls   []model.ToolCall
	results []tool.Result
	next    outcomeNext
	// ids is room for the IDs of the calls' tool messages, when the
	// batch's plan had some for them (batchPlan.ids).
	ids []byte
}

// outcomeNext says how the run goes on once a batch's answers are written.
type outcomeNext uint8

const (
	// nextBatch routes the whole batch, earlier parts included (see
	// routeBatch).
	nextBatch outcomeNext = iota
	// nextWhole routes by the results alone: they answer the whole batch
	// at once.
	nextWhole
	// nextWait runs the node again in a new superstep for the calls that
	// are still waiting; the answers carry their routes (see markRoutes).
	nextWait
)

// settle turns the executor's results for p.run into the outcome: it waits
// for long-running calls, and when part of the batch waits for the caller
// or for an interrupt, keeps what finished or raises the interrupt.
func (n *toolsNode[S, PS]) settle(ctx context.Context, p *batchPlan, results []tool.Result) (outcome, error) {
	if len(p.ext) == 0 && len(p.supplied) == 0 && n.plain(results) {
		// Every call is answered, none cut short, interrupted or
		// pending: the usual batch, in one pass over the results.
		o := outcome{calls: p.run, results: results, ids: p.ids}
		if p.whole {
			o.next = nextWhole
		}
		return o, nil
	}
	if cutShort(results) {
		if err := stopping(ctx); err != nil {
			// The run is stopping (cancelled, or past its deadline): the
			// calls it cut short are not answers. Fail the node, so that
			// nothing of the batch is kept and a resume runs it again.
			return outcome{}, err
		}
	}
	interrupts, err := n.awaitResults(ctx, p.run, results)
	if err != nil {
		return outcome{}, err
	}
	if len(interrupts) == 0 && len(p.ext) == 0 && len(p.supplied) == 0 {
		// Every call is answered, in call order.
		o := outcome{calls: p.run, results: results, ids: p.ids}
		if p.whole {
			o.next = nextWhole
		}
		return o, nil
	}
	out := make([]answer, 0, len(p.calls))
	for i := range results {
		if results[i].Err != nil && interruptsIn(results[i].Err) != nil {
			continue
		}
		out = append(out, answer{call: p.run[i], result: results[i]})
	}
	if len(out) > 0 && (len(interrupts) > 0 || len(p.ext) > 0) {
		// Keep what finished, then wait for the rest in a new superstep,
		// so that a resume never runs these calls again.
		oc, or := split(out)
		return outcome{calls: oc, results: or, next: nextWait}, nil
	}
	if len(interrupts) > 0 {
		return outcome{}, &graph.InterruptError{Thread: graph.ThreadID(ctx), Interrupts: interrupts}
	}
	if len(p.ext) > 0 {
		// Asks the caller; a resume answers in plan (Resuming).
		answers, err := askCaller(ctx, p.ext)
		if err != nil {
			return outcome{}, err
		}
		for _, c := range p.ext {
			out = append(out, answer{call: c, result: answers[c.ID]})
		}
	}
	out = append(out, p.supplied...)
	// Answers in call order.
	order := make(map[string]int, len(p.calls))
	for i, c := range p.calls {
		order[c.ID] = i
	}
	slices.SortFunc(out, func(a, b answer) int { return order[a.call.ID] - order[b.call.ID] })
	oc, or := split(out)
	return outcome{calls: oc, results: or}, nil
}

// plain reports whether results hold nothing for settle to do: no call
// cut short, no error (which may carry an interrupt) and, when the node
// awaits long-running calls, none pending.
func (n *toolsNode[S, PS]) plain(results []tool.Result) bool {
	for i := range results {
		r := &results[i]
		if r.Err != nil || r.Status == tool.StatusCancelled || r.Status == tool.StatusTimeout || r.Pending && n.cfg.pending != nil {
			return false
		}
	}
	return true
}

// awaitResults collects the interrupts that results raise and replaces
// each pending result, when the node awaits long-running calls (see
// WithPendingCalls), with its final one.
func (n *toolsNode[S, PS]) awaitResults(ctx context.Context, run []model.ToolCall, results []tool.Result) ([]graph.PendingInterrupt, error) {
	var interrupts []graph.PendingInterrupt
	for i := range results {
		r := &results[i]
		if r.Err != nil {
			if ins := interruptsIn(r.Err); ins != nil {
				interrupts = append(interrupts, ins...)
				continue
			}
		}
		if r.Pending && n.cfg.pending != nil {
			final, err := n.cfg.pending.Wait(ctx, run[i].ID)
			if err != nil {
				return nil, fmt.Errorf("nodes: waiting for long-running call %s (%s): %w", run[i].ID, run[i].Name, err)
			}
			*r = final
		}
	}
	return interrupts, nil
}

// apply writes the outcome's answers into s and returns where the run
// goes next.
func (n *toolsNode[S, PS]) apply(ctx context.Context, s *S, o outcome) (graph.Command[S], error) {
	if err := writeAnswers[S, PS](&n.cfg, s, o.calls, o.results, o.ids); err != nil {
		return graph.Command[S]{}, err
	}
	switch o.next {
	case nextWhole:
		return route(o.results, n.toNext), nil // the batch answered at once
	case nextWait:
		// What these results ask of the run's route is decided when the
		// batch is complete: it travels with their messages.
		markRoutes(*PS(s).ChatMessages(), o.results)
		return graph.Command[S]{Goto: []string{graph.NodeName(ctx)}}, nil
	}
	return routeBatch(*PS(s).ChatMessages(), o.calls, o.results, n.toNext), nil
}

// runTools resolves the tools of a batch of calls. The set-model-response
// tool of structured output is the node's own: the resolve options, which
// filter the application's tools, neither hide it nor leave its calls to
// the caller.
func (c *toolsConfig) runTools(ctx context.Context, calls []model.ToolCall) (*tool.ToolList, error) {
	list, err := c.resolveCalls(ctx)
	if err != nil || c.response == nil {
		return list, err
	}
	name := c.response.Definition().Name
	for i := range calls {
		if calls[i].Name == name {
			return list.With(c.response, structuredSource)
		}
	}
	return list, nil
}

// stopping returns why the run behind ctx is stopping: its context's error,
// or context.DeadlineExceeded once its deadline has passed, even before the
// context's timer has fired.
func stopping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline.Passed(ctx) {
		return context.DeadlineExceeded
	}
	return nil
}

// cutShort reports whether any of results says its call was cancelled or
// timed out, or did not run.
func cutShort(results []tool.Result) bool {
	for i := range results {
		switch results[i].Status {
		case tool.StatusCancelled, tool.StatusTimeout:
			return true
		}
	}
	return false
}

// callNames lists the calls' tool names and IDs, for errors.
func callNames(calls []model.ToolCall) string {
	var b strings.Builder
	for i, c := range calls {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", c.Name, c.ID)
	}
	return b.String()
}

// external reports whether the caller executes c: its tool is
// declaration-only or resolved as not executable.
func external(list *tool.ToolList, c model.ToolCall) bool {
	t, ok := list.Lookup(c.Name)
	return ok && (tool.IsDeclarationOnly(t) || !list.Executable(c.Name))
}

// allAnswered reports the first of the calls left to the caller that
// answers has no result for.
func allAnswered(ext []model.ToolCall, answers map[string]tool.Result) error {
	for _, c := range ext {
		if _, ok := answers[c.ID]; !ok {
			return fmt.Errorf("nodes: no result was supplied for call %s of tool %q (supplied: %v)", c.ID, c.Name, keys(answers))
		}
	}
	return nil
}

// splitExternal returns the calls the framework runs and those the caller
// executes (see external), each in call order.
func splitExternal(list *tool.ToolList, calls []model.ToolCall) (run, ext []model.ToolCall) {
	isExt := false
	for i, c := range calls {
		// Calls of one tool usually come together.
		if i == 0 || c.Name != calls[i-1].Name {
			isExt = external(list, c)
		}
		if isExt {
			ext = append(ext, c)
		} else {
			run = append(run, c)
		}
	}
	return run, ext
}

func interruptsIn(err error) []graph.PendingInterrupt {
	var ie *graph.InterruptError
	if errors.As(err, &ie) {
		return ie.Interrupts
	}
	return nil
}

type answer struct {
	call   model.ToolCall
	result tool.Result
}

// split returns the calls and the results of out.
func split(out []answer) ([]model.ToolCall, []tool.Result) {
	calls := make([]model.ToolCall, len(out))
	results := make([]tool.Result, len(out))
	for i, a := range out {
		calls[i], results[i] = a.call, a.result
	}
	return calls, results
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// writeAnswers checks the error policies, appends the tool messages that
// answer calls with results (one result per call) and applies the results'
// state updates, in call order. ids, when not nil, is room for the
// messages' IDs (see toolMessageIDs).
func writeAnswers[S any, PS ChatState[S]](c *toolsConfig, s *S, calls []model.ToolCall, results []tool.Result, ids []byte) error {
	for i := range results {
		if results[i].IsError && c.policyOf(calls[i].Name) == ReturnError {
			return &ToolError{Call: calls[i], Result: results[i]}
		}
	}
	msgs := PS(s).ChatMessages()
	if n := len(*msgs); cap(*msgs)-n < len(results) {
		// One allocation of the exact size: the state's slice holds no
		// spare room that a later append could share.
		grown := make([]model.Message, n, n+len(results))
		copy(grown, *msgs)
		*msgs = grown
	}
	idText := toolMessageIDs(calls, ids)
	// The messages are written where they go, not built and copied there.
	n := len(*msgs)
	*msgs = (*msgs)[:n+len(results)]
	out := (*msgs)[n:]
	for i := range results {
		// Result.Message's message (model.ToolMessage), without copying
		// the result.
		r, c, m := &results[i], &calls[i], &out[i]
		idLen := len(toolMessagePrefix) + len(c.ID)
		*m = model.Message{ID: idText[:idLen], Role: model.RoleTool, ToolCallID: c.ID, ToolName: c.Name, IsError: r.IsError, Content: r.Content}
		idText = idText[idLen:]
		if r.Metadata != nil {
			m.Metadata = toolMetadata(r.Metadata)
		}
		if r.Terminate {
			if m.Metadata == nil {
				m.Metadata = make(map[string]string, 1)
			}
			m.Metadata[MetaTerminate] = "true"
		}
	}
	for i := range results {
		switch u := results[i].Actions.Update.(type) {
		case nil:
		case func(*S):
			u(s)
		case func(S) S:
			*s = u(*s)
		default:
			return fmt.Errorf("nodes: tool %q (call %s) returned a state update of type %T; a ToolsNode applies func(*%T) or func(%T) %T",
				calls[i].Name, calls[i].ID, u, *s, *s, *s)
		}
	}
	return nil
}

// toolMessageIDs returns the IDs of the tool messages that answer calls
// (ToolMessageID of each call's ID), one after the other in one string, so
// that a batch allocates them once: in room when it is their length
// (nothing else ever writes it), else in an allocation of their own.
func toolMessageIDs(calls []model.ToolCall, room []byte) string {
	n := 0
	for i := range calls {
		n += len(toolMessagePrefix) + len(calls[i].ID)
	}
	var b []byte
	if len(room) == n {
		b = room[:0]
	} else {
		b = make([]byte, 0, n)
	}
	for i := range calls {
		b = append(b, toolMessagePrefix...)
		b = append(b, calls[i].ID...)
	}
	// b is never written again: the string may share it.
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// answerRoom returns room for a single call's result part and for the
// idLen bytes of its tool message's ID, in one allocation of the size the
// two would take apart; nothing when the ID is longer than that saves.
func answerRoom(idLen int) (*model.Part, []byte) {
	switch {
	case idLen <= 16:
		r := new(struct {
			part model.Part
			id   [16]byte
		})
		return &r.part, r.id[:idLen]
	case idLen <= 32:
		r := new(struct {
			part model.Part
			id   [32]byte
		})
		return &r.part, r.id[:idLen]
	case idLen <= 48:
		r := new(struct {
			part model.Part
			id   [48]byte
		})
		return &r.part, r.id[:idLen]
	}
	return nil, nil
}

func (c *toolsConfig) policyOf(name string) ErrorPolicy {
	if p, ok := c.policies[name]; ok {
		return p
	}
	return c.policy
}

// route picks where the loop goes after a batch: END when a result escalates
// or every result terminates, else the first transfer in call order, else next.
func route[S any](results []tool.Result, next graph.Command[S]) graph.Command[S] {
	escalate, transfer, terminate := false, "", len(results) > 0
	for i := range results {
		acts := &results[i].Actions
		escalate = escalate || acts.Escalate
		if transfer == "" {
			transfer = acts.TransferTo
		}
		terminate = terminate && results[i].Terminate
	}
	switch {
	case escalate || terminate:
		return graph.Command[S]{Goto: []string{graph.END}}
	case transfer != "":
		return graph.Command[S]{Goto: []string{transfer}}
	}
	return next
}

// MetaTerminate is the Message.Metadata key, set to "true", of a tool
// message whose result asked to end the run (tool.Result.Terminate).
const MetaTerminate = "trellis.terminate"

// The metadata keys of a tool message whose result asked something of the
// run's route, in a batch answered in parts (see markRoutes).
const (
	metaEscalate   = "trellis.escalate"
	metaTerminate  = MetaTerminate
	metaTransferTo = "trellis.transfer_to"
)

// toolMetadata is a copy of a result's Metadata for its tool message,
// without the keys by which the framework records what results ask of the
// run's route: those come from the result's Terminate and Actions alone.
func toolMetadata(md map[string]string) map[string]string {
	m := maps.Clone(md)
	delete(m, metaTerminate)
	delete(m, metaEscalate)
	delete(m, metaTransferTo)
	if len(m) == 0 {
		return nil
	}
	return m
}

// markRoutes records, in the metadata of the tool messages that end msgs
// (one per result, in order), what results asked of the run's route, so
// that the part of the batch that completes it routes the whole batch.
func markRoutes(msgs []model.Message, results []tool.Result) {
	tail := msgs[len(msgs)-len(results):]
	for i := range results {
		r := &results[i]
		if !r.Terminate && !r.Actions.Escalate && r.Actions.TransferTo == "" {
			continue
		}
		m := make(map[string]string, len(tail[i].Metadata)+3)
		maps.Copy(m, tail[i].Metadata)
		if r.Terminate {
			m[metaTerminate] = "true"
		}
		if r.Actions.Escalate {
			m[metaEscalate] = "true"
		}
		if r.Actions.TransferTo != "" {
			m[metaTransferTo] = r.Actions.TransferTo
		}
		tail[i].Metadata = m
	}
}

// routeBatch picks where the loop goes once the batch of the last
// assistant message in msgs is answered, calls with results being the part
// answered last: by route, over the results of every call in call order,
// those of earlier parts as markRoutes recorded them.
func routeBatch[S any](msgs []model.Message, calls []model.ToolCall, results []tool.Result, next graph.Command[S]) graph.Command[S] {
	batch := lastToolCalls(msgs)
	if len(batch) <= len(calls) {
		return route(results, next) // answered in one part
	}
	now := make(map[string]int, len(calls))
	for i, c := range calls {
		now[c.ID] = i
	}
	earlier := make(map[string]*model.Message, len(batch)-len(calls))
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role == model.RoleTool; i-- {
		earlier[msgs[i].ToolCallID] = &msgs[i]
	}
	all := make([]tool.Result, 0, len(batch))
	for _, c := range batch {
		if i, ok := now[c.ID]; ok {
			all = append(all, results[i])
			continue
		}
		var r tool.Result
		if m := earlier[c.ID]; m != nil {
			r.Terminate = m.Metadata[metaTerminate] == "true"
			r.Actions.Escalate = m.Metadata[metaEscalate] == "true"
			r.Actions.TransferTo = m.Metadata[metaTransferTo]
		}
		all = append(all, r)
	}
	return route(all, next)
}

// lastToolCalls returns the calls of the last assistant message.
func lastToolCalls(msgs []model.Message) []model.ToolCall {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == model.RoleAssistant {
			return msgs[i].ToolCalls
		}
	}
	return nil
}

// unanswered returns the calls of the last assistant message that asked for
// tools and that no tool message after it answers yet; whole says they are
// all of its calls (none was answered before).
func unanswered(msgs []model.Message) (calls []model.ToolCall, whole bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != model.RoleAssistant {
			continue
		}
		if !m.HasToolCalls() {
			return nil, false
		}
		if i == len(msgs)-1 {
			return m.ToolCalls, true // nothing answers them yet
		}
		answered := make(map[string]bool)
		for _, later := range msgs[i+1:] {
			if later.Role == model.RoleTool {
				answered[later.ToolCallID] = true
			}
		}
		var out []model.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out, len(out) == len(m.ToolCalls)
	}
	return nil, false
}
