package agui

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// TaskArgs are the arguments a model passes to a remote agent's tool.
type TaskArgs struct {
	// Task is what the agent is asked to do, or the answer to its question.
	Task string `json:"task" jsonschema:"minLength=1" jsonschema_description:"The task for the agent, stated so that it can be done without asking back; or, with thread_id, your answer to its question or your follow-up."`
	// ThreadID continues an earlier conversation with the agent.
	ThreadID string `json:"thread_id,omitempty" jsonschema_description:"The thread_id an earlier answer of this agent gave, to continue that conversation (optional; leave it out to start a new one)."`
}

// Reply is what one call of a remote agent's tool got; the tool's result
// carries it in Details, for logs and user interfaces.
type Reply struct {
	// ThreadID and RunID identify the conversation and the run.
	ThreadID string `json:"thread_id"`
	RunID    string `json:"run_id"`
	// Answer is the agent's answer, or its question.
	Answer string `json:"answer,omitempty"`
	// Outcome is how the run ended; nil when it failed.
	Outcome *Outcome `json:"outcome,omitempty"`
	// Error is the agent's error message (RUN_ERROR).
	Error string `json:"error,omitempty"`
}

// Tool returns a tool named name that delegates tasks to the client's
// agent, as a handoff tool delegates to a local one: a supervisor's worker
// that runs elsewhere, behind any AG-UI server. description tells the
// calling model what the agent does.
//
// A call sends the conversation so far with the task as a user message,
// follows the run, and answers with the agent's last reply (its text), or,
// when the run pauses for input, with the agent's question: the next call
// with the same thread_id answers it (as a resume entry). The result ends
// with the conversation's thread_id; the client remembers the
// conversation for the next call (WithMaxThreads). Calls on one thread
// run one after the other. An agent that fails, that calls tools of the
// caller (which this tool offers none of), or that ends without a reply
// of its own run, gives an error result that says so. The run's text streams as the call's
// progress (tool.ReportProgress).
func (c *Client) Tool(name, description string, opts ...tool.Option) (tool.Tool, error) {
	return tool.NewFunc(name, description, func(ctx context.Context, in TaskArgs) (tool.Result, error) {
		return c.delegate(ctx, in), nil
	}, opts...)
}

func (c *Client) delegate(ctx context.Context, in TaskArgs) tool.Result {
	thread := in.ThreadID
	if thread == "" {
		thread = uuid.NewString()
	}
	// Calls on one thread go one after the other: each continues the
	// conversation the one before left.
	unlock, err := c.lockThread(ctx, thread)
	if err != nil {
		return c.failed(Reply{ThreadID: thread}, fmt.Sprintf("the agent could not be run: %v", err))
	}
	defer unlock()
	prev := c.thread(thread)
	input := &RunInput{ThreadID: thread, RunID: uuid.NewString(), Messages: slices.Clone(prev.messages)}
	if len(prev.interrupts) > 0 && answerable(prev.interrupts) {
		// The task answers the agent's question(s).
		payload, _ := json.Marshal(in.Task)
		for _, it := range prev.interrupts {
			input.Resume = append(input.Resume, ResumeEntry{InterruptID: it.ID, Status: ResumeResolved, Payload: payload})
		}
	} else {
		// What the agent waits for, if anything, a text cannot answer (the
		// results of its caller's tools): the wait is abandoned, and the
		// task is a new request.
		for _, it := range prev.interrupts {
			input.Resume = append(input.Resume, ResumeEntry{InterruptID: it.ID, Status: ResumeCancelled})
		}
		content, _ := json.Marshal(in.Task)
		input.Messages = append(input.Messages, Message{ID: uuid.NewString(), Role: "user", Content: content})
	}
	reply := Reply{ThreadID: thread, RunID: input.RunID}
	var (
		texts    []*runText // text messages of the run, in the order they started
		byID     = map[string]*runText{}
		chunkID  string // the text message TEXT_MESSAGE_CHUNK events continue
		snapshot []Message
	)
	start := func(id, role string) *runText {
		t := byID[id]
		if t == nil { // a reopened message goes on
			t = &runText{id: id, own: role == "" || role == "assistant"}
			byID[id] = t
			texts = append(texts, t)
		}
		return t
	}
	write := func(t *runText, delta string) {
		if t != nil && t.own {
			t.text.WriteString(delta)
			tool.ReportProgress(ctx, tool.Update{Content: []model.Part{model.TextPart(delta)}})
		}
	}
	for ev, err := range c.Run(ctx, input) {
		if err != nil {
			return c.failed(reply, fmt.Sprintf("the agent could not be run: %v", err))
		}
		if ev.SubagentRunID != "" {
			continue
		}
		switch ev.Type {
		case EventTextMessageStart:
			start(ev.MessageID, ev.Role)
		case EventTextMessageContent:
			write(byID[ev.MessageID], ev.Delta)
		case EventTextMessageChunk:
			if id := cmp.Or(ev.MessageID, chunkID); id != "" {
				chunkID = id
				write(start(id, ev.Role), ev.Delta)
			}
		case EventToolCallStart:
			tool.ReportProgress(ctx, tool.Update{Message: "calling " + ev.ToolCallName})
		case EventMessagesSnapshot:
			snapshot = ev.Messages
		case EventRunError:
			reply.Error = ev.Message
			return c.failed(reply, "the agent failed: "+ev.Message)
		case EventRunFinished:
			out := ev.Outcome
			if out == nil {
				out = &Outcome{Type: OutcomeSuccess}
			}
			reply.Outcome = out
			var lastText string
			added := []Message{} // what the run said, for a server without snapshots
			for _, t := range texts {
				if text := t.text.String(); t.own && strings.TrimSpace(text) != "" {
					lastText = text
					content, _ := json.Marshal(text)
					added = append(added, Message{ID: t.id, Role: "assistant", Content: content})
				}
			}
			msgs := snapshot
			if msgs == nil {
				msgs = append(input.Messages, added...)
			}
			switch {
			case out.Type == OutcomeInterrupt:
				c.remember(thread, remoteThread{messages: msgs, interrupts: out.Interrupts})
				if !answerable(out.Interrupts) {
					reply.Answer = "The agent waits for results of tools that this tool cannot run. A call with this thread_id abandons that wait and sends its task as a new request."
					return tool.Result{Content: []model.Part{model.TextPart(reply.Answer + threadHint(thread))}, Details: reply}
				}
				var asks []string
				for _, it := range out.Interrupts {
					asks = append(asks, cmp.Or(it.Message, it.Reason))
				}
				reply.Answer = strings.Join(asks, "\n")
				return tool.Result{Content: []model.Part{model.TextPart("The agent asks: " + reply.Answer + threadHint(thread))}, Details: reply}
			case len(out.PendingToolCallIDs) > 0:
				return c.failed(reply, fmt.Sprintf("the agent called tools of its caller (%s), which this tool does not offer", strings.Join(out.PendingToolCallIDs, ", ")))
			case out.Type == OutcomeCancelled:
				c.remember(thread, remoteThread{messages: msgs})
				return c.failed(reply, "the agent's run was cancelled before it answered")
			}
			c.remember(thread, remoteThread{messages: msgs})
			reply.Answer = lastAnswer(msgs, input.Messages, lastText)
			if reply.Answer == "" {
				return c.failed(reply, "the agent ended without an answer")
			}
			return tool.Result{Content: []model.Part{model.TextPart(reply.Answer + threadHint(thread))}, Details: reply}
		}
	}
	return c.failed(reply, "the agent's stream ended before its run did")
}

