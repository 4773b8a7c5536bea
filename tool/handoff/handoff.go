package handoff

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// State constrains the state types a handoff runs: S whose pointer holds a
// conversation, as every state embedding nodes.Chat does.
type State[S any] interface {
	*S
	ChatMessages() *[]model.Message
}

// Args are the arguments a model passes to a handoff tool.
type Args struct {
	// Task is what the agent is asked to do.
	Task string `json:"task" jsonschema:"minLength=1" jsonschema_description:"The task for the agent, stated so that it can be done without asking back."`
	// Context is what the agent needs to know for the task: facts, data,
	// earlier results.
	Context string `json:"context,omitempty" jsonschema_description:"Facts, data or earlier results the agent needs for the task (optional)."`
}

// Output is what one run of a handoff's agent produced. A handoff's result
// carries it in Details; validators receive it.
type Output struct {
	// Agent is the handoff's name.
	Agent string `json:"agent"`
	// Answer is the text of the agent's last assistant message (or, when
	// that has none, of the last message it added that has text).
	Answer string `json:"answer"`
	// Messages are the messages the agent added to its input, in order.
	Messages []model.Message `json:"messages"`
	// Attempts is the number of the attempt that produced the output
	// (from 1).
	Attempts int `json:"attempts"`
}

// EventRetry names the custom event (graph.ModeCustom) a handoff emits
// before it runs its agent again. Its payload is a Retry.
const EventRetry = "handoff_retry"

// Retry is the payload of an EventRetry event.
type Retry struct {
	// Agent is the handoff's name.
	Agent string `json:"agent"`
	// Attempt is the number of the attempt that failed (from 1).
	Attempt int `json:"attempt"`
	// Err is the attempt's error message.
	Err string `json:"error"`
	// Wait is the pause before the next attempt.
	Wait time.Duration `json:"wait"`
}

// New returns a tool named name that runs agent, a compiled graph, on the task
// the model gives it, and returns its answer. description tells the calling
// model what the agent does and when to use it. name also names the agent in
// the Path of its events and interrupts; it must be a valid tool name
// (letters, digits, '_' and '-', at most 64 characters).
//
// The graph is run with graph.Graph.Nested, keyed by the tool call's ID and
// what the agent is given, so that several calls of one handoff in a batch
// run side by side and each resumes its own run after an interrupt, and a
// call whose task changed in the caller's thread (on a fork, say) runs the
// agent on the new task.
func New[S any, PS State[S]](name, description string, agent *graph.Graph[S], opts ...Option) (tool.Tool, error) {
	if agent == nil {
		return nil, fmt.Errorf("%w: handoff %q: the agent's graph is nil", tool.ErrInvalidTool, name)
	}
	c := newConfig(opts)
	if c.dynSet {
		c.problems = append(c.problems, "WithoutInstruction, WithoutToolChoice and WithFieldDescriptions are options of NewDynamic")
	}
	if err := c.check(name); err != nil {
		return nil, err
	}
	r := &runner[S, PS]{name: name, cfg: c}
	return tool.NewFunc(name, description, func(ctx context.Context, in Args) (tool.Result, error) {
		return r.run(ctx, agent, TaskMessage(in.Task, in.Context), "")
	}, c.tool()...)
}

func (c *config) check(name string) error {
	if len(c.problems) > 0 {
		return fmt.Errorf("%w: handoff %q: %s", tool.ErrInvalidTool, name, strings.Join(c.problems, "; "))
	}
	return nil
}

// TaskMessage returns the user message an isolated agent receives: the task
// alone, or the context and the task under headings.
func TaskMessage(task, context string) model.Message {
	if strings.TrimSpace(context) == "" {
		return model.User(task)
	}
	return model.User("Context:\n" + context + "\n\nTask:\n" + task)
}

type depthKey struct{}

// Depth returns how many handoffs are running, one inside the other, where
// ctx belongs: 0 in a top-level run, 1 inside an agent a handoff runs, and so
// on.
func Depth(ctx context.Context) int {
	d, _ := ctx.Value(depthKey{}).(int)
	return d
}

// runner runs the agents of one handoff tool.
type runner[S any, PS State[S]] struct {
	name string
	cfg  config
}

