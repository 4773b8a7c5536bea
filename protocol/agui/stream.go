package agui

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/jsonpatch"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
)

// translator turns the events of one run into AG-UI events. The run's own
// graph (events with an empty Path) streams messages, tool calls and
// steps; the agents that handoff tools run stream theirs as subagents
// (for clients of protocol 1.0 and later), and count for usage.
type translator struct {
	h   *Handler
	in  *RunInput
	out *sink

	root    *scope                  // the run's own agent
	partial map[string]*modelStream // replies shown in part, by message ID
	known   map[string]bool         // message IDs the client holds or was sent
	usage   map[[2]string]*model.Usage
	uorder  [][2]string
	last    any    // the state after the last superstep
	view    []byte // the last STATE_SNAPSHOT sent

	nested bool              // stream the agents of handoff tools
	subs   map[string]*scope // active subagent invocations, by call ID
	active []*scope          // the same, in the order they started
	runIDs map[string]int    // invocations per call ID, for fresh run IDs
}

// scope is what one agent of the run has open: the run's own agent, or an
// invocation of a subagent (an agent a handoff tool runs).
type scope struct {
	id      string // subagentRunId; "" for the run's own agent
	callID  string // the handoff call that started the invocation
	path    []string
	parent  *scope
	models  map[string][]*modelStream // open model calls, by node
	steps   map[string]int            // open steps, by name
	started map[string]bool           // tool call IDs the client knows
	ours    map[string]bool           // tool call IDs this run's stream started
	results map[string]bool           // tool call IDs the client has answers to
}

func newScope() *scope {
	return &scope{models: map[string][]*modelStream{}, steps: map[string]int{},
		started: map[string]bool{}, ours: map[string]bool{}, results: map[string]bool{}}
}

// modelStream is a model call of the run's graph whose reply streams.
type modelStream struct {
	sc        *scope
	msgID     string
	name      string
	textOpen  bool
	text      strings.Builder // the text sent
	calls     map[int]*callStream
	order     []*callStream
	spanOpen  bool
	spans     int   // reasoning spans opened
	reasoning []int // reasoning parts open, by index
	// shared is set when another call of the same node streamed at the
	// same time: the chunks of the two cannot be told apart, so the
	// reply is no longer streamed, and what it lacks is shown once the
	// state holds it.
	shared bool
}

// callStream is a tool call of a streaming reply.
type callStream struct {
	id, name string
	started  bool
	closed   bool
	args     strings.Builder // the arguments received (sent, once started)
}

// newTranslator returns a translator for a run that starts from the
// conversation held: the client has those messages, or gets them in the
// closing MESSAGES_SNAPSHOT; the stream shows only what the run adds.
func newTranslator(h *Handler, in *RunInput, out *sink, held []model.Message) *translator {
	t := &translator{h: h, in: in, out: out, root: newScope(),
		partial: map[string]*modelStream{}, known: map[string]bool{},
		usage:  map[[2]string]*model.Usage{},
		nested: in.ProtocolVersion != "" && !strings.HasPrefix(in.ProtocolVersion, "0."),
		subs:   map[string]*scope{}, runIDs: map[string]int{}}
	for _, m := range in.Messages {
		t.known[m.ID] = true
		for _, c := range m.ToolCalls {
			t.root.started[c.ID] = true
		}
		if m.Role == "tool" {
			t.root.results[m.ToolCallID] = true
		}
	}
	for i, m := range held {
		t.known[messageID(i, m)] = true
		for _, c := range m.ToolCalls {
			t.root.started[c.ID] = true
		}
		if m.Role == model.RoleTool {
			t.root.results[m.ToolCallID] = true
		}
	}
	return t
}

// emit sends an event of sc's agent: a subagent's carry its run ID.
func (t *translator) emit(sc *scope, ev event) {
	if sc != nil && sc.id != "" {
		ev.header().SubagentRunID = sc.id
	}
	t.send(ev)
}

// send sends an event of the run's own agent.
func (t *translator) send(ev event) {
	t.out.send(ev)
}