// answerable reports whether a text answers the interrupts: none of them
// waits for the results of tool calls (reason "tool_calls").
func answerable(ints []Interrupt) bool {
	for _, it := range ints {
		if it.Reason == "tool_calls" {
			return false
		}
	}
	return true
}

// runText is a text message of a run, as its events build it.
type runText struct {
	id   string
	own  bool // the agent's (an assistant message)
	text strings.Builder
}

func (c *Client) failed(r Reply, msg string) tool.Result {
	res := tool.Errorf("%s%s", msg, threadHint(r.ThreadID))
	res.Details = r
	return res
}

func threadHint(id string) string { return "\n\n[thread_id: " + id + "]" }

// lastAnswer returns the text of the last assistant message with text
// that the run added to the conversation (msgs, which were sent), or
// streamed when it added none.
func lastAnswer(msgs, sent []Message, streamed string) string {
	old := make(map[string]bool, len(sent))
	for _, m := range sent {
		old[m.ID] = true
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == "assistant" && !old[m.ID] {
			if text, err := textContent(m.Content, false); err == nil && strings.TrimSpace(text) != "" {
				return text
			}
		}
	}
	return streamed
}

// thread returns what the client remembers of a conversation, marking it
// the most recently used.
func (c *Client) thread(id string) remoteThread {
	c.mu.Lock()
	defer c.mu.Unlock()
	th := c.threads[id]
	if th == nil {
		return remoteThread{}
	}
	c.touch(id)
	return *th
}

// remember keeps a conversation, forgetting the least recently used one
// beyond the cap.
func (c *Client) remember(id string, th remoteThread) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.threads[id]; !ok {
		for len(c.order) >= c.cfg.maxThreads {
			delete(c.threads, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.threads[id] = &th
	c.touch(id)
}

func (c *Client) touch(id string) {
	if i := slices.Index(c.order, id); i >= 0 {
		c.order = slices.Delete(c.order, i, i+1)
	}
	c.order = append(c.order, id)
}

// threadLock serializes the calls on one thread.
type threadLock struct {
	turn  chan struct{} // holds a token while a call runs
	users int           // calls running or waiting
}

// lockThread waits until no other call runs on the thread, or ctx ends,
// and returns what ends this call's turn.
func (c *Client) lockThread(ctx context.Context, id string) (unlock func(), err error) {
	c.mu.Lock()
	if c.busy == nil {
		c.busy = map[string]*threadLock{}
	}
	l := c.busy[id]
	if l == nil {
		l = &threadLock{turn: make(chan struct{}, 1)}
		c.busy[id] = l
	}
	l.users++
	c.mu.Unlock()
	release := func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if l.users--; l.users == 0 {
			delete(c.busy, id)
		}
	}
	select {
	case l.turn <- struct{}{}:
		return func() { <-l.turn; release() }, nil
	case <-ctx.Done():
		release()
		return nil, context.Cause(ctx)
	}
}
