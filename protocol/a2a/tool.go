package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trellis-go/trellis/internal/pause"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Args are the arguments a model passes to a remote agent tool.
type Args struct {
	// Task is what the agent is asked to do, or the answer to its question.
	Task string `json:"task" jsonschema:"minLength=1" jsonschema_description:"The task for the agent, stated so that it can be done without asking back; or, with context_id, your answer to its question or your follow-up."`
	// ContextID continues an earlier conversation with the agent.
	ContextID string `json:"context_id,omitempty" jsonschema_description:"The context_id an earlier answer of this agent gave, to continue that conversation (optional; leave it out to start a new one)."`
}

// Reply is what one call of a remote agent tool got. The tool's result
// carries it in Details, for logs and user interfaces.
type Reply struct {
	// Agent is the agent's name, from its card.
	Agent string `json:"agent"`
	// TaskID and ContextID identify the task and the conversation; TaskID
	// is empty when the agent answered with a message.
	TaskID    string `json:"task_id,omitempty"`
	ContextID string `json:"context_id,omitempty"`
	// State is the task's last state.
	State TaskState `json:"state,omitempty"`
	// Task is the task as the call last saw it; nil for a message.
	Task *Task `json:"task,omitempty"`
	// Message is the agent's message, when it answered with one.
	Message *Message `json:"message,omitempty"`
}

// NewTool reads the card of the agent at baseURL and returns a tool that
// delegates tasks to it (see Client.Tool). It fails, with an error that
// says why, when the card cannot be read or offers no interface this
// package speaks.
func NewTool(ctx context.Context, baseURL string, opts ...Option) (tool.Tool, error) {
	c, err := NewClient(baseURL, opts...)
	if err != nil {
		return nil, err
	}
	return c.Tool(ctx)
}

// Tool reads the agent's card, if the client has not yet, and returns a
// tool that delegates tasks to the agent, as a handoff tool delegates to a
// local agent. Its name and description come from the card unless
// WithName and WithDescription say otherwise; its arguments are Args. opts
// configure the tool (WithName, WithDescription, WithStreaming,
// WithoutContextHint, WithMetadata, WithToolOptions) over the client's
// defaults; options of the client given here are ignored.
//
// A call sends the task as a message and turns the agent's answer into the
// result: the text of a completed task's artifacts (data parts as JSON),
// or of the agent's message; an error result quoting the agent when it
// fails, rejects or cancels the task; a result that relays the agent's
// question when it needs input or authentication (the next call with the
// same context_id answers it). A task still working is followed to its
// end, over the stream when the agent streams (its updates become the
// call's progress, tool.ReportProgress), else by polling GetTask; when the
// call's context ends first, the task is canceled, as far as the agent
// lets it (and once the agent has told its ID). Results end with the conversation's context_id unless
// WithoutContextHint is given.
func (c *Client) Tool(ctx context.Context, opts ...Option) (tool.Tool, error) {
	cfg := c.cfg
	cfg.problems = nil
	cfg.headers = c.cfg.headers.Clone() // options of the client given here touch a copy
	cfg.toolOpts = slices.Clip(c.cfg.toolOpts)
	cfg.apply(opts)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	card, err := c.Card(ctx)
	if err != nil {
		return nil, err
	}
	name := cfg.name
	if name == "" {
		name = toolName(card.Name)
	}
	desc := cfg.description
	if desc == "" {
		desc = card.describe()
	}
	streaming := card.streams()
	if cfg.streaming != nil {
		streaming = *cfg.streaming
	}
	rt := &remoteTool{
		client: c, agent: card.Name, name: name, streaming: streaming, hint: cfg.hint,
		pollFirst: cfg.pollFirst, pollMax: cfg.pollMax, maxBytes: cfg.maxBytes,
		pending: newPending(256),
	}
	meta := tool.Metadata{ConcurrencySafe: true, OpenWorld: true}
	if cfg.meta != nil {
		meta = *cfg.meta
	}
	topts := append([]tool.Option{tool.WithMetadata(meta), tool.WithTitle("Ask " + card.Name)}, cfg.toolOpts...)
	return tool.NewFunc(name, desc, rt.call, topts...)
}

// remoteTool runs the calls of a remote agent tool.
type remoteTool struct {
	client             *Client
	agent, name        string
	streaming, hint    bool
	pollFirst, pollMax time.Duration
	maxBytes           int
	pending            *pending
}

// outcome is what an exchange with the agent ended with: a task or a
// message.
type outcome struct {
	task    *Task
	message *Message
}

