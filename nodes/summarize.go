package nodes

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
)

// MetaSummary is the Message.Metadata key that marks the message a
// Summarize node wrote in place of the messages it summarized (the key of
// modelmw.Summarize's summaries too).
const MetaSummary = modelmw.MetaSummary

// SummaryPolicy says when a Summarize node summarizes and what it keeps.
type SummaryPolicy struct {
	// MaxTokens is the size of the conversation (by Counter or
	// modelmw.EstimateTokens) above which the node summarizes.
	MaxTokens int
	// KeepTokens is how much of the end of the conversation the node keeps
	// as it is (cut as modelmw.TrimRequest cuts: a tool call stays with
	// its results); the messages before it, after the leading system
	// messages, are summarized. Zero keeps a quarter of MaxTokens.
	KeepTokens int
	// Instructions replace modelmw.DefaultSummaryInstructions.
	Instructions string
	// Counter, when set, counts the conversation's tokens in place of
	// modelmw.EstimateTokens: once a step to see whether it is over
	// MaxTokens, and, when it is, about log2(n) times more to find the
	// end to keep (see modelmw.TrimPolicy.Counter for the cost). A failed
	// count fails the node. Nil estimates.
	Counter modelmw.TokenCounter
}

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
	return func(ctx context.Context, s S) (S, error) {
		msgs := *PS(&s).ChatMessages()
		if p.MaxTokens <= 0 {
			return s, nil
		}
		var size int
		if p.Counter == nil {
			size = modelmw.EstimateTokens(&model.Request{Messages: msgs})
		} else {
			var err error
			if size, err = p.Counter.CountTokens(ctx, &model.Request{Messages: msgs}); err != nil {
				return s, fmt.Errorf("nodes: summarize: counting the tokens of %d messages: %w", len(msgs), err)
			}
		}
		if size <= p.MaxTokens {
			return s, nil
		}
		head := 0
		for head < len(msgs) && msgs[head].Role == model.RoleSystem {
			head++
		}
		kept, err := modelmw.TrimRequest(ctx, &model.Request{Messages: msgs[head:]}, modelmw.TrimPolicy{MaxTokens: keep, Counter: p.Counter})
		if err != nil {
			return s, fmt.Errorf("nodes: summarize: choosing the end to keep: %w", err)
		}
		tail := kept.Messages
		cut := len(msgs) - len(tail)
		if cut <= head {
			return s, nil // the end to keep is all there is
		}
		summary, err := modelmw.SummaryMessage(ctx, m, msgs[head:cut], p.Instructions)
		if err != nil {
			return s, fmt.Errorf("nodes: %w", err)
		}
		// The node's summary takes the place of the messages in the
		// conversation, as the user's.
		summary.Role = model.RoleUser
		summary.ID = NewMessageID()
		out := make([]model.Message, 0, head+1+len(tail))
		out = append(out, msgs[:head]...)
		out = append(out, summary)
		out = append(out, tail...)
		*PS(&s).ChatMessages() = out
		return s, nil
	}
}