// run streams the run: RUN_STARTED, the run's events, and RUN_FINISHED or
// RUN_ERROR. A panic while translating is reported as RUN_ERROR.
func (t *translator) run(seq iter.Seq2[graph.Event, error]) {
	t.send(&runStarted{ThreadID: t.in.ThreadID, RunID: t.in.RunID, ProtocolVersion: ProtocolVersion, ParentRunID: t.in.ParentRunID})
	var (
		final  any
		done   bool
		runErr error
	)
	func() {
		defer func() {
			if v := recover(); v != nil {
				runErr = fmt.Errorf("agui: translating the run's events: %v", v)
			}
		}()
		for ev, err := range seq {
			if err != nil {
				runErr = err
				continue
			}
			if ev.Kind == graph.KindDone {
				final, done = ev.State, true
				continue
			}
			t.event(ev)
		}
	}()
	ie, interrupted := errors.AsType[*graph.InterruptError](runErr)
	switch {
	case runErr != nil && !interrupted:
		t.fail(runErr)
		return
	case done:
		t.reconcile(final)
	case interrupted:
		final = t.last
	default:
		t.fail(errors.New("the run ended without its final state"))
		return
	}
	var (
		pending   []string
		asks      []Interrupt
		suspended = map[*scope][]string{} // interrupt IDs by the invocation that raised them
	)
	if interrupted {
		for _, in := range ie.Interrupts {
			if calls, ok := pendingCalls(in); ok && len(in.Path) == 0 {
				for _, c := range calls {
					pending = append(pending, c.ID)
				}
				continue
			}
			d := t.h.cfg.interrupt(in)
			d.ID = in.ID
			if !t.h.runner.checkpointed() {
				// Nothing keeps the paused run: a question of the agent's own
				// is answered through its call (see statelessAnswers), and
				// anything else cannot be resumed.
				q, ok := question(in)
				if !ok || len(in.Path) > 0 || q.CallID == "" {
					t.fail(fmt.Errorf("%w: the run paused in node %q, and only a graph with a checkpointer can resume it", ErrNeedsCheckpointer, in.Node))
					return
				}
				d.ID = AnswerPrefix + q.CallID
			}
			if sc := t.raisedIn(in.Path); sc != nil {
				d.SubagentRunID = sc.id
				suspended[sc] = append(suspended[sc], in.ID)
			}
			asks = append(asks, d)
		}
	}
	t.closeAll(interrupted, suspended)
	if final != nil && !t.h.cfg.noSnap {
		if msgs, ok := t.h.runner.messages(final); ok {
			t.send(&messagesSnapshot{Messages: fromModel(msgs)})
		}
	}
	finished := &runFinished{ThreadID: t.in.ThreadID, RunID: t.in.RunID, Usage: t.usageEntries(),
		Outcome: Outcome{Type: OutcomeSuccess}}
	if interrupted {
		switch {
		case len(asks) > 0:
			finished.Outcome = Outcome{Type: OutcomeInterrupt, Interrupts: asks}
		case len(pending) > 0:
			finished.Outcome.PendingToolCallIDs = pending
		}
	}
	t.send(finished)
}

// fail ends the run with RUN_ERROR: the kind of failure (errorCode),
// told as the handler tells errors (errorText).
func (t *translator) fail(err error) {
	t.send(&runError{Message: t.h.errorText(err), Code: errorCode(err), Usage: t.usageEntries()})
}