// run runs g on the task, with retries, and turns its output into the
// tool's result. shape describes what else made g what it is (a dynamic
// agent's instruction and tools), "" for a fixed graph.
func (r *runner[S, PS]) run(ctx context.Context, g *graph.Graph[S], task model.Message, shape string) (tool.Result, error) {
	depth := Depth(ctx)
	if depth >= r.cfg.maxDepth {
		return tool.Result{}, &DepthError{Agent: r.name, Depth: depth, Limit: r.cfg.maxDepth}
	}
	hkey := ""
	if r.cfg.persist != nil {
		hkey = r.cfg.persist(ctx, task)
	}
	input, err := r.input(ctx, task, hkey)
	if err != nil {
		return tool.Result{}, fmt.Errorf("agent %q: %w", r.name, err)
	}
	key := runKey(tool.CallID(ctx), input, shape)
	ctx = context.WithValue(ctx, depthKey{}, depth+1)
	first, err := r.resumedAttempt(ctx, key)
	if err != nil {
		return tool.Result{}, fmt.Errorf("agent %q: %w", r.name, err)
	}
	for attempt := first; ; attempt++ {
		out, err := r.attempt(ctx, g, input, attemptKey(key, attempt), attempt)
		if err == nil {
			return r.result(out, task, hkey)
		}
		if !r.retryable(ctx, err, attempt) {
			if errors.Is(err, graph.ErrInterrupted) {
				return tool.Result{}, err
			}
			if attempt > 1 {
				return tool.Result{}, fmt.Errorf("agent %q failed %d times, last: %w", r.name, attempt, err)
			}
			return tool.Result{}, fmt.Errorf("agent %q: %w", r.name, err)
		}
		wait := r.cfg.wait(attempt)
		graph.EmitCustom(ctx, EventRetry, Retry{Agent: r.name, Attempt: attempt, Err: err.Error(), Wait: wait})
		if err := pause.Sleep(ctx, wait); err != nil {
			return tool.Result{}, fmt.Errorf("agent %q: waiting to retry: %w", r.name, err)
		}
	}
}

// runKey is the key of a call's nested runs: the call's ID, which tells
// the calls of a thread apart, and a digest of the agent's input and shape.
// A call whose task, shared history or shape was changed in the caller's
// thread (a fork from an earlier checkpoint, an update of a paused thread)
// keeps its ID; the digest makes it a new run rather than the resumption,
// or the replay, of the run made for what it asked before. Message IDs and
// metadata are left out: they do not change what the agent is asked. Without
// an ID (a call made outside a ToolsNode) the key is empty, and the runs
// belong to the calling task.
func runKey(callID string, input []model.Message, shape string) string {
	if callID == "" {
		return ""
	}
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, m := range input {
		m.ID, m.Metadata = "", nil
		if enc.Encode(m) != nil {
			_, _ = fmt.Fprintf(h, "%s\x00%s\x00%q\n", m.Role, m.Name, m.Text())
		}
	}
	_, _ = io.WriteString(h, shape)
	sum := h.Sum(nil)
	return callID + "#" + hex.EncodeToString(sum[:8])
}

// attemptKey is the nested run's key of an attempt: each attempt is a run of
// its own, with checkpoints of its own.
func attemptKey(key string, attempt int) string {
	if attempt == 1 {
		return key
	}
	return key + "~" + strconv.Itoa(attempt)
}

// resumedAttempt returns the attempt to start with: 1, or, when the tool
// runs again after an interrupt, the latest attempt that left checkpoints,
// which is the one the interrupt stopped.
func (r *runner[S, PS]) resumedAttempt(ctx context.Context, key string) (int, error) {
	if key == "" || r.cfg.retries == 0 {
		return 1, nil
	}
	// A retry starts only after the first attempt left checkpoints.
	started, err := graph.NestedStarted(ctx, r.name, key)
	if err != nil || !started {
		return 1, err
	}
	for attempt := r.cfg.retries + 1; attempt > 1; attempt-- {
		started, err := graph.NestedStarted(ctx, r.name, attemptKey(key, attempt))
		if err != nil {
			return 0, err
		}
		if started {
			return attempt, nil
		}
	}
	return 1, nil
}

func (r *runner[S, PS]) retryable(ctx context.Context, err error, attempt int) bool {
	switch {
	case attempt > r.cfg.retries, ctx.Err() != nil,
		errors.Is(err, graph.ErrInterrupted), errors.Is(err, graph.ErrNodePanic),
		errors.Is(err, context.Canceled):
		return false
	case r.cfg.retryIf != nil:
		return r.cfg.retryIf(err)
	}
	return true
}

// attempt runs g once and checks its output.
func (r *runner[S, PS]) attempt(ctx context.Context, g *graph.Graph[S], input []model.Message, key string, attempt int) (Output, error) {
	var s S
	*PS(&s).ChatMessages() = slices.Clone(input)
	final, err := g.Nested(ctx, s, r.name, key, graph.WithModes(r.cfg.modes), graph.WithCallID(tool.CallID(ctx)))
	if err != nil {
		return Output{}, err
	}
	msgs := *PS(&final).ChatMessages()
	added := slices.Clone(msgs[min(len(input), len(msgs)):])
	out := Output{Agent: r.name, Messages: added, Attempts: attempt}
	text, ok := answer(added)
	if !ok {
		return out, fmt.Errorf("%w (it added %d messages)", ErrNoAnswer, len(added))
	}
	out.Answer = text
	if r.cfg.validate != nil {
		if err := r.cfg.validate(ctx, out); err != nil {
			return out, fmt.Errorf("%w: %w", ErrInvalidResult, err)
		}
	}
	return out, nil
}

