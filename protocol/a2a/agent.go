package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state"
)

// State constrains the state types a Server runs: S whose pointer holds a
// conversation, as every state embedding nodes.Chat does (the same
// constraint as handoff.State).
type State[S any] interface {
	*S
	ChatMessages() *[]model.Message
}

// ThreadPrefix prefixes the thread of a context when the served agent has
// a checkpointer: without WithOwner, the conversation of context "c1" is
// thread "a2a:c1" (Server.ThreadID gives an owner's thread).
const ThreadPrefix = "a2a:"

// ErrNoAnswer is the error of a task whose agent ended without a message
// to answer with.
var ErrNoAnswer = errors.New("a2a: the agent gave no answer")

// turnResult is what one turn of the agent ended with.
type turnResult struct {
	answer     model.Message            // the agent's answer
	history    []model.Message          // the conversation after the turn (no checkpointer)
	interrupts []graph.PendingInterrupt // what a paused run waits for
	err        error
}

// agentRunner runs turns of the served agent.
type agentRunner interface {
	// checkpointed reports whether the agent keeps its conversations in
	// its checkpointer's threads.
	checkpointed() bool
	// turn runs the agent on the user's message in the conversation, and
	// passes the run's events to emit; with deltas, the models' streamed
	// text too (the models then stream).
	turn(ctx context.Context, conv *conversation, user model.Message, deltas bool, emit func(graph.Event)) turnResult
	// dropQuestion ends the pause of the conversation's thread, if it
	// waits for an answer, without answering: the run's remaining work is
	// dropped and the tool calls left without a result are answered as
	// canceled, so that the next turn starts from the user's message.
	dropQuestion(ctx context.Context, conv *conversation) error
}

// graphRunner runs a compiled graph as the served agent.
type graphRunner[S any, PS State[S]] struct {
	g     *graph.Graph[S]
	saver bool
	opts  []graph.RunOption
}

func (a *graphRunner[S, PS]) checkpointed() bool { return a.saver }

func (a *graphRunner[S, PS]) turn(ctx context.Context, conv *conversation, user model.Message, deltas bool, emit func(graph.Event)) turnResult {
	modes := graph.ModeEvents
	if deltas {
		// The LLM nodes stream when someone listens to ModeMessages: only
		// then, since a streamed reply keeps only its text.
		modes |= graph.ModeMessages
	}
	opts := append(slices.Clone(a.opts), graph.WithModes(modes))
	var (
		seq    iter.Seq2[graph.Event, error]
		before int
	)
	if a.saver {
		thread := conv.thread
		snap, err := a.g.GetState(ctx, thread)
		switch {
		case err == nil && len(snap.Interrupts) > 0:
			// The agent asked a question: the message answers it.
			for _, in := range snap.Interrupts {
				opts = append(opts, graph.WithResume(in.ID, user.Text()))
			}
			before = len(*PS(&snap.State).ChatMessages())
			// Only if the thread still waits where it was read: another
			// message may have answered it meanwhile.
			seq = a.g.ResumeStream(ctx, thread, append(opts, graph.IfLatest(snap.CheckpointID))...)
		case err == nil || errors.Is(err, state.ErrNotFound):
			s := snap.State
			msgs := PS(&s).ChatMessages()
			*msgs = append(answerOpenCalls(slices.Clone(*msgs)), user)
			before = len(*msgs)
			// The turn is made from the thread as it was read: if another
			// turn got there first, this one is refused (ErrThreadBusy)
			// rather than written over it.
			seq = a.g.Stream(ctx, s, append(opts, graph.WithThread(thread), graph.IfLatest(snap.CheckpointID))...)
		default:
			return turnResult{err: fmt.Errorf("reading the conversation (thread %q): %w", thread, err)}
		}
	} else {
		var s S
		msgs := PS(&s).ChatMessages()
		*msgs = append(slices.Clone(conv.history), user)
		before = len(*msgs)
		seq = a.g.Stream(ctx, s, opts...)
	}
	var (
		final S
		done  bool
	)
	for ev, err := range seq {
		if err != nil {
			if ie, ok := errors.AsType[*graph.InterruptError](err); ok {
				return turnResult{interrupts: ie.Interrupts}
			}
			return turnResult{err: err}
		}
		if ev.Kind == graph.KindDone {
			final, done = ev.State.(S)
			continue
		}
		emit(ev)
	}
	if !done {
		return turnResult{err: errors.New("the run ended without its final state")}
	}
	msgs := *PS(&final).ChatMessages()
	added := msgs[min(before, len(msgs)):]
	answer, ok := finalAnswer(added)
	if !ok {
		return turnResult{err: fmt.Errorf("%w (it added %d messages)", ErrNoAnswer, len(added))}
	}
	return turnResult{answer: answer, history: slices.Clone(msgs)}
}

