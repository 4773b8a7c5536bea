package agui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
)

// translator turns the events of one run into AG-UI events. The run's own
// graph (events with an empty Path) streams messages, tool calls and
// steps; nested runs (the agents of handoff tools) count only for usage.
type translator struct {
	h   *Handler
	in  *RunInput
	out *sink

	models  map[string][]*modelStream // open model calls, by node
	partial map[string]*modelStream   // replies shown in part, by message ID
	steps   map[string]int            // open steps, by name
	started map[string]bool           // tool call IDs the client knows
	ours    map[string]bool           // tool call IDs this run's stream started
	results map[string]bool           // tool call IDs the client has answers to
	known   map[string]bool           // message IDs the client holds or was sent
	usage   map[[2]string]*model.Usage
	uorder  [][2]string
	last    any    // the state after the last superstep
	view    []byte // the last STATE_SNAPSHOT sent
}

// modelStream is a model call of the run's graph whose reply streams.
type modelStream struct {
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
	t := &translator{h: h, in: in, out: out,
		models: map[string][]*modelStream{}, partial: map[string]*modelStream{}, steps: map[string]int{},
		started: map[string]bool{}, ours: map[string]bool{}, results: map[string]bool{}, known: map[string]bool{},
		usage: map[[2]string]*model.Usage{}}
	for _, m := range in.Messages {
		t.known[m.ID] = true
		for _, c := range m.ToolCalls {
			t.started[c.ID] = true
		}
		if m.Role == "tool" {
			t.results[m.ToolCallID] = true
		}
	}
	for i, m := range held {
		t.known[messageID(i, m)] = true
		for _, c := range m.ToolCalls {
			t.started[c.ID] = true
		}
		if m.Role == model.RoleTool {
			t.results[m.ToolCallID] = true
		}
	}
	return t
}

func (t *translator) send(typ string, kv ...any) {
	ev := make(map[string]any, len(kv)/2+2)
	ev["type"] = typ
	ev["timestamp"] = time.Now().UnixMilli()
	for i := 0; i+1 < len(kv); i += 2 {
		ev[kv[i].(string)] = kv[i+1]
	}
	t.out.send(ev)
}

// run streams the run: RUN_STARTED, the run's events, and RUN_FINISHED or
// RUN_ERROR. A panic while translating is reported as RUN_ERROR.
func (t *translator) run(seq iter.Seq2[graph.Event, error]) {
	started := []any{"threadId", t.in.ThreadID, "runId", t.in.RunID, "protocolVersion", ProtocolVersion}
	if t.in.ParentRunID != "" {
		started = append(started, "parentRunId", t.in.ParentRunID)
	}
	t.send("RUN_STARTED", started...)
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
	t.closeAll()
	if final != nil && !t.h.cfg.noSnap {
		if msgs, ok := t.h.runner.messages(final); ok {
			t.send("MESSAGES_SNAPSHOT", "messages", fromModel(msgs))
		}
	}
	finished := []any{"threadId", t.in.ThreadID, "runId", t.in.RunID}
	if u := t.usageEntries(); len(u) > 0 {
		finished = append(finished, "usage", u)
	}
	if interrupted {
		var pending []string
		var asks []Interrupt
		for _, in := range ie.Interrupts {
			if calls, ok := pendingCalls(in); ok && len(in.Path) == 0 {
				for _, c := range calls {
					pending = append(pending, c.ID)
				}
				continue
			}
			d := t.h.cfg.interrupt(in)
			d.ID = in.ID
			asks = append(asks, d)
		}
		switch {
		case len(asks) > 0:
			finished = append(finished, "outcome", map[string]any{"type": "interrupt", "interrupts": asks})
		case len(pending) > 0:
			finished = append(finished, "outcome", map[string]any{"type": "success", "pendingToolCallIds": pending})
		default:
			finished = append(finished, "outcome", map[string]any{"type": "success"})
		}
	} else {
		finished = append(finished, "outcome", map[string]any{"type": "success"})
	}
	t.send("RUN_FINISHED", finished...)
}

// fail ends the run with RUN_ERROR.
func (t *translator) fail(err error) {
	code := "agent_error"
	var hop *nodes.HopLimitError
	switch {
	case errors.As(err, &hop):
		code = "hop_limit"
	case errors.Is(err, context.Canceled):
		code = "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		code = "timeout"
	case errors.Is(err, graph.ErrThreadBusy):
		code = "thread_busy"
	}
	kv := []any{"message", t.h.cfg.errorText(err), "code", code}
	if u := t.usageEntries(); len(u) > 0 {
		kv = append(kv, "usage", u)
	}
	t.send("RUN_ERROR", kv...)
}