// event translates one event of the run.
func (t *translator) event(ev graph.Event) {
	if ev.Kind == nodes.KindModelEnd {
		if call, ok := ev.Payload.(nodes.ModelCall); ok {
			t.addUsage(call)
		}
	}
	sc := t.root
	if len(ev.Path) > 0 {
		if sc = t.subagent(ev); sc == nil {
			return
		}
	}
	switch ev.Kind {
	case graph.KindNodeStart:
		if !slices.Equal(ev.Path, sc.path) {
			return // a subgraph's node inside the agent
		}
		if sc.steps[ev.Node]++; sc.steps[ev.Node] == 1 {
			t.emit(sc, &stepStarted{StepName: ev.Node})
		}
	case graph.KindNodeEnd:
		if !slices.Equal(ev.Path, sc.path) {
			return
		}
		if sc.steps[ev.Node] > 0 {
			if sc.steps[ev.Node]--; sc.steps[ev.Node] == 0 {
				delete(sc.steps, ev.Node)
				t.emit(sc, &stepFinished{StepName: ev.Node})
			}
		}
	case nodes.KindModelStart:
		if call, ok := ev.Payload.(nodes.ModelCall); ok && call.MessageID != "" {
			key := modelKey(ev)
			ms := &modelStream{sc: sc, msgID: call.MessageID, name: call.Agent, calls: map[int]*callStream{}}
			if open := sc.models[key]; len(open) > 0 {
				// Calls of one node at once (the tasks of a fan-out): their
				// chunks carry nothing that tells them apart.
				ms.shared = true
				for _, o := range open {
					t.share(o)
				}
			}
			sc.models[key] = append(sc.models[key], ms)
		}
	case nodes.KindModelDelta:
		if chunk, ok := ev.Payload.(model.Chunk); ok {
			if open := sc.models[modelKey(ev)]; len(open) == 1 && !open[0].shared {
				t.delta(open[0], chunk)
			}
		}
	case nodes.KindModelEnd:
		call, _ := ev.Payload.(nodes.ModelCall)
		key := modelKey(ev)
		open := sc.models[key]
		for i, ms := range open {
			if ms.msgID == call.MessageID || call.MessageID == "" && len(open) == 1 {
				t.endModel(ms)
				open = slices.Delete(open, i, i+1)
				break
			}
		}
		if len(open) == 0 {
			delete(sc.models, key)
		} else {
			sc.models[key] = open
		}
	case nodes.KindToolEnd:
		e, ok := ev.Payload.(executor.Event)
		if !ok {
			return
		}
		// A call that paused the run (a question for the user) or that
		// goes on in the background has no result yet: its tool message,
		// if the state gets one, is shown from the state; an agent it
		// runs stays open until the run ends.
		paused := e.Result.Pending || errors.Is(e.Result.Err, graph.ErrInterrupted)
		if child := t.subs[e.Call.ID]; child != nil && child.parent == sc && !paused {
			t.endSubagent(child, e.Result)
		}
		if !paused {
			t.toolResult(sc, e.Call, nodes.ToolMessageID(e.Call.ID), e.Result.Content, t.h.resultMetadata(e))
		}
	case nodes.KindToolUpdate:
		// Progress of a running call (tool.ReportProgress, a streaming
		// tool, the text of a remote agent): a custom event, as the
		// protocol has none for it.
		if e, ok := ev.Payload.(executor.Event); ok {
			v := toolProgress{ToolCallID: e.Call.ID, ToolName: e.Call.Name, Message: e.Update.Message}
			if len(e.Update.Content) > 0 {
				v.Content = contentOf(e.Update.Content)
			}
			if e.Update.Details != nil {
				if b, err := json.Marshal(e.Update.Details); err == nil {
					v.Details = b
				}
			}
			t.emit(sc, &custom{Name: ToolProgressEvent, Value: v})
		}
	case graph.KindCustom:
		// What nodes emit themselves (graph.EmitCustom), for the
		// application's interface; a payload that does not encode as JSON
		// goes as its text.
		value := any(fmt.Sprint(ev.Payload))
		if b, err := json.Marshal(ev.Payload); err == nil {
			value = json.RawMessage(b)
		}
		t.emit(sc, &custom{Name: ev.Name, Value: value})
	case graph.KindValues:
		if sc == t.root {
			t.last = ev.State
			t.reconcile(ev.State)
		}
	}
}

// modelKey tells apart the model calls of one agent: by node, and by the
// subgraph the node is in.
func modelKey(ev graph.Event) string {
	return strings.Join(append(slices.Clip(ev.Path), ev.Node), "\x00")
}

