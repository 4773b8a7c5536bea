package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/runs"
)

// The stream modes of the API.
const (
	modeValues        = "values"
	modeUpdates       = "updates"
	modeMessages      = "messages"
	modeMessagesTuple = "messages-tuple"
	modeCustom        = "custom"
	modeEvents        = "events"
	modeDebug         = "debug"
)

var knownModes = []string{modeValues, modeUpdates, modeMessages, modeMessagesTuple, modeCustom, modeEvents, modeDebug}

// parseModes reads stream_mode: a mode or a list of them ("values" when
// absent).
func parseModes(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return []string{modeValues}, nil
	}
	var list []string
	if raw[0] == '"' {
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, unprocessable("stream_mode is not a string or a list of strings")
		}
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, unprocessable("stream_mode is not a string or a list of strings")
	}
	if len(list) == 0 {
		return []string{modeValues}, nil
	}
	for _, m := range list {
		if !slices.Contains(knownModes, m) {
			return nil, unprocessable("stream_mode %q is not one of %s", cut(m, 32), strings.Join(knownModes, ", "))
		}
	}
	return list, nil
}

// recordedModes are the graph modes a run records so that its stream can
// be served in modes: the state after each superstep is always recorded
// (a wait's result, and what updates and messages are told against).
func recordedModes(modes []string) graph.Mode {
	// The debug mode's checkpoints tell the state a run started from
	// (what the first updates are told against).
	m := graph.ModeValues | graph.ModeUpdates | graph.ModeDebug
	for _, s := range modes {
		switch s {
		case modeMessages, modeMessagesTuple:
			m |= graph.ModeMessages | graph.ModeEvents
		case modeCustom:
			m |= graph.ModeCustom
		case modeEvents:
			m |= graph.ModeEvents | graph.ModeMessages | graph.ModeCustom
		case modeDebug:
			m |= graph.ModeDebug | graph.ModeEvents
		}
	}
	return m
}

// apiEvent is one server-sent event of the API, before encoding.
type apiEvent struct {
	event string
	data  any
}

// translator turns a run's recorded events into the API's stream events
// for a set of modes. It keeps what later events are told against (the
// last state, the replies being streamed), so a stream resumed after an
// event is translated from the run's first event, with the events up to
// the resumption point translated and not sent.
type translator struct {
	run, thread string
	fields      map[string]string // the state's fields: engine name → JSON name
	modes       map[string]bool
	subgraphs   bool
	// load reads the state at a checkpoint of the run's thread (nil when
	// it cannot).
	load func(checkpoint string) json.RawMessage

	values    map[string]json.RawMessage // the top-level state after the last superstep
	replies   map[string]*accumulated    // replies being streamed, by "path/node"
	completed map[string]bool            // message IDs told complete
	meta      map[string]bool            // message IDs whose metadata was told
}

func newTranslator(run, thread string, fields map[string]string, modes []string, subgraphs bool) *translator {
	t := &translator{run: run, thread: thread, fields: fields, modes: map[string]bool{}, subgraphs: subgraphs,
		replies: map[string]*accumulated{}, completed: map[string]bool{}, meta: map[string]bool{}}
	for _, m := range modes {
		t.modes[m] = true
	}
	return t
}

// name is the event name of mode for an event at path: with subgraphs,
// events of nested graphs are "mode|ns1|ns2".
func (t *translator) name(mode string, path []string) string {
	if len(path) == 0 {
		return mode
	}
	return mode + "|" + strings.Join(path, "|")
}

// visible says whether an event at path is streamed at all.
func (t *translator) visible(path []string) bool { return len(path) == 0 || t.subgraphs }