// event translates one event of the run.
func (t *translator) event(ev graph.Event) {
	if ev.Kind == nodes.KindModelEnd {
		if call, ok := ev.Payload.(nodes.ModelCall); ok {
			t.addUsage(call)
		}
	}
	if len(ev.Path) > 0 {
		return
	}
	switch ev.Kind {
	case graph.KindNodeStart:
		if t.steps[ev.Node]++; t.steps[ev.Node] == 1 {
			t.send("STEP_STARTED", "stepName", ev.Node)
		}
	case graph.KindNodeEnd:
		if t.steps[ev.Node] > 0 {
			if t.steps[ev.Node]--; t.steps[ev.Node] == 0 {
				delete(t.steps, ev.Node)
				t.send("STEP_FINISHED", "stepName", ev.Node)
			}
		}
	case nodes.KindModelStart:
		if call, ok := ev.Payload.(nodes.ModelCall); ok && call.MessageID != "" {
			ms := &modelStream{msgID: call.MessageID, name: call.Agent, calls: map[int]*callStream{}}
			if open := t.models[ev.Node]; len(open) > 0 {
				// Calls of one node at once (the tasks of a fan-out): their
				// chunks carry nothing that tells them apart.
				ms.shared = true
				for _, o := range open {
					t.share(o)
				}
			}
			t.models[ev.Node] = append(t.models[ev.Node], ms)
		}
	case nodes.KindModelDelta:
		if chunk, ok := ev.Payload.(model.Chunk); ok {
			if open := t.models[ev.Node]; len(open) == 1 && !open[0].shared {
				t.delta(open[0], chunk)
			}
		}
	case nodes.KindModelEnd:
		call, _ := ev.Payload.(nodes.ModelCall)
		open := t.models[ev.Node]
		for i, ms := range open {
			if ms.msgID == call.MessageID || call.MessageID == "" && len(open) == 1 {
				t.endModel(ms)
				open = slices.Delete(open, i, i+1)
				break
			}
		}
		if len(open) == 0 {
			delete(t.models, ev.Node)
		} else {
			t.models[ev.Node] = open
		}
	case nodes.KindToolEnd:
		// A call that paused the run (a question for the user) or that
		// goes on in the background has no result yet: its tool message,
		// if the state gets one, is shown from the state.
		if e, ok := ev.Payload.(executor.Event); ok && !e.Result.Pending && !errors.Is(e.Result.Err, graph.ErrInterrupted) {
			t.toolResult(e.Call, nodes.ToolMessageID(e.Call.ID), e.Result.Content)
		}
	case graph.KindValues:
		t.last = ev.State
		t.reconcile(ev.State)
	}
}

// delta streams a chunk of a model's reply.
func (t *translator) delta(ms *modelStream, c model.Chunk) {
	if r := c.Reasoning; r != nil && r.Text != "" {
		if !ms.spanOpen {
			ms.spanOpen = true
			ms.spans++
			t.send("REASONING_START", "messageId", ms.spanID())
		}
		id := ms.msgID + ":reasoning:" + strconv.Itoa(r.Index)
		if !slices.Contains(ms.reasoning, r.Index) {
			ms.reasoning = append(ms.reasoning, r.Index)
			t.send("REASONING_MESSAGE_START", "messageId", id, "role", "reasoning")
		}
		t.send("REASONING_MESSAGE_CONTENT", "messageId", id, "delta", r.Text)
	}
	if c.Text != "" {
		t.endReasoning(ms)
		if !ms.textOpen {
			ms.textOpen = true
			t.known[ms.msgID] = true
			kv := []any{"messageId", ms.msgID, "role", "assistant"}
			if ms.name != "" {
				kv = append(kv, "name", ms.name)
			}
			t.send("TEXT_MESSAGE_START", kv...)
		}
		ms.text.WriteString(c.Text)
		t.send("TEXT_MESSAGE_CONTENT", "messageId", ms.msgID, "delta", c.Text)
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
				t.send("TOOL_CALL_ARGS", "toolCallId", cs.id, "delta", d.Arguments)
			}
			return
		}
		if cs.id != "" && cs.name != "" && !t.started[cs.id] {
			cs.started = true
			t.started[cs.id], t.ours[cs.id] = true, true
			t.send("TOOL_CALL_START", "toolCallId", cs.id, "toolCallName", cs.name, "parentMessageId", ms.msgID)
			if cs.args.Len() > 0 {
				t.send("TOOL_CALL_ARGS", "toolCallId", cs.id, "delta", cs.args.String())
			}
		}
	}
}

func (t *translator) endReasoning(ms *modelStream) {
	for _, i := range ms.reasoning {
		t.send("REASONING_MESSAGE_END", "messageId", ms.msgID+":reasoning:"+strconv.Itoa(i))
	}
	ms.reasoning = nil
	if ms.spanOpen {
		ms.spanOpen = false
		t.send("REASONING_END", "messageId", ms.spanID())
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
		t.send("TEXT_MESSAGE_END", "messageId", ms.msgID)
	}
	for _, cs := range ms.order {
		if cs.started && !cs.closed {
			cs.closed = true
			t.send("TOOL_CALL_END", "toolCallId", cs.id)
		}
	}
	if ms.shared {
		t.partial[ms.msgID] = ms
	}
}