func (rt *remoteTool) call(ctx context.Context, in Args) (tool.Result, error) {
	task := strings.TrimSpace(in.Task)
	if task == "" {
		return tool.ErrorResult(tool.CodeInvalidArguments, errors.New("the task is empty: say what the agent should do")), nil
	}
	msg := Message{MessageID: newID(), Role: RoleUser, Parts: []Part{TextPart(task)}, ContextID: strings.TrimSpace(in.ContextID)}
	if msg.ContextID != "" {
		msg.TaskID = rt.pending.get(msg.ContextID)
	}
	out, err := rt.exchange(ctx, msg)
	if err != nil && msg.TaskID != "" && ctx.Err() == nil &&
		(errors.Is(err, ErrTaskNotFound) || errors.Is(err, ErrUnsupportedOperation)) {
		// The task that waited for input is gone or over: continue the
		// conversation with a new task instead.
		rt.pending.drop(msg.ContextID)
		msg.TaskID, msg.MessageID = "", newID()
		out, err = rt.exchange(ctx, msg)
	}
	if err != nil {
		return rt.failure(ctx, err), nil
	}
	return rt.result(out), nil
}

// exchange sends msg and follows the task it starts to its end or until it
// waits for input.
func (rt *remoteTool) exchange(ctx context.Context, msg Message) (outcome, error) {
	if rt.streaming {
		out, started, err := rt.stream(ctx, msg)
		if err == nil || started || !errors.Is(err, ErrUnsupportedOperation) {
			return out, err
		}
		// The card said the agent streams, and it says it does not.
		msg.MessageID = newID()
	}
	ev, err := rt.client.SendMessage(ctx, SendRequest{Message: msg})
	if err != nil {
		return outcome{}, err
	}
	if ev.Message != nil {
		return outcome{message: ev.Message}, nil
	}
	t := ev.Task
	if t.Status.State.Active() {
		t, err = rt.poll(ctx, t)
	}
	return outcome{task: t}, err
}

// poll asks about the task until it ends or waits for input. When ctx ends
// first it cancels the task.
func (rt *remoteTool) poll(ctx context.Context, t *Task) (*Task, error) {
	wait := rt.pollFirst
	for t.Status.State.Active() {
		if err := pause.Sleep(ctx, wait); err != nil {
			rt.cancelRemote(ctx, t.ID)
			return t, err
		}
		next, err := rt.client.GetTask(ctx, t.ID, nil)
		if err != nil {
			if ctx.Err() != nil {
				rt.cancelRemote(ctx, t.ID)
			}
			return t, err
		}
		if next.Status.State != t.Status.State || statusText(next.Status) != statusText(t.Status) {
			rt.progress(ctx, next.Status, false)
		}
		t = next
		wait = min(wait+wait/2, rt.pollMax)
	}
	return t, nil
}

// stream sends msg over a stream and assembles the task from its events.
// started reports whether the agent answered with a stream at all.
func (rt *remoteTool) stream(ctx context.Context, msg Message) (out outcome, started bool, err error) {
	var t *Task
	size := 0
	for ev, err := range rt.client.SendStreamingMessage(ctx, SendRequest{Message: msg}) {
		if err != nil {
			switch {
			case t != nil && ctx.Err() != nil:
				rt.cancelRemote(ctx, t.ID)
			case t != nil && lostConnection(err):
				// The connection dropped mid-stream: follow the task by
				// polling.
				t, err = rt.poll(ctx, t)
				return outcome{task: t}, true, err
			}
			return outcome{task: t}, started, err
		}
		started = true
		switch {
		case ev.Message != nil:
			if t == nil {
				return outcome{message: ev.Message}, true, nil
			}
			// A message within a task's stream: progress.
			rt.progressText(ctx, partsText(ev.Message.Parts), false)
		case ev.Task != nil:
			t = ev.Task
		case ev.StatusUpdate != nil:
			u := ev.StatusUpdate
			if t == nil {
				t = &Task{ID: u.TaskID, ContextID: u.ContextID}
			}
			delta := u.Status.Message != nil && u.Status.Message.Metadata[MetaDelta] == true
			if !delta {
				t.Status = u.Status
			} else if t.Status.State != u.Status.State {
				t.Status = TaskStatus{State: u.Status.State, Timestamp: u.Status.Timestamp}
			}
			rt.progress(ctx, u.Status, delta)
		case ev.ArtifactUpdate != nil:
			u := ev.ArtifactUpdate
			if t == nil {
				t = &Task{ID: u.TaskID, ContextID: u.ContextID}
			}
			for _, p := range u.Artifact.Parts {
				size += len(p.Text) + len(p.Data) + len(p.URL) + len(p.Raw)
			}
			if size > rt.maxBytes {
				rt.cancelRemote(ctx, t.ID)
				return outcome{task: t}, true, fmt.Errorf("%w: the artifacts of task %s exceed %d bytes", ErrResponseTooLarge, t.ID, rt.maxBytes)
			}
			mergeArtifact(t, u)
			rt.progressText(ctx, partsText(u.Artifact.Parts), true)
		}
	}
	if t == nil {
		return outcome{}, started, fmt.Errorf("%w: the stream ended without a task or a message", ErrInvalidResponse)
	}
	if t.Status.State.Active() {
		// The stream ended early (a dropped connection, an agent that
		// closes streams before the end): follow the task by polling.
		var err error
		t, err = rt.poll(ctx, t)
		return outcome{task: t}, true, err
	}
	return outcome{task: t}, true, nil
}