// subagent returns the invocation of a handoff's agent that a nested
// event belongs to, announcing it (SUBAGENT_STARTED) when it is new; nil
// when subagents are not streamed, or the event comes from a nested graph
// that no tool call started (a subgraph node), whose events are not shown.
func (t *translator) subagent(ev graph.Event) *scope {
	if !t.nested || ev.CallID == "" {
		return nil
	}
	if sc := t.subs[ev.CallID]; sc != nil {
		return sc
	}
	parent := t.root
	for _, sc := range t.active {
		if len(sc.path) > len(parent.path) && len(sc.path) < len(ev.Path) && slices.Equal(sc.path, ev.Path[:len(sc.path)]) {
			parent = sc
		}
	}
	sc := newScope()
	sc.callID, sc.parent = ev.CallID, parent
	sc.path = slices.Clone(ev.Path[:len(parent.path)+1])
	sc.id = ev.CallID
	if n := t.runIDs[ev.CallID]; n > 0 {
		sc.id = ev.CallID + "#" + strconv.Itoa(n+1) // a second invocation of one call in this run
	}
	t.runIDs[ev.CallID]++
	t.subs[ev.CallID] = sc
	t.active = append(t.active, sc)
	t.emit(sc, &subagentStarted{Name: sc.path[len(sc.path)-1], ParentToolCallID: sc.callID, ParentSubagentRunID: parent.id})
	return sc
}

// raisedIn returns the innermost active invocation whose agent raised an
// interrupt at path, or nil for the run's own agent.
func (t *translator) raisedIn(path []string) *scope {
	var out *scope
	for _, sc := range t.active {
		if len(sc.path) <= len(path) && slices.Equal(sc.path, path[:len(sc.path)]) && (out == nil || len(sc.path) > len(out.path)) {
			out = sc
		}
	}
	return out
}

// endSubagent closes an invocation, after what it and the invocations it
// started have open: SUBAGENT_FINISHED, or SUBAGENT_ERROR when its call
// failed.
func (t *translator) endSubagent(sc *scope, res tool.Result) {
	if res.IsError {
		cause := res.Err
		if cause == nil {
			cause = errors.New(cmp.Or(strings.TrimSpace(res.Text()), "the agent failed"))
		}
		t.closeSubagent(sc, func() {
			t.emit(sc, &subagentError{Message: t.h.errorText(cause)})
		}, nil)
		return
	}
	t.closeSubagent(sc, func() { t.emit(sc, &subagentFinished{}) }, nil)
}

// closeSubagent closes the invocations sc started (as suspended when
// suspended names them, else finished), what sc has open, and then sc with
// end.
func (t *translator) closeSubagent(sc *scope, end func(), suspended map[*scope][]string) {
	for i := len(t.active) - 1; i >= 0; i-- {
		if child := t.active[i]; child.parent == sc {
			t.closeSubagent(child, func() { t.finishSuspended(child, suspended) }, suspended)
		}
	}
	t.closeScope(sc)
	end()
	delete(t.subs, sc.callID)
	t.active = slices.DeleteFunc(t.active, func(o *scope) bool { return o == sc })
}

// finishSuspended sends SUBAGENT_FINISHED for an invocation the run's end
// leaves: suspended when it (or one it started) waits for an answer.
func (t *translator) finishSuspended(sc *scope, suspended map[*scope][]string) {
	waits := suspended[sc] != nil
	for o := range suspended {
		for p := o; p != nil && !waits; p = p.parent {
			waits = p == sc
		}
	}
	if !waits {
		t.emit(sc, &subagentFinished{})
		return
	}
	t.emit(sc, &subagentFinished{Outcome: &subagentOutcome{Type: OutcomeSuspended, InterruptIDs: suspended[sc]}})
}

