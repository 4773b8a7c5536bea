package modelmw

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/trellis-go/trellis/model"
)

// The Metadata keys of a summary message.
const (
	// MetaSummary marks a message that holds a summary of the messages
	// before it (written by Summarize, or by the nodes.Summarize node).
	MetaSummary = "trellis.summary"
	// MetaSummaryCovers is, on a summary Summarize wrote into a thread,
	// how many messages of the conversation it stands for: the first n
	// after the conversation's leading system messages.
	MetaSummaryCovers = "trellis.summary.covers"
)

// DefaultSummaryInstructions are the instructions of a summarizing call
// when a SummaryPolicy gives none.
const DefaultSummaryInstructions = "Summarize the conversation below for the assistant that continues it: " +
	"the user's goals and preferences, facts learned, decisions made, tools called and what they returned, " +
	"and what is still open. Be concise and keep names, numbers and identifiers exact. " +
	"When it begins with an earlier summary, fold that summary in."

// summaryPrefix opens the text of a summary message.
const summaryPrefix = "Summary of the conversation so far:\n\n"

// SummaryPolicy says when Summarize summarizes and what it keeps.
type SummaryPolicy struct {
	// MaxTokens is the size of the conversation (by Counter or
	// EstimateTokens, tool definitions left out) above which the older
	// messages are summarized. Zero turns summarizing off.
	MaxTokens int
	// KeepTokens is how much of the end of the conversation is kept as it
	// is, cut as TrimRequest cuts (a tool call stays with its results);
	// the messages before it, after the leading system messages, are
	// summarized. Zero keeps a quarter of MaxTokens.
	KeepTokens int
	// Instructions replace DefaultSummaryInstructions.
	Instructions string
	// Counter, when set, counts the conversation's tokens in place of
	// EstimateTokens: once a call to see whether it is over MaxTokens,
	// and, when it is, about log2(n) times more to find the end to keep
	// (see TrimPolicy.Counter for the cost). A failed count fails the
	// call. Nil estimates.
	Counter TokenCounter
}

// Summarize returns a Middleware that keeps the conversation a model is
// sent within p: when it is over p.MaxTokens, the older messages are
// summarized by m (a small model will do) and the model is sent the
// leading system messages, the summary (a system message marked with
// MetaSummary) and the end of the conversation that p.KeepTokens keeps.
//
// Inside a graph the summary is computed once: the LLM node stores it in
// the thread (see WithHistory), after the messages it summarizes and
// before the reply, with the number of messages it stands for
// (MetaSummaryCovers). The state keeps the whole conversation, and every
// later call is sent the latest summary in place of the messages it
// covers, so that a thread resumed in another process finds the summary
// and does not ask for it again. A later summary folds the earlier one
// in. Outside a graph (no WithHistory in the context) nothing stores the
// summary, and each call over the limit asks for one.
//
// Summarize counts messages of the conversation as the LLM node sends
// it: put it outside (before, in Chain's list) any middleware that drops
// messages, such as Trim, which then works as a hard cap behind it. The
// summarizing call fails the call it serves with its error, and so does
// a failed count with p.Counter.
func Summarize(m model.Model, p SummaryPolicy) Middleware {
	if m == nil {
		panic("modelmw: Summarize with a nil model")
	}
	keep := p.KeepTokens
	if keep <= 0 {
		keep = max(p.MaxTokens/4, 1)
	}
	return Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		if p.MaxTokens <= 0 {
			return req, nil, nil
		}
		head := leadingSystem(req.Messages)
		rest := req.Messages[head:]
		view, at, rewritten := summarizedView(rest)
		size, err := conversationTokens(ctx, p.Counter, req.Model, req.Messages[:head], view)
		if err != nil {
			return nil, nil, fmt.Errorf("modelmw: summarize: %w", err)
		}
		if size <= p.MaxTokens {
			if !rewritten {
				return req, nil, nil
			}
			return withMessages(req, head, view), nil, nil
		}
		// The stored summary (a system message, which TrimMessages would
		// keep) is folded into the next one, never kept.
		old := 0
		if rewritten {
			old = 1
		}
		kept, err := trimRequest(ctx, &model.Request{Model: req.Model, Messages: view[old:]}, TrimPolicy{MaxTokens: keep, Counter: p.Counter})
		if err != nil {
			return nil, nil, fmt.Errorf("modelmw: summarize: choosing the end to keep: %w", err)
		}
		tail := kept.Messages
		cut := len(view) - len(tail)
		if cut <= old || cut >= len(view) {
			// The end to keep is all there is: nothing older to
			// summarize.
			if !rewritten {
				return req, nil, nil
			}
			return withMessages(req, head, view), nil, nil
		}
		summary, err := SummaryMessage(ctx, m, view[:cut], p.Instructions)
		if err != nil {
			return nil, nil, err
		}
		// The summary stands for every message of rest before the first
		// one kept.
		summary.Metadata[MetaSummaryCovers] = strconv.Itoa(at[cut])
		AddToHistory(ctx, summary)
		return withMessages(req, head, append([]model.Message{summary}, tail...)), nil, nil
	})
}