func (t *translator) translate(ev runs.Event) []apiEvent {
	var out []apiEvent
	emit := func(mode string, data any) { out = append(out, apiEvent{event: t.name(mode, ev.Path), data: data}) }
	top := len(ev.Path) == 0
	switch ev.Kind {
	case graph.KindValues:
		if top {
			var obj map[string]json.RawMessage
			if json.Unmarshal(ev.State, &obj) == nil {
				if t.modes[modeMessages] {
					out = append(out, t.complete(obj)...)
				}
				t.values = obj
			}
		}
		if t.modes[modeValues] && t.visible(ev.Path) {
			emit(modeValues, stateOut(ev.State))
		}
	case graph.KindUpdate:
		if t.modes[modeUpdates] && t.visible(ev.Path) {
			emit(modeUpdates, map[string]any{ev.Node: t.update(ev)})
		}
	case graph.KindCustom:
		if t.modes[modeCustom] && t.visible(ev.Path) {
			emit(modeCustom, ev.Payload)
		}
	case graph.KindInterrupt:
		if !t.visible(ev.Path) && len(ev.Interrupts) == 0 {
			break
		}
		list := make([]map[string]any, 0, len(ev.Interrupts))
		for _, p := range ev.Interrupts {
			list = append(list, interruptJSON(p))
		}
		// The reference server reports an interrupt as a chunk of the
		// values and updates modes: {"__interrupt__": [...]}.
		if t.modes[modeValues] {
			out = append(out, apiEvent{event: modeValues, data: map[string]any{"__interrupt__": list}})
		}
		if t.modes[modeUpdates] {
			out = append(out, apiEvent{event: modeUpdates, data: map[string]any{"__interrupt__": list}})
		}
	case nodes.KindModelStart:
		var call nodes.ModelCall
		if json.Unmarshal(ev.Payload, &call) == nil {
			t.replies[replyKey(ev)] = &accumulated{id: call.MessageID}
		}
	case nodes.KindModelDelta:
		out = append(out, t.delta(ev)...)
	case graph.KindStepStart:
		if t.modes[modeDebug] && t.visible(ev.Path) {
			for _, n := range ev.Nodes {
				emit(modeDebug, map[string]any{"type": "task", "timestamp": timeJSON(ev.Time), "step": ev.Step,
					"payload": map[string]any{"id": fmt.Sprintf("%d:%s", ev.Step, n), "name": n, "input": nil, "triggers": []string{}}})
			}
		}
	case graph.KindNodeEnd:
		if t.modes[modeDebug] && t.visible(ev.Path) {
			var errMsg any
			if ev.Error != "" {
				errMsg = cut(firstLine(ev.Error), 500)
			}
			emit(modeDebug, map[string]any{"type": "task_result", "timestamp": timeJSON(ev.Time), "step": ev.Step,
				"payload": map[string]any{"id": fmt.Sprintf("%d:%s", ev.Step, ev.Node), "name": ev.Node, "error": errMsg,
					"result": []any{}, "interrupts": []any{}, "duration_ms": ev.DurationMS}})
		}
	case graph.KindCheckpoint:
		if top && t.values == nil && ev.Step < 0 && t.load != nil {
			// The run's input, written to the thread's state: the state
			// the run starts from, which the reference server streams
			// first.
			if st := t.load(ev.Name); st != nil {
				var obj map[string]json.RawMessage
				if json.Unmarshal(st, &obj) == nil {
					t.complete(obj) // the messages it starts with are not the run's
					t.values = obj
					if t.modes[modeValues] {
						emit(modeValues, stateOut(st))
					}
				}
			}
		}
		if t.modes[modeDebug] && t.visible(ev.Path) {
			var values any = map[string]any{}
			if t.values != nil && top {
				b, _ := json.Marshal(t.values)
				values = stateOut(b)
			}
			next := ev.Nodes
			if next == nil {
				next = []string{}
			}
			emit(modeDebug, map[string]any{"type": "checkpoint", "timestamp": timeJSON(ev.Time), "step": ev.Step,
				"payload": map[string]any{
					"config":   map[string]any{"configurable": map[string]any{"thread_id": t.thread, "checkpoint_ns": strings.Join(ev.Path, "|"), "checkpoint_id": ev.Name}},
					"values":   values,
					"metadata": map[string]any{"step": ev.Step, "source": "loop"},
					"next":     next, "tasks": []any{},
				}})
		}
	}
	if t.modes[modeEvents] && t.visible(ev.Path) {
		if e := langchainEvent(ev, t.run); e != nil {
			emit(modeEvents, e)
		}
	}
	return out
}

func replyKey(ev runs.Event) string { return strings.Join(ev.Path, "/") + "/" + ev.Node }

// delta tells a chunk of a reply: as a message chunk with its metadata
// (messages-tuple), and as the reply so far (messages).
func (t *translator) delta(ev runs.Event) []apiEvent {
	var out []apiEvent
	var c model.Chunk
	if json.Unmarshal(ev.Payload, &c) != nil {
		return nil
	}
	rep := t.replies[replyKey(ev)]
	if rep == nil {
		rep = &accumulated{}
		t.replies[replyKey(ev)] = rep
	}
	rep.acc.Add(c)
	rep.n++
	if !t.visible(ev.Path) {
		return nil
	}
	meta := map[string]any{"langgraph_node": ev.Node, "langgraph_step": ev.Step, "langgraph_path": append([]string{}, ev.Path...),
		"run_id": t.run, "thread_id": t.thread, "tags": []string{}}
	if t.modes[modeMessagesTuple] {
		out = append(out, apiEvent{event: t.name(modeMessages, ev.Path), data: []any{chunkMessage(rep.id, c), meta}})
	}
	if t.modes[modeMessages] {
		if !t.meta[rep.id] {
			t.meta[rep.id] = true
			out = append(out, apiEvent{event: t.name("messages/metadata", ev.Path), data: map[string]any{rep.id: map[string]any{"metadata": meta}}})
		}
		out = append(out, apiEvent{event: t.name("messages/partial", ev.Path), data: []lcMessage{rep.message()}})
	}
	return out
}

