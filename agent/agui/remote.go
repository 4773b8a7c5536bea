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
// conversation for the next call (WithMaxThreads). An agent that fails, or
// that calls tools of the caller (which this tool offers none of), gives
// an error result that says so. The run's text streams as the call's
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
	prev := c.thread(thread)
	input := &RunInput{ThreadID: thread, RunID: uuid.NewString(), Messages: slices.Clone(prev.messages)}
	if len(prev.interrupts) > 0 {
		// The task answers the agent's question(s).
		payload, _ := json.Marshal(in.Task)
		for _, it := range prev.interrupts {
			input.Resume = append(input.Resume, ResumeEntry{InterruptID: it.ID, Status: ResumeResolved, Payload: payload})
		}
	} else {
		content, _ := json.Marshal(in.Task)
		input.Messages = append(input.Messages, Message{ID: uuid.NewString(), Role: "user", Content: content})
	}
	reply := Reply{ThreadID: thread, RunID: input.RunID}
	var (
		texts    = map[string]*strings.Builder{} // text messages of the run's agent
		lastText string
		snapshot []Message
		added    []Message // what the run said, for a server without snapshots
	)
	for ev, err := range c.Run(ctx, input) {
		if err != nil {
			return c.failed(reply, fmt.Sprintf("the agent could not be run: %v", err))
		}
		if ev.SubagentRunID != "" {
			continue
		}
		switch ev.Type {
		case "TEXT_MESSAGE_START":
			if ev.Role == "" || ev.Role == "assistant" {
				texts[ev.MessageID] = &strings.Builder{}
			}
		case "TEXT_MESSAGE_CONTENT":
			if b := texts[ev.MessageID]; b != nil {
				b.WriteString(ev.Delta)
				tool.ReportProgress(ctx, tool.Update{Content: []model.Part{model.TextPart(ev.Delta)}})
			}
		case "TEXT_MESSAGE_END":
			if b := texts[ev.MessageID]; b != nil && strings.TrimSpace(b.String()) != "" {
				lastText = b.String()
				content, _ := json.Marshal(lastText)
				added = append(added, Message{ID: ev.MessageID, Role: "assistant", Content: content})
			}
		case "TOOL_CALL_START":
			tool.ReportProgress(ctx, tool.Update{Message: "calling " + ev.ToolCallName})
		case "MESSAGES_SNAPSHOT":
			snapshot = ev.Messages
		case "RUN_ERROR":
			reply.Error = ev.Message
			return c.failed(reply, "the agent failed: "+ev.Message)
		case "RUN_FINISHED":
			out := ev.Outcome
			if out == nil {
				out = &Outcome{Type: "success"}
			}
			reply.Outcome = out
			msgs := snapshot
			if msgs == nil {
				msgs = append(input.Messages, added...)
			}
			switch {
			case out.Type == "interrupt":
				var asks []string
				for _, it := range out.Interrupts {
					asks = append(asks, cmp.Or(it.Message, it.Reason))
				}
				reply.Answer = strings.Join(asks, "\n")
				c.remember(thread, remoteThread{messages: msgs, interrupts: out.Interrupts})
				return tool.Result{Content: []model.Part{model.TextPart("The agent asks: " + reply.Answer + threadHint(thread))}, Details: reply}
			case len(out.PendingToolCallIDs) > 0:
				return c.failed(reply, fmt.Sprintf("the agent called tools of its caller (%s), which this tool does not offer", strings.Join(out.PendingToolCallIDs, ", ")))
			case out.Type == "cancelled":
				c.remember(thread, remoteThread{messages: msgs})
				return c.failed(reply, "the agent's run was cancelled before it answered")
			}
			c.remember(thread, remoteThread{messages: msgs})
			reply.Answer = lastAnswer(msgs, lastText)
			if reply.Answer == "" {
				return c.failed(reply, "the agent ended without an answer")
			}
			return tool.Result{Content: []model.Part{model.TextPart(reply.Answer + threadHint(thread))}, Details: reply}
		}
	}
	return c.failed(reply, "the agent's stream ended before its run did")
}

func (c *Client) failed(r Reply, msg string) tool.Result {
	res := tool.Errorf("%s%s", msg, threadHint(r.ThreadID))
	res.Details = r
	return res
}

func threadHint(id string) string { return "\n\n[thread_id: " + id + "]" }

// lastAnswer returns the text of the conversation's last assistant
// message with text, or streamed when the conversation has none.
func lastAnswer(msgs []Message, streamed string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == "assistant" {
			if text, err := textContent(m.Content, false); err == nil && strings.TrimSpace(text) != "" {
				return text
			}
		}
		if msgs[i].Role == "user" {
			break
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
