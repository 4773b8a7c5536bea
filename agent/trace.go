package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// Tracer writes the events of a run as readable lines, one per event that
// matters to a person watching: model calls with their token usage, tool
// calls with their arguments, status and duration, what the agents say,
// custom events, handoff retries, interrupts, failures, and the final answer.
// Each line starts with who it is about — the streamed graph's name, then
// the Path of nested graphs and handoffs ("supervisor › researcher") —
// indented by the depth of nesting:
//
//	supervisor ◆ model gpt-4o · 412 in / 38 out tokens · 1.2s
//	supervisor → researcher {"task":"Find three facts about Go's garbage collector"}
//	  supervisor › researcher → search {"query":"Go garbage collector"}
//	  supervisor › researcher ✓ search · 3ms: Go's collector is concurrent and non-generational…
//
// Durations are rounded (to the millisecond unless TraceDurations says
// otherwise) and can be left out, which makes the output of a scripted run
// deterministic. A Tracer is safe for concurrent use.
type Tracer struct {
	mu     sync.Mutex
	w      io.Writer
	round  time.Duration
	nodes  bool
	width  int
	root   string
	spoken map[string]string // ID of the last message printed, by label
	agents map[string]string // the agent whose model ran last, by label
	models int               // model calls seen
	tools  int               // tool calls seen
	usage  model.Usage       // tokens of all model calls
	start  time.Time         // time of the first event
	err    error
}

// TraceOption configures a Tracer.
type TraceOption func(*Tracer)

// TraceDurations rounds durations to round; zero or less leaves them out.
func TraceDurations(round time.Duration) TraceOption {
	return func(t *Tracer) { t.round = round }
}

// TraceNodes adds a line for every node that starts and ends. Without it,
// only nodes that fail get a line.
func TraceNodes() TraceOption { return func(t *Tracer) { t.nodes = true } }

// TraceWidth cuts texts (arguments, results, messages) to n characters,
// followed by "…" (80 unless set; zero or less does not cut). The final
// answer is never cut.
func TraceWidth(n int) TraceOption { return func(t *Tracer) { t.width = n } }

// TraceRoot names the streamed graph in the lines (its name, from the events,
// unless set).
func TraceRoot(name string) TraceOption { return func(t *Tracer) { t.root = name } }

// errNoWriter is the error of a Tracer without a writer.
var errNoWriter = errors.New("agent: the tracer has no writer")