// delta streams a chunk of a model's reply.
func (t *translator) delta(ms *modelStream, c model.Chunk) {
	if r := c.Reasoning; r != nil && r.Text != "" {
		if !ms.spanOpen {
			ms.spanOpen = true
			ms.spans++
			t.emit(ms.sc, &reasoningStart{MessageID: ms.spanID()})
		}
		id := ms.msgID + ":reasoning:" + strconv.Itoa(r.Index)
		if !slices.Contains(ms.reasoning, r.Index) {
			ms.reasoning = append(ms.reasoning, r.Index)
			t.emit(ms.sc, &reasoningMessageStart{MessageID: id, Role: "reasoning"})
		}
		t.emit(ms.sc, &reasoningMessageContent{MessageID: id, Delta: r.Text})
	}
	if c.Text != "" {
		t.endReasoning(ms)
		if !ms.textOpen {
			ms.textOpen = true
			if ms.sc == t.root {
				t.known[ms.msgID] = true
			}
			t.emit(ms.sc, &textMessageStart{MessageID: ms.msgID, Role: "assistant", Name: ms.name})
		}
		ms.text.WriteString(c.Text)
		t.emit(ms.sc, &textMessageContent{MessageID: ms.msgID, Delta: c.Text})
	}
	if d := c.ToolCall; d != nil {
		t.endReasoning(ms)
		cs := ms.calls[d.Index]
		if cs != nil && d.ID != "" && cs.id != "" && d.ID != cs.id {
			cs = nil // another call at the same index (as model.Accumulator reads it)
		}
		if cs == nil {
			cs = &callStream{}
			ms.calls[d.Index] = cs
			ms.order = append(ms.order, cs)
		}
		if cs.id == "" {
			cs.id = d.ID
		}
		if cs.name == "" {
			cs.name = d.Name
		}
		cs.args.WriteString(d.Arguments)
		if cs.started {
			if d.Arguments != "" {
				t.emit(ms.sc, &toolCallArgs{ToolCallID: cs.id, Delta: d.Arguments})
			}
			return
		}
		if cs.id != "" && cs.name != "" && !ms.sc.started[cs.id] {
			cs.started = true
			ms.sc.started[cs.id], ms.sc.ours[cs.id] = true, true
			t.emit(ms.sc, &toolCallStart{ToolCallID: cs.id, ToolCallName: cs.name, ParentMessageID: ms.msgID})
			if cs.args.Len() > 0 {
				t.emit(ms.sc, &toolCallArgs{ToolCallID: cs.id, Delta: cs.args.String()})
			}
		}
	}
}

func (t *translator) endReasoning(ms *modelStream) {
	for _, i := range ms.reasoning {
		t.emit(ms.sc, &reasoningMessageEnd{MessageID: ms.msgID + ":reasoning:" + strconv.Itoa(i)})
	}
	ms.reasoning = nil
	if ms.spanOpen {
		ms.spanOpen = false
		t.emit(ms.sc, &reasoningEnd{MessageID: ms.spanID()})
	}
}

// spanID is the ID of the reply's reasoning span open or last opened.
func (ms *modelStream) spanID() string {
	if ms.spans <= 1 {
		return ms.msgID + ":reasoning"
	}
	return ms.msgID + ":reasoning:span:" + strconv.Itoa(ms.spans)
}

// share stops streaming a reply whose chunks can no longer be told from
// another's: what it opened is closed, and the rest of it is shown when
// the state holds it (see reconcile).
func (t *translator) share(ms *modelStream) {
	if ms.shared {
		return
	}
	ms.shared = true
	t.endModel(ms)
}

// endModel closes what a model call opened. A reply shown in part (see
// share) is remembered until reconcile completes it.
func (t *translator) endModel(ms *modelStream) {
	t.endReasoning(ms)
	if ms.textOpen {
		ms.textOpen = false
		t.emit(ms.sc, &textMessageEnd{MessageID: ms.msgID})
	}
	for _, cs := range ms.order {
		if cs.started && !cs.closed {
			cs.closed = true
			t.emit(ms.sc, &toolCallEnd{ToolCallID: cs.id})
		}
	}
	if ms.shared && ms.sc == t.root {
		t.partial[ms.msgID] = ms
	}
}

// closeAll closes what is still open before the run's end: the
// invocations of subagents (suspended when they wait for an answer of an
// interrupted run), and what the run's own agent has open.
func (t *translator) closeAll(interrupted bool, suspended map[*scope][]string) {
	if !interrupted {
		suspended = nil
	}
	// Invocations start after their parents, so the first active one is
	// the run's agent's own; closing it closes those it started.
	for len(t.active) > 0 {
		sc := t.active[0]
		t.closeSubagent(sc, func() { t.finishSuspended(sc, suspended) }, suspended)
	}
	t.closeScope(t.root)
}