func (a *graphRunner[S, PS]) dropQuestion(ctx context.Context, conv *conversation) error {
	if !a.saver {
		return nil
	}
	thread := conv.thread
	snap, err := a.g.GetState(ctx, thread)
	switch {
	case errors.Is(err, state.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("reading the conversation (thread %q): %w", thread, err)
	case len(snap.Interrupts) == 0:
		return nil
	}
	// An update as END ends the paused superstep with nothing due: the
	// interrupted nodes (the ask_user call, and any call of its batch that
	// had not finished) are not run again, and the thread no longer waits.
	_, err = a.g.UpdateState(ctx, thread, graph.END, func(s S) S {
		msgs := PS(&s).ChatMessages()
		*msgs = answerOpenCalls(slices.Clone(*msgs))
		return s
	})
	if err != nil {
		return fmt.Errorf("dropping the pending question (thread %q): %w", thread, err)
	}
	return nil
}

// answerOpenCalls answers, with an error, the tool calls at the end of a
// conversation that no tool message answers (a run canceled between a
// model's calls and their results), so that a new user turn can follow.
func answerOpenCalls(msgs []model.Message) []model.Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != model.RoleAssistant {
			continue
		}
		answered := map[string]bool{}
		for _, m := range msgs[i+1:] {
			if m.Role == model.RoleTool {
				answered[m.ToolCallID] = true
			}
		}
		for _, c := range msgs[i].ToolCalls {
			if !answered[c.ID] {
				m := model.ToolMessage(c.ID, c.Name, true, model.TextPart("The call did not run: the task was canceled."))
				m.ID = nodes.ToolMessageID(c.ID)
				msgs = append(msgs, m)
			}
		}
		return msgs
	}
	return msgs
}

// finalAnswer returns the message an agent answered with: its last
// assistant message with content, else the last message it added with
// text (tool results that ended the run).
func finalAnswer(added []model.Message) (model.Message, bool) {
	for i := len(added) - 1; i >= 0; i-- {
		m := added[i]
		if m.Role == model.RoleAssistant && len(a2aParts(m)) > 0 {
			return m, true
		}
	}
	for i := len(added) - 1; i >= 0; i-- {
		if t := added[i].Text(); t != "" {
			return model.Assistant(t), true
		}
	}
	return model.Message{}, false
}

// a2aParts returns the parts of an agent's answer as A2A parts: text,
// JSON as data, images as files; reasoning is left out.
func a2aParts(m model.Message) []Part {
	var out []Part
	for _, p := range m.Content {
		switch p.Type {
		case model.PartText:
			if p.Text != "" {
				out = append(out, TextPart(p.Text))
			}
		case model.PartJSON:
			if json.Valid(p.JSON) {
				out = append(out, DataPart(p.JSON))
			}
		case model.PartImage:
			switch {
			case len(p.Data) > 0:
				out = append(out, RawPart(p.Data, p.MIMEType, ""))
			case p.URL != "":
				out = append(out, FilePart(p.URL, p.MIMEType, ""))
			}
		}
	}
	return out
}

// userMessage converts a client's message into the user message the agent
// reads: text as text, data as its JSON text, images as images, and other
// files as a line that names them.
func userMessage(m Message) model.Message {
	var parts []model.Part
	add := func(text string) {
		if n := len(parts); n > 0 && parts[n-1].Type == model.PartText {
			if !strings.HasSuffix(parts[n-1].Text, "\n") {
				parts[n-1].Text += "\n"
			}
			parts[n-1].Text += text
			return
		}
		parts = append(parts, model.TextPart(text))
	}
	for _, p := range m.Parts {
		switch {
		case p.Kind == PartText:
			add(p.Text)
		case p.Kind == PartData:
			add(string(p.Data))
		case p.Kind == PartRaw && strings.HasPrefix(p.MediaType, "image/"):
			parts = append(parts, model.ImagePart(p.MediaType, p.Raw))
		case p.Kind == PartURL && strings.HasPrefix(p.MediaType, "image/"):
			parts = append(parts, model.ImageURLPart(p.MediaType, p.URL))
		default:
			if s, _ := partText(p); s != "" {
				add(s)
			}
		}
	}
	return model.Message{
		ID: nodes.NewMessageID(), Role: model.RoleUser, Content: parts,
		Metadata: map[string]string{MetaMessageID: m.MessageID},
	}
}

// MetaMessageID is the key, in the metadata of the user message an agent
// receives, of the A2A messageId it came as.
const MetaMessageID = "trellis.a2a.message_id"

// questionText returns what paused runs ask: the question of an ask_user
// call (nodes.Question) with its choices, or the interrupt's payload as
// text.
func questionText(ins []graph.PendingInterrupt) string {
	var qs []string
	for _, in := range ins {
		if q := payloadQuestion(in.Payload); q != "" {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return "The agent needs more input to go on."
	}
	return strings.Join(qs, "\n\n")
}

func payloadQuestion(p any) string {
	var q nodes.Question
	switch v := p.(type) {
	case nil:
		return ""
	case nodes.Question:
		q = v
	case *nodes.Question:
		if v == nil {
			return ""
		}
		q = *v
	case string:
		return v
	default:
		raw, ok := v.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = json.Marshal(v); err != nil {
				return fmt.Sprint(v)
			}
		}
		if json.Unmarshal(raw, &q) != nil || q.Question == "" {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s
			}
			return string(raw)
		}
	}
	text := q.Question
	if len(q.Choices) > 0 {
		text += "\nChoices: " + strings.Join(q.Choices, ", ")
	}
	return text
}