// complete tells the messages of a new state that were not told complete
// before (messages mode).
func (t *translator) complete(obj map[string]json.RawMessage) []apiEvent {
	list, ok := obj[messagesField]
	if !ok {
		return nil
	}
	var msgs []model.Message
	if json.Unmarshal(list, &msgs) != nil {
		return nil
	}
	var done []lcMessage
	for _, m := range msgs {
		if m.ID == "" || t.completed[m.ID] {
			continue
		}
		t.completed[m.ID] = true
		done = append(done, toLangChain(m))
	}
	if len(done) == 0 {
		return nil
	}
	return []apiEvent{{event: "messages/complete", data: done}}
}

// update is what a node wrote: the fields it wrote, with, for a list,
// only the elements the state did not hold before the superstep.
func (t *translator) update(ev runs.Event) any {
	var obj map[string]json.RawMessage
	if json.Unmarshal(ev.State, &obj) != nil {
		return ev.State
	}
	keys := map[string]bool{}
	for _, f := range ev.Fields {
		// The engine names fields by their Go names (with the path of an
		// embedded struct). Fields of nested graphs' states, which the
		// map does not know, match their JSON names without regard to
		// case (as encoding/json matches them).
		if n, ok := t.fields[f]; ok && len(ev.Path) == 0 {
			keys[strings.ToLower(n)] = true
			continue
		}
		if i := strings.LastIndexByte(f, '.'); i >= 0 {
			f = f[i+1:]
		}
		keys[strings.ToLower(f)] = true
	}
	out := map[string]json.RawMessage{}
	for k, v := range obj {
		if !keys[strings.ToLower(k)] {
			continue
		}
		if len(ev.Path) == 0 {
			v = added(t.values[k], v)
		}
		if k == messagesField {
			if conv, ok := messagesOut(v); ok {
				v = conv
			}
		}
		out[k] = v
	}
	return out
}

// added returns the elements of list after the ones it shares with before,
// when both are lists and before is a prefix of list; list otherwise.
func added(before, list json.RawMessage) json.RawMessage {
	if len(before) == 0 || len(list) == 0 || before[0] != '[' || list[0] != '[' {
		return list
	}
	var a, b []json.RawMessage
	if json.Unmarshal(before, &a) != nil || json.Unmarshal(list, &b) != nil || len(a) > len(b) {
		return list
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return list
		}
	}
	out, err := json.Marshal(b[len(a):])
	if err != nil {
		return list
	}
	return out
}

// langchainEvent is a recorded event in the "events" mode's form (the
// shape of LangChain's stream events), nil for events that have none.
func langchainEvent(ev runs.Event, run string) map[string]any {
	name, kind := ev.Node, ""
	data := map[string]any{}
	switch ev.Kind {
	case graph.KindNodeStart:
		kind = "on_chain_start"
	case graph.KindNodeEnd:
		kind = "on_chain_end"
		if ev.Error != "" {
			data["error"] = cut(firstLine(ev.Error), 500)
		}
	case graph.KindUpdate:
		kind = "on_chain_stream"
		data["chunk"] = stateOut(ev.State)
	case graph.KindCustom:
		kind, name = "on_custom_event", ev.Name
		data = map[string]any{"data": ev.Payload}
	case nodes.KindModelStart:
		kind = "on_chat_model_start"
		data["input"] = ev.Payload
	case nodes.KindModelDelta:
		var c model.Chunk
		_ = json.Unmarshal(ev.Payload, &c)
		kind = "on_chat_model_stream"
		data["chunk"] = chunkMessage("", c)
	case nodes.KindModelEnd:
		kind = "on_chat_model_end"
		data["output"] = ev.Payload
	case nodes.KindToolStart, nodes.KindToolEnd, nodes.KindToolUpdate:
		var te struct {
			Call struct {
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			Result   json.RawMessage
			Duration int64 // nanoseconds
		}
		_ = json.Unmarshal(ev.Payload, &te)
		name = te.Call.Name
		switch ev.Kind {
		case nodes.KindToolStart:
			kind = "on_tool_start"
			data["input"] = te.Call.Arguments
		case nodes.KindToolEnd:
			kind = "on_tool_end"
			data["output"] = te.Result
			data["duration_ms"] = float64(te.Duration) / 1e6
		default:
			kind = "on_tool_stream"
			data["chunk"] = ev.Payload
		}
		data["tool_call_id"] = te.Call.ID
	default:
		return nil
	}
	return map[string]any{"event": kind, "name": name, "run_id": run, "tags": []string{}, "parent_ids": []string{},
		"metadata": map[string]any{"langgraph_node": ev.Node, "langgraph_step": ev.Step, "langgraph_path": ev.Path}, "data": data}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