// closeAll closes what is still open before the run's end.
func (t *translator) closeAll() {
	for _, node := range slices.Sorted(maps.Keys(t.models)) {
		for _, ms := range t.models[node] {
			t.endModel(ms)
		}
	}
	clear(t.models)
	for _, name := range slices.Sorted(maps.Keys(t.steps)) {
		t.send("STEP_FINISHED", "stepName", name)
	}
	clear(t.steps)
}

// toolResult sends the result of a call the agent ran, once, starting the
// call first if the stream has not (a reply that did not stream). The
// answers to calls of earlier runs (a question the user answered, a call
// of the application's tools) are not streamed: the client has them, or
// gets them in the closing MESSAGES_SNAPSHOT.
func (t *translator) toolResult(call model.ToolCall, msgID string, content []model.Part) {
	if t.results[call.ID] || t.started[call.ID] && !t.ours[call.ID] {
		return
	}
	t.startCall("", call)
	t.results[call.ID] = true
	t.known[msgID] = true
	t.send("TOOL_CALL_RESULT", "messageId", msgID, "toolCallId", call.ID, "role", "tool", "content", contentOf(content))
}

// startCall sends the whole triad of a call that has not been streamed.
func (t *translator) startCall(parent string, c model.ToolCall) {
	if t.started[c.ID] {
		return
	}
	t.started[c.ID], t.ours[c.ID] = true, true
	kv := []any{"toolCallId", c.ID, "toolCallName", c.Name}
	if parent != "" {
		kv = append(kv, "parentMessageId", parent)
	}
	t.send("TOOL_CALL_START", kv...)
	t.send("TOOL_CALL_ARGS", "toolCallId", c.ID, "delta", string(c.Arguments))
	t.send("TOOL_CALL_END", "toolCallId", c.ID)
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
				t.startCall(id, c)
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
			if name != "" || t.started[m.ToolCallID] {
				t.toolResult(model.ToolCall{ID: m.ToolCallID, Name: name}, id, m.Content)
			}
			continue
		case model.RoleAssistant:
			if text := m.Text(); text != "" {
				t.textMessage(id, "assistant", m.Name, text)
			}
			for _, c := range m.ToolCalls {
				t.startCall(id, c)
			}
		case model.RoleUser:
			t.textMessage(id, "user", m.Name, m.Text())
		case model.RoleSystem:
			t.textMessage(id, "system", m.Name, m.Text())
		}
	}
	if view, ok := t.h.runner.view(st); ok {
		b, err := json.Marshal(view)
		if err == nil && !bytes.Equal(b, t.view) {
			t.view = b
			t.send("STATE_SNAPSHOT", "snapshot", json.RawMessage(b))
		}
	}
}

func (t *translator) streaming(msgID string) bool {
	for _, open := range t.models {
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
		kv := []any{"messageId", ms.msgID, "role", "assistant"}
		if ms.name != "" {
			kv = append(kv, "name", ms.name)
		}
		t.send("TEXT_MESSAGE_START", kv...)
		t.send("TEXT_MESSAGE_CONTENT", "messageId", ms.msgID, "delta", text[len(sent):])
		t.send("TEXT_MESSAGE_END", "messageId", ms.msgID)
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
			t.startCall(ms.msgID, c)
			continue
		}
		args, sent := string(c.Arguments), cs.args.String()
		if len(args) > len(sent) && strings.HasPrefix(args, sent) {
			t.send("TOOL_CALL_START", "toolCallId", cs.id, "toolCallName", cs.name, "parentMessageId", ms.msgID)
			t.send("TOOL_CALL_ARGS", "toolCallId", cs.id, "delta", args[len(sent):])
			t.send("TOOL_CALL_END", "toolCallId", cs.id)
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
	kv := []any{"messageId", id, "role", role}
	if name != "" {
		kv = append(kv, "name", name)
	}
	t.send("TEXT_MESSAGE_START", kv...)
	t.send("TEXT_MESSAGE_CONTENT", "messageId", id, "delta", text)
	t.send("TEXT_MESSAGE_END", "messageId", id)
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
func (t *translator) usageEntries() []map[string]any {
	var out []map[string]any
	for _, key := range t.uorder {
		u := t.usage[key]
		e := map[string]any{}
		if key[0] != "" {
			e["provider"] = key[0]
		}
		if key[1] != "" {
			e["model"] = key[1]
		}
		if u.InputTokens > 0 {
			e["inputTokens"] = u.InputTokens
		}
		if u.OutputTokens > 0 {
			e["outputTokens"] = u.OutputTokens
		}
		if u.InputTokens > 0 || u.OutputTokens > 0 {
			e["totalTokens"] = u.InputTokens + u.OutputTokens
		}
		out = append(out, e)
	}
	return out
}