// lostConnection reports whether a stream's error is the loss of the
// connection rather than something the agent said.
func lostConnection(err error) bool {
	_, isRPC := errors.AsType[*RPCError](err)
	return !isRPC && !errors.Is(err, ErrInvalidResponse) && !errors.Is(err, ErrResponseTooLarge)
}

// mergeArtifact applies an artifact update to t: a new artifact is added,
// an appended piece extends the artifact with its ID, and a whole one
// replaces it.
func mergeArtifact(t *Task, u *ArtifactUpdate) {
	for i := range t.Artifacts {
		a := &t.Artifacts[i]
		if a.ArtifactID != u.Artifact.ArtifactID {
			continue
		}
		if u.Append {
			a.Parts = append(a.Parts, u.Artifact.Parts...)
		} else {
			*a = u.Artifact
		}
		return
	}
	t.Artifacts = append(t.Artifacts, u.Artifact)
}

// progress reports a status as the call's progress: a token delta as
// content, other status messages as the update's message.
func (rt *remoteTool) progress(ctx context.Context, s TaskStatus, delta bool) {
	text := statusText(s)
	if text == "" && !delta {
		text = "the agent's task is " + s.State.short()
	}
	rt.progressText(ctx, text, delta)
}

func (rt *remoteTool) progressText(ctx context.Context, text string, content bool) {
	if text == "" {
		return
	}
	if content {
		tool.ReportProgress(ctx, tool.Update{Content: []model.Part{model.TextPart(text)}})
		return
	}
	tool.ReportProgress(ctx, tool.Update{Message: text})
}