// NewTracer returns a Tracer that writes to w. With a nil w it writes
// nothing, and Err says why.
func NewTracer(w io.Writer, opts ...TraceOption) *Tracer {
	t := &Tracer{w: w, round: time.Millisecond, width: 80, spoken: map[string]string{}, agents: map[string]string{}}
	if w == nil {
		t.err = errNoWriter
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// PrintTrace writes the events of seq with a Tracer (see NewTracer) and
// returns the run's final state (the State of its KindDone event) and the
// stream's error. The error ends the trace with a line saying what happened.
// Without a writer or a stream it runs nothing and returns an error.
func PrintTrace(w io.Writer, seq iter.Seq2[graph.Event, error], opts ...TraceOption) (final any, err error) {
	switch {
	case w == nil:
		return nil, errNoWriter
	case seq == nil:
		return nil, errors.New("agent: PrintTrace has no stream")
	}
	t := NewTracer(w, opts...)
	for ev, err := range seq {
		if err != nil {
			t.Fail(err)
			return final, err
		}
		if ev.Kind == graph.KindDone {
			final = ev.State
		}
		t.Print(ev)
	}
	return final, t.Err()
}

// Err returns the first error met writing the trace.
func (t *Tracer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Fail writes a line for the error that ended a run. An interrupt is not a
// failure: the line says the run is waiting.
func (t *Tracer) Fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if errors.Is(err, graph.ErrInterrupted) {
		t.line(0, t.label(nil), "⏸", "the run is waiting to be resumed")
		return
	}
	t.line(0, t.label(nil), "✗", "run failed: "+oneLine(err.Error()))
}

// Print writes the lines for one event, if it has any.
func (t *Tracer) Print(ev graph.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(ev.Path) == 0 && t.root == "" {
		t.root = ev.Graph
	}
	if t.start.IsZero() {
		t.start = ev.Time
	}
	depth, base := len(ev.Path), t.label(ev.Path)
	if ev.Kind == nodes.KindModelStart {
		if call, ok := ev.Payload.(nodes.ModelCall); ok {
			t.agents[base] = call.Agent
		}
		return
	}
	who := base
	if a := t.agents[base]; a != "" && a != lastOf(base) {
		// Several agents share the graph (a swarm): say which one.
		who = base + " › " + a
	}
	switch ev.Kind {
	case graph.KindNodeStart:
		if t.nodes {
			t.line(depth, who, "▶", "node "+ev.Node)
		}
	case graph.KindNodeEnd:
		switch {
		case !t.nodes:
		case ev.Err != nil && errors.Is(ev.Err, graph.ErrInterrupted):
			t.line(depth, who, "■", "node "+ev.Node+" interrupted"+t.took(ev.Duration))
		case ev.Err != nil:
			t.line(depth, who, "✗", "node "+ev.Node+" failed"+t.took(ev.Duration)+": "+t.cut(ev.Err.Error()))
		default:
			t.line(depth, who, "■", "node "+ev.Node+t.took(ev.Duration))
		}
	case nodes.KindModelEnd:
		call, _ := ev.Payload.(nodes.ModelCall)
		t.models++
		t.usage = t.usage.Add(call.Usage)
		name := call.Model
		if name == "" {
			name = call.Provider
		}
		if ev.Err != nil {
			t.line(depth, who, "✗", "model "+name+" failed"+t.took(ev.Duration)+": "+t.cut(ev.Err.Error()))
			return
		}
		text := "model " + name
		if u := call.Usage; u.InputTokens != 0 || u.OutputTokens != 0 {
			text += fmt.Sprintf(" · %d in / %d out tokens", u.InputTokens, u.OutputTokens)
		}
		t.line(depth, who, "◆", text+t.took(ev.Duration))
	case graph.KindUpdate:
		t.say(ev, depth, who)
	case nodes.KindToolStart:
		if e, ok := ev.Payload.(executor.Event); ok {
			t.line(depth, who, "→", e.Call.Name+" "+t.cut(compactJSON(e.Call.Arguments)))
		}
	case nodes.KindToolUpdate:
		if e, ok := ev.Payload.(executor.Event); ok {
			text := e.Update.Message
			if text == "" {
				text = tool.Result{Content: e.Update.Content}.Text()
			}
			t.line(depth, who, "…", e.Call.Name+": "+t.cut(text))
		}
	case nodes.KindToolEnd:
		if e, ok := ev.Payload.(executor.Event); ok {
			t.tools++
			if errors.Is(e.Result.Err, graph.ErrInterrupted) {
				t.line(depth, who, "⏸", e.Call.Name+" waits for input")
				return
			}
			mark, status := "✓", ""
			if e.Result.IsError {
				mark, status = "✗", " "+string(e.Result.Status)
			}
			t.line(depth, who, mark, e.Call.Name+status+t.took(e.Duration)+": "+t.cut(e.Result.Text()))
		}
	case graph.KindCustom:
		if r, ok := ev.Payload.(handoff.Retry); ok {
			t.line(depth, who, "↻", fmt.Sprintf("%s failed (attempt %d), retrying%s: %s", r.Agent, r.Attempt, t.after(r.Wait), t.cut(r.Err)))
			return
		}
		t.line(depth, who, "•", ev.Name+": "+t.cut(payloadText(ev.Payload)))
	case graph.KindInterrupt:
		ins, _ := ev.Payload.([]graph.PendingInterrupt)
		for _, in := range ins {
			where := t.label(in.Path)
			t.line(len(in.Path), where, "⏸", "interrupted at "+in.Node+": "+t.cut(payloadText(in.Payload)))
		}
	case graph.KindDone:
		if depth > 0 {
			return
		}
		if msgs, ok := chatOf(ev.State); ok {
			if last, ok := model.LastAssistant(msgs); ok && last.Text() != "" && !t.spoke(who, last) {
				t.text(0, who, "»", last.Text())
			}
		}
		t.line(0, who, "■", "done"+t.summary(ev.Time))
	}
}

// summary counts the calls of the run and, with durations, its time.
func (t *Tracer) summary(end time.Time) string {
	var parts []string
	if t.models > 0 {
		calls := plural(t.models, "model call")
		if u := t.usage; u.InputTokens != 0 || u.OutputTokens != 0 {
			calls += fmt.Sprintf(" (%d in / %d out tokens)", u.InputTokens, u.OutputTokens)
		}
		parts = append(parts, calls)
	}
	if t.tools > 0 {
		parts = append(parts, plural(t.tools, "tool call"))
	}
	if t.round > 0 && !t.start.IsZero() && !end.IsZero() {
		parts = append(parts, t.duration(end.Sub(t.start)))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, " · ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// say writes what an agent's model node said, once per message: in full
// at the top level when it is an answer (no tool calls), cut otherwise.
func (t *Tracer) say(ev graph.Event, depth int, who string) {
	msgs, ok := chatOf(ev.State)
	if !ok || len(msgs) == 0 {
		return
	}
	last := msgs[len(msgs)-1]
	if last.Role != model.RoleAssistant || t.spoke(who, last) {
		return
	}
	if last.ID != "" {
		t.spoken[who] = last.ID
	}
	if thought := strings.TrimSpace(last.Reasoning()); thought != "" {
		t.line(depth, who, "∴", "thinks: "+t.cut(thought))
	}
	text := strings.TrimSpace(last.Text())
	switch {
	case text == "":
	case depth == 0 && !last.HasToolCalls():
		t.text(depth, who, "»", text)
	default:
		t.line(depth, who, "»", t.cut(text))
	}
}

// spoke reports whether m is the last message printed for who.
func (t *Tracer) spoke(who string, m model.Message) bool {
	return m.ID != "" && t.spoken[who] == m.ID
}

// text writes a text of several lines, the later ones indented.
func (t *Tracer) text(depth int, who, mark, text string) {
	indent := strings.Repeat("  ", depth+1)
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i, l := range lines[1:] {
		if l = strings.TrimRightFunc(l, unicode.IsSpace); l != "" {
			l = indent + l
		}
		lines[i+1] = l
	}
	t.line(depth, who, mark, strings.Join(lines, "\n"))
}

// label names whoever a line is about: the streamed graph, then the path.
func (t *Tracer) label(path []string) string {
	root := t.root
	if root == "" {
		root = "run"
	}
	if len(path) == 0 {
		return root
	}
	return root + " › " + strings.Join(path, " › ")
}

func (t *Tracer) line(depth int, who, mark, text string) {
	if t.err != nil {
		return
	}
	_, t.err = fmt.Fprintf(t.w, "%s%s %s %s\n", strings.Repeat("  ", depth), who, mark, text)
}

// took formats a duration as " · 12ms", or nothing.
func (t *Tracer) took(d time.Duration) string {
	if t.round <= 0 {
		return ""
	}
	return " · " + t.duration(d)
}

// duration rounds d; one shorter than the rounding reads "<1ms".
func (t *Tracer) duration(d time.Duration) string {
	if d > 0 && d < t.round {
		return "<" + t.round.String()
	}
	return d.Round(t.round).String()
}

// after formats a wait as " in 10ms", or nothing.
func (t *Tracer) after(d time.Duration) string {
	if t.round <= 0 || d <= 0 {
		return ""
	}
	return " in " + t.duration(d)
}

// cut puts text on one line and shortens it to the tracer's width.
func (t *Tracer) cut(text string) string {
	text = oneLine(text)
	if t.width <= 0 || utf8.RuneCountInString(text) <= t.width {
		return text
	}
	r := []rune(text)
	return strings.TrimSpace(string(r[:t.width])) + "…"
}

// lastOf returns the last element of a label.
func lastOf(label string) string {
	if i := strings.LastIndex(label, " › "); i >= 0 {
		return label[i+len(" › "):]
	}
	return label
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func payloadText(p any) string {
	switch v := p.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.RawMessage:
		return compactJSON(v)
	case fmt.Stringer:
		return v.String()
	case error:
		return v.Error()
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Sprint(p)
	}
	return string(b)
}

// chatOf returns the conversation of a state that has one.
func chatOf(s any) ([]model.Message, bool) {
	switch v := s.(type) {
	case nil:
		return nil, false
	case State:
		return v.Messages, true
	case SwarmState:
		return v.Messages, true
	case nodes.HasChat:
		return *v.ChatMessages(), true
	}
	rv := reflect.ValueOf(s)
	p := reflect.New(rv.Type())
	p.Elem().Set(rv)
	if hc, ok := p.Interface().(nodes.HasChat); ok {
		return *hc.ChatMessages(), true
	}
	return nil, false
}
