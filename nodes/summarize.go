package nodes

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
)

// MetaSummary is the Message.Metadata key that marks the message a
// Summarize node wrote in place of the messages it summarized.
const MetaSummary = "trellis.summary"

// SummaryPolicy says when a Summarize node summarizes and what it keeps.
type SummaryPolicy struct {
	// MaxTokens is the size of the conversation (by
	// modelmw.EstimateTokens) above which the node summarizes.
	MaxTokens int
	// KeepTokens is how much of the end of the conversation the node keeps
	// as it is (cut as modelmw.TrimMessages cuts: a tool call stays with
	// its results); the messages before it, after the leading system
	// messages, are summarized. Zero keeps a quarter of MaxTokens.
	KeepTokens int
	// Instructions replace the default instructions of the summarizing
	// call.
	Instructions string
}

const defaultSummaryInstructions = "Summarize the conversation below for the assistant that continues it: " +
	"the user's goals and preferences, facts learned, decisions made, tools called and what they returned, " +
	"and what is still open. Be concise and keep names, numbers and identifiers exact. " +
	"When it begins with an earlier summary, fold that summary in."

// Summarize returns a node that keeps the conversation within p: when it
// is larger than p.MaxTokens, the node asks m (a small model will do) for
// a summary of its older messages and replaces them in the state with one
// user message holding the summary (Metadata MetaSummary), before the
// messages it keeps. The summary is part of the state, so it is computed
// once, checkpointed with the thread and found again on resume; a later
// summary folds the earlier one in. Place it before the LLM node (an edge
// into it), or run it as a step of your own loop.
//
// The node rewrites the conversation: with nodes.MessagesReducer, the
// messages it drops are removed by their absence, and the summary is
// added.
func Summarize[S any, PS ChatState[S]](m model.Model, p SummaryPolicy) graph.NodeFunc[S] {
	keep := p.KeepTokens
	if keep <= 0 {
		keep = max(p.MaxTokens/4, 1)
	}
	instructions := p.Instructions
	if instructions == "" {
		instructions = defaultSummaryInstructions
	}
	return func(ctx context.Context, s S) (S, error) {
		msgs := *PS(&s).ChatMessages()
		if p.MaxTokens <= 0 || modelmw.EstimateTokens(&model.Request{Messages: msgs}) <= p.MaxTokens {
			return s, nil
		}
		head := 0
		for head < len(msgs) && msgs[head].Role == model.RoleSystem {
			head++
		}
		tail := modelmw.TrimMessages(msgs[head:], modelmw.TrimPolicy{MaxTokens: keep})
		cut := len(msgs) - len(tail)
		if cut <= head {
			return s, nil // the end to keep is all there is
		}
		resp, err := m.Generate(ctx, &model.Request{Messages: []model.Message{
			model.System(instructions),
			model.User(transcript(msgs[head:cut])),
		}})
		if err != nil {
			return s, fmt.Errorf("nodes: summarizing %d messages: %w", cut-head, err)
		}
		summary := model.User("Summary of the conversation so far:\n\n" + strings.TrimSpace(resp.Message.Text()))
		summary.ID = NewMessageID()
		summary.Metadata = map[string]string{MetaSummary: "true"}
		out := make([]model.Message, 0, head+1+len(tail))
		out = append(out, msgs[:head]...)
		out = append(out, summary)
		out = append(out, tail...)
		*PS(&s).ChatMessages() = out
		return s, nil
	}
}

// transcript renders messages as text for a summarizing model.
func transcript(msgs []model.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		role := string(m.Role)
		if m.Metadata[MetaSummary] != "" {
			role = "earlier summary"
		}
		fmt.Fprintf(&b, "[%s] %s\n", role, m.Text())
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "[tool call %s] %s\n", c.Name, c.Arguments)
		}
	}
	return b.String()
}