// conversationTokens returns the tokens of head then rest, sent to
// modelName: counted by c, or estimated when c is nil.
func conversationTokens(ctx context.Context, c TokenCounter, modelName string, head, rest []model.Message) (int, error) {
	if c == nil {
		return EstimateTokens(&model.Request{Messages: head}) + EstimateTokens(&model.Request{Messages: rest}), nil
	}
	msgs := make([]model.Message, 0, len(head)+len(rest))
	msgs = append(append(msgs, head...), rest...)
	n, err := c.CountTokens(ctx, &model.Request{Model: modelName, Messages: msgs})
	if err != nil {
		return 0, fmt.Errorf("counting the tokens of %d messages: %w", len(msgs), err)
	}
	return n, nil
}

// SummaryMessage asks m for a summary of msgs, with instructions (or
// DefaultSummaryInstructions when empty), and returns it as a system
// message marked with MetaSummary. An earlier summary among msgs is shown
// to m as such, to be folded in.
func SummaryMessage(ctx context.Context, m model.Model, msgs []model.Message, instructions string) (model.Message, error) {
	if instructions == "" {
		instructions = DefaultSummaryInstructions
	}
	resp, err := m.Generate(ctx, &model.Request{Messages: []model.Message{
		model.System(instructions),
		model.User(transcript(msgs)),
	}})
	if err != nil {
		return model.Message{}, fmt.Errorf("modelmw: summarizing %d messages: %w", len(msgs), err)
	}
	if resp == nil {
		return model.Message{}, fmt.Errorf("modelmw: summarizing %d messages: %w", len(msgs), ErrNoReply)
	}
	s := model.System(summaryPrefix + strings.TrimSpace(resp.Message.Text()))
	s.Metadata = map[string]string{MetaSummary: "true"}
	return s, nil
}

// summarizedView returns rest as a model is to see it: the latest summary
// Summarize stored, in place of the messages it covers, then the messages
// after them without the summaries (which the latest folds in). at[i] is
// the index in rest of view[i] (len(rest) past the end); rewritten is
// false when view is rest.
func summarizedView(rest []model.Message) (view []model.Message, at []int, rewritten bool) {
	latest, covers := -1, 0
	for i := len(rest) - 1; i >= 0; i-- {
		if rest[i].Metadata[MetaSummary] == "" {
			continue
		}
		if n, err := strconv.Atoi(rest[i].Metadata[MetaSummaryCovers]); err == nil && n >= 0 && n <= i {
			latest, covers = i, n
			break
		}
	}
	view = make([]model.Message, 0, len(rest))
	at = make([]int, 0, len(rest)+1)
	if latest < 0 {
		view = append(view, rest...)
		for i := range rest {
			at = append(at, i)
		}
		return view, append(at, len(rest)), false
	}
	view, at = append(view, rest[latest]), append(at, latest)
	for i := covers; i < len(rest); i++ {
		if rest[i].Metadata[MetaSummary] == "" {
			view, at = append(view, rest[i]), append(at, i)
		}
	}
	return view, append(at, len(rest)), true
}

// withMessages returns a copy of req sending its first head messages,
// then rest.
func withMessages(req *model.Request, head int, rest []model.Message) *model.Request {
	r := *req
	r.Messages = make([]model.Message, 0, head+len(rest))
	r.Messages = append(r.Messages, req.Messages[:head]...)
	r.Messages = append(r.Messages, rest...)
	return &r
}

// leadingSystem counts the system messages msgs starts with, summaries
// aside.
func leadingSystem(msgs []model.Message) int {
	n := 0
	for n < len(msgs) && msgs[n].Role == model.RoleSystem && msgs[n].Metadata[MetaSummary] == "" {
		n++
	}
	return n
}

// transcript renders messages as text for a summarizing model.
func transcript(msgs []model.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		role := string(m.Role)
		text := m.Text()
		if m.Metadata[MetaSummary] != "" {
			role = "earlier summary"
			text = strings.TrimPrefix(text, summaryPrefix)
		}
		fmt.Fprintf(&b, "[%s] %s\n", role, text)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "[tool call %s] %s\n", c.Name, c.Arguments)
		}
	}
	return b.String()
}

// historyKey is the context key of a call's history sink.
type historyKey struct{}

// WithHistory returns ctx carrying add, to which middleware hands the
// messages a call adds to the run's conversation for good (a summary,
// see Summarize). The LLM node sets it: the messages handed to add are
// stored in the state, before the reply, when the call succeeds. add may
// be called from several goroutines.
func WithHistory(ctx context.Context, add func(model.Message)) context.Context {
	return context.WithValue(ctx, historyKey{}, add)
}

// AddToHistory hands msg to the history sink of ctx (see WithHistory),
// and reports whether there was one.
func AddToHistory(ctx context.Context, msg model.Message) bool {
	add, _ := ctx.Value(historyKey{}).(func(model.Message))
	if add == nil {
		return false
	}
	add(msg)
	return true
}