// closeScope closes the model calls and steps an agent has open.
func (t *translator) closeScope(sc *scope) {
	for _, key := range slices.Sorted(maps.Keys(sc.models)) {
		for _, ms := range sc.models[key] {
			t.endModel(ms)
		}
	}
	clear(sc.models)
	for _, name := range slices.Sorted(maps.Keys(sc.steps)) {
		t.emit(sc, &stepFinished{StepName: name})
	}
	clear(sc.steps)
}

// toolResult sends the result of a call the agent ran, once, starting the
// call first if the stream has not (a reply that did not stream). The
// answers to calls of earlier runs (a question the user answered, a call
// of the application's tools) are not streamed: the client has them, or
// gets them in the closing MESSAGES_SNAPSHOT.
func (t *translator) toolResult(sc *scope, call model.ToolCall, msgID string, content []model.Part, meta *resultMetadata) {
	if sc.results[call.ID] || sc.started[call.ID] && !sc.ours[call.ID] {
		return
	}
	if sc != t.root && !sc.started[call.ID] {
		return // a subagent's call of a reply that did not stream
	}
	t.startCall(sc, "", call)
	sc.results[call.ID] = true
	if sc == t.root {
		t.known[msgID] = true
	}
	t.emit(sc, &toolCallResult{MessageID: msgID, ToolCallID: call.ID, Role: "tool", Content: contentOf(content), Metadata: meta})
}

// marshalDetails encodes a result's Details for its event's metadata.
func marshalDetails(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return json.RawMessage(b), err
}

// startCall sends the whole triad of a call that has not been streamed.
func (t *translator) startCall(sc *scope, parent string, c model.ToolCall) {
	if sc.started[c.ID] {
		return
	}
	sc.started[c.ID], sc.ours[c.ID] = true, true
	t.emit(sc, &toolCallStart{ToolCallID: c.ID, ToolCallName: c.Name, ParentMessageID: parent})
	t.emit(sc, &toolCallArgs{ToolCallID: c.ID, Delta: string(c.Arguments)})
	t.emit(sc, &toolCallEnd{ToolCallID: c.ID})
}

// reconcile sends what the state holds that the stream has not shown: the
// replies of models that did not stream, messages nodes wrote themselves,
// tool results no executor event reported; and, with WithStateSnapshots,
// the state's view when it changed.
func (t *translator) reconcile(st any) {
	msgs, ok := t.h.runner.messages(st)
	if !ok {
		return
	}
	for i, m := range msgs {
		id := messageID(i, m)
		// A reply still streaming is shown by its stream.
		if t.streaming(id) {
			continue
		}
		if ms := t.partial[id]; ms != nil {
			delete(t.partial, id)
			t.known[id] = true
			t.complete(ms, m)
			continue
		}
		if t.known[id] {
			// A streamed reply's calls that did not stream under the ID
			// the conversation gave them (they had none, or one already
			// used) are shown whole.
			for _, c := range m.ToolCalls {
				t.startCall(t.root, id, c)
			}
			continue
		}
		t.known[id] = true
		switch m.Role {
		case model.RoleTool:
			name := m.ToolName
			if name == "" {
				name = callName(msgs[:i], m.ToolCallID)
			}
			if name != "" || t.root.started[m.ToolCallID] {
				t.toolResult(t.root, model.ToolCall{ID: m.ToolCallID, Name: name}, id, m.Content, nil)
			}
			continue
		case model.RoleAssistant:
			if text := m.Text(); text != "" {
				t.textMessage(id, "assistant", m.Name, text)
			}
			for _, c := range m.ToolCalls {
				t.startCall(t.root, id, c)
			}
		case model.RoleUser:
			t.textMessage(id, "user", m.Name, m.Text())
		case model.RoleSystem:
			t.textMessage(id, "system", m.Name, m.Text())
		}
	}
	if view, ok := t.h.runner.view(st); ok {
		b, err := json.Marshal(view)
		if err != nil || bytes.Equal(b, t.view) {
			return
		}
		prev := t.view
		t.view = b
		if prev != nil && t.h.cfg.deltas {
			if ops, ok := patch(prev, b); ok {
				if len(ops) > 0 {
					t.send(&stateDelta{Delta: ops})
				}
				return
			}
		}
		t.send(&stateSnapshot{Snapshot: b})
	}
}