// cancelRemote asks the agent to cancel a task the call gives up on, as
// far as it can within a few seconds; ctx's values (for the header
// function) are kept, its end is not.
func (rt *remoteTool) cancelRemote(ctx context.Context, id string) {
	if id == "" {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	_, _ = rt.client.CancelTask(cctx, id)
}

// result turns what the exchange ended with into the tool's result.
func (rt *remoteTool) result(out outcome) tool.Result {
	reply := Reply{Agent: rt.agent, Task: out.task, Message: out.message}
	if m := out.message; m != nil {
		reply.ContextID = m.ContextID
		r := tool.Parts(rt.withHint(content(m.Parts), m.ContextID)...)
		r.Details = reply
		return r
	}
	t := out.task
	reply.TaskID, reply.ContextID, reply.State = t.ID, t.ContextID, t.Status.State
	var r tool.Result
	switch st := t.Status.State; {
	case st == StateCompleted:
		rt.pending.drop(t.ContextID)
		parts := content(answerParts(t))
		if len(parts) == 0 {
			parts = []model.Part{model.TextPart("(The agent completed the task without output.)")}
		}
		r = tool.Parts(rt.withHint(parts, t.ContextID)...)
	case st.Interrupted():
		rt.pending.set(t.ContextID, t.ID)
		need := "more input"
		if st == StateAuthRequired {
			need = "authentication"
		}
		question := statusText(t.Status)
		if question == "" {
			question = "(it did not say what)"
		}
		text := fmt.Sprintf("The agent %q needs %s before it can finish the task: %s", rt.agent, need, question)
		if t.ContextID != "" {
			text += fmt.Sprintf("\n\nTo answer, call %s again with context_id %q and your answer as the task.", rt.name, t.ContextID)
		}
		r = tool.Text(text)
	case st == StateFailed || st == StateRejected || st == StateCanceled:
		rt.pending.drop(t.ContextID)
		why := statusText(t.Status)
		if why == "" {
			why = "it gave no reason"
		}
		verb := map[TaskState]string{StateFailed: "failed", StateRejected: "rejected", StateCanceled: "canceled"}[st]
		err := fmt.Errorf("the agent %q %s the task (task %s): %s", rt.agent, verb, t.ID, why)
		r = tool.ErrorResult(CodeTaskFailed, err)
		if rt.hint && t.ContextID != "" && st != StateCanceled {
			r.Content = append(r.Content, model.TextPart(hintText(t.ContextID)))
		}
	default:
		r = tool.ErrorResult(CodeProtocol, fmt.Errorf("%w: the agent %q left task %s in state %s", ErrInvalidResponse, rt.agent, t.ID, st))
	}
	r.Details = reply
	return r
}

// answerParts returns the parts that answer a completed task: its
// artifacts', else its status message's, else those of the last agent
// message of its history.
func answerParts(t *Task) []Part {
	var parts []Part
	for i, a := range t.Artifacts {
		if i > 0 && len(parts) > 0 {
			parts = append(parts, TextPart("\n\n"))
		}
		parts = append(parts, a.Parts...)
	}
	if len(parts) > 0 {
		return parts
	}
	if m := t.Status.Message; m != nil && len(m.Parts) > 0 {
		return m.Parts
	}
	for i := len(t.History) - 1; i >= 0; i-- {
		if t.History[i].Role == RoleAgent {
			return t.History[i].Parts
		}
	}
	return nil
}

// content converts A2A parts into what a model reads: text, JSON for data
// parts, and a line naming each file.
func content(parts []Part) []model.Part {
	var out []model.Part
	prevText := false
	for _, p := range parts {
		var mp model.Part
		isText := p.Kind == PartText
		switch p.Kind {
		case PartText:
			if p.Text == "" {
				continue
			}
			mp = model.TextPart(p.Text)
		case PartData:
			if !json.Valid(p.Data) {
				continue
			}
			mp = model.JSONPart(p.Data)
		default:
			s, _ := partText(p)
			if s == "" {
				continue
			}
			mp = model.TextPart(s)
		}
		if n := len(out); n > 0 && mp.Type == model.PartText && out[n-1].Type == model.PartText {
			// A file's line goes on a line of its own.
			if !(isText && prevText) && !strings.HasSuffix(out[n-1].Text, "\n") {
				out[n-1].Text += "\n"
			}
			out[n-1].Text += mp.Text
		} else {
			out = append(out, mp)
		}
		prevText = isText
	}
	return out
}

func (rt *remoteTool) withHint(parts []model.Part, contextID string) []model.Part {
	if !rt.hint || contextID == "" {
		return parts
	}
	return append(parts, model.TextPart(hintText(contextID)))
}

func hintText(contextID string) string { return "\n\n[context_id: " + contextID + "]" }

// statusText returns the text of a status's message.
func statusText(s TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	return strings.TrimSpace(partsText(s.Message.Parts))
}

// failure turns an error of the exchange into an error result whose code
// classifies it.
func (rt *remoteTool) failure(ctx context.Context, err error) tool.Result {
	err = fmt.Errorf("remote agent %q: %w", rt.agent, err)
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		r := tool.ErrorResult(tool.CodeTimeout, err)
		r.Status = tool.StatusTimeout
		return r
	case ctx.Err() != nil:
		r := tool.ErrorResult(tool.CodeCancelled, err)
		r.Status = tool.StatusCancelled
		return r
	}
	code := CodeUnavailable
	switch {
	case errors.Is(err, ErrHeaderRefused):
		code = CodeRefused
	case errors.Is(err, ErrInvalidResponse), errors.Is(err, ErrResponseTooLarge):
		code = CodeProtocol
	default:
		if _, ok := errors.AsType[*RPCError](err); ok {
			code = CodeProtocol
		}
	}
	return tool.ErrorResult(code, err)
}

// pending remembers, per context, the task that waits for the model's
// answer, so that the next call in the context continues that task. It
// holds at most max contexts, forgetting the oldest.
type pending struct {
	mu    sync.Mutex
	max   int
	tasks map[string]string
	order []string
}

func newPending(max int) *pending { return &pending{max: max, tasks: map[string]string{}} }

func (p *pending) get(contextID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tasks[contextID]
}

func (p *pending) set(contextID, taskID string) {
	if contextID == "" || taskID == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.tasks[contextID]; !ok {
		p.order = append(p.order, contextID)
	}
	p.tasks[contextID] = taskID
	for len(p.order) > p.max {
		delete(p.tasks, p.order[0])
		p.order = p.order[1:]
	}
}

func (p *pending) drop(contextID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.tasks[contextID]; !ok {
		return
	}
	delete(p.tasks, contextID)
	for i, id := range p.order {
		if id == contextID {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
}

// newID returns a fresh random ID.
func newID() string { return uuid.NewString() }