// result is the tool's result for the agent's output on task. Under
// WithPersistentHistory with the key hkey, it records the task and what the
// agent added for the next call.
func (r *runner[S, PS]) result(out Output, task model.Message, hkey string) (tool.Result, error) {
	var res tool.Result
	if r.cfg.all {
		res = tool.JSON(out.Messages)
	} else {
		res = tool.Text(out.Answer)
	}
	res.Details = out
	res.Terminate = r.cfg.direct
	if to, ok := parentRoute(out.Messages); ok {
		if to == graph.END {
			// The agent ends its caller's turn: its answer is the turn's.
			res.Actions.Escalate, res.Terminate = true, true
		} else {
			res.Actions.TransferTo = to
		}
	}
	if hkey != "" {
		rec, err := json.Marshal(historyRecord{Key: hkey, Messages: append([]model.Message{task}, out.Messages...)})
		if err != nil {
			return tool.Result{}, fmt.Errorf("agent %q: recording its history: %w", r.name, err)
		}
		res.Metadata = map[string]string{MetaHistory: string(rec)}
	}
	return res, nil
}

// input is the agent's conversation: the task, after the caller's history
// when it is shared, or after the agent's own history under the key hkey.
func (r *runner[S, PS]) input(ctx context.Context, task model.Message, hkey string) ([]model.Message, error) {
	switch {
	case r.cfg.filter != nil:
		in, err := r.cfg.filter(ctx, history(tool.Conversation(ctx)), task)
		if err != nil {
			return nil, fmt.Errorf("input filter: %w", err)
		}
		if len(in) == 0 {
			return nil, errors.New("input filter: the agent's input is empty")
		}
		return in, nil
	case r.cfg.shared:
		return append(history(tool.Conversation(ctx)), task), nil
	case hkey != "":
		before, batch := earlier(tool.Conversation(ctx))
		own, err := recorded(before, calledAs(ctx, batch, r.name), hkey)
		if err != nil {
			return nil, err
		}
		return append(own, task), nil
	}
	return []model.Message{task}, nil
}

// MetaHistory is the key, in the metadata of a handoff's tool message, of
// the agent's history recorded under WithPersistentHistory: a JSON object
// with the history's key and the messages of the call (its task, then what
// the agent added).
const MetaHistory = "trellis.handoff.history"

// historyRecord is the value of MetaHistory.
type historyRecord struct {
	Key      string          `json:"key"`
	Messages []model.Message `json:"messages"`
}

// calledAs returns the name the model called the running call by, as the
// batch's assistant message has it: the tool's name, unless the handoff
// runs renamed (tool.Rename, tool.WithPrefix). name is the handoff's own.
func calledAs(ctx context.Context, batch *model.Message, name string) string {
	if batch == nil {
		return name
	}
	id := tool.CallID(ctx)
	for _, c := range batch.ToolCalls {
		if c.ID == id {
			return c.Name
		}
	}
	return name
}

// recorded collects a history under key from the caller's conversation:
// the records in the answers to calls of the tool named toolName, in order.
func recorded(conv []model.Message, toolName, key string) ([]model.Message, error) {
	var own []model.Message
	for i := range conv {
		m := &conv[i]
		raw, ok := m.Metadata[MetaHistory]
		if !ok || m.Role != model.RoleTool || m.ToolName != toolName {
			continue
		}
		var rec historyRecord
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			return nil, fmt.Errorf("the history recorded in the answer to call %s is unreadable (%s %q): %w", m.ToolCallID, MetaHistory, textcut.Clip(raw, 80, "..."), err)
		}
		if rec.Key == key {
			own = append(own, rec.Messages...)
		}
	}
	return own, nil
}

// history returns the caller's conversation without the assistant message
// whose tool calls are being run and the answers that follow it: a
// transcript with unanswered calls is invalid for most providers.
func history(msgs []model.Message) []model.Message {
	before, _ := earlier(msgs)
	out := make([]model.Message, len(before), len(before)+1)
	copy(out, before)
	return out
}

// earlier returns the messages before the batch of calls being run — msgs
// without its last assistant message with tool calls and the answers that
// follow it — and that assistant message (nil when msgs does not end with
// a batch).
func earlier(msgs []model.Message) ([]model.Message, *model.Message) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role == model.RoleTool {
			continue
		}
		if m.Role == model.RoleAssistant && m.HasToolCalls() {
			return msgs[:i], m
		}
		break
	}
	return msgs, nil
}

// answer returns the text an agent answered with: its last assistant
// message's, or else the last text it added.
func answer(added []model.Message) (string, bool) {
	if m, ok := model.LastAssistant(added); ok {
		if t := m.Text(); t != "" {
			return t, true
		}
	}
	for i := len(added) - 1; i >= 0; i-- {
		if t := added[i].Text(); t != "" {
			return t, true
		}
	}
	return "", false
}