// patch returns the JSON Patch from the view a to the view b.
func patch(a, b []byte) ([]jsonpatch.Op, bool) {
	var av, bv any
	if decodeNumbers(a, &av) != nil || decodeNumbers(b, &bv) != nil {
		return nil, false
	}
	return jsonpatch.Diff(av, bv), true
}

// decodeNumbers decodes JSON keeping numbers as they were written.
func decodeNumbers(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

func (t *translator) streaming(msgID string) bool {
	for _, open := range t.root.models {
		for _, ms := range open {
			if ms.msgID == msgID {
				return true
			}
		}
	}
	return false
}

// complete shows what a reply streamed in part (see share) lacks, as the
// conversation holds it: the rest of its text and of its calls'
// arguments, by reopening them, and the calls that did not start. A
// reply that does not go on from what was sent is left to the closing
// MESSAGES_SNAPSHOT.
func (t *translator) complete(ms *modelStream, m model.Message) {
	text, sent := m.Text(), ms.text.String()
	switch {
	case sent == "":
		if text != "" {
			t.textMessage(ms.msgID, "assistant", ms.name, text)
		}
	case len(text) > len(sent) && strings.HasPrefix(text, sent):
		t.send(&textMessageStart{MessageID: ms.msgID, Role: "assistant", Name: ms.name})
		t.send(&textMessageContent{MessageID: ms.msgID, Delta: text[len(sent):]})
		t.send(&textMessageEnd{MessageID: ms.msgID})
	}
	streamed := map[string]*callStream{}
	for _, cs := range ms.order {
		if cs.started {
			streamed[cs.id] = cs
		}
	}
	for _, c := range m.ToolCalls {
		cs := streamed[c.ID]
		if cs == nil {
			t.startCall(t.root, ms.msgID, c)
			continue
		}
		args, sent := string(c.Arguments), cs.args.String()
		if len(args) > len(sent) && strings.HasPrefix(args, sent) {
			t.send(&toolCallStart{ToolCallID: cs.id, ToolCallName: cs.name, ParentMessageID: ms.msgID})
			t.send(&toolCallArgs{ToolCallID: cs.id, Delta: args[len(sent):]})
			t.send(&toolCallEnd{ToolCallID: cs.id})
		}
	}
}

// callName returns the name of the call id among the calls of msgs, or "".
func callName(msgs []model.Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, c := range msgs[i].ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}

// textMessage sends a whole message as one triad.
func (t *translator) textMessage(id, role, name, text string) {
	t.send(&textMessageStart{MessageID: id, Role: role, Name: name})
	t.send(&textMessageContent{MessageID: id, Delta: text})
	t.send(&textMessageEnd{MessageID: id})
}

func (t *translator) addUsage(call nodes.ModelCall) {
	u := call.Usage
	if u.InputTokens == 0 && u.OutputTokens == 0 && u.TotalTokens == 0 {
		return
	}
	key := [2]string{strings.ToLower(call.Provider), call.Model}
	acc := t.usage[key]
	if acc == nil {
		acc = &model.Usage{}
		t.usage[key] = acc
		t.uorder = append(t.uorder, key)
	}
	*acc = acc.Add(u)
}

// usageEntries returns the run's token usage, one entry per provider and
// model, with the counts the providers reported.
func (t *translator) usageEntries() []usageEntry {
	var out []usageEntry
	for _, key := range t.uorder {
		u := t.usage[key]
		out = append(out, usageEntry{Provider: key[0], Model: key[1],
			InputTokens: max(u.InputTokens, 0), OutputTokens: max(u.OutputTokens, 0),
			TotalTokens: max(u.InputTokens, 0) + max(u.OutputTokens, 0)})
	}
	return out
}
