package modelmw

import (
	"context"

	"github.com/trellis-go/trellis/model"
)

// TrimPolicy says how far Trim and TrimMessages shorten a conversation.
// A zero limit is no limit.
type TrimPolicy struct {
	// MaxTokens caps the prompt's tokens by EstimateTokens: messages and
	// tool definitions. Leave the reply's room (Settings.MaxTokens) and a
	// margin for the estimate between it and the model's window.
	MaxTokens int
	// MaxMessages caps the messages after the leading system messages.
	MaxMessages int
}

// Trim returns a Middleware that sends the model the conversation
// shortened by TrimMessages when it is over p's limits. The conversation
// in the run's state is left whole: the model sees the trimmed copy on
// every call (see the Summarize node to shorten the state itself).
func Trim(p TrimPolicy) Middleware {
	return Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		overhead := 0
		if p.MaxTokens > 0 && len(req.Tools) > 0 {
			overhead = EstimateTokens(&model.Request{Tools: req.Tools})
		}
		q := p
		if q.MaxTokens > 0 {
			q.MaxTokens = max(q.MaxTokens-overhead, 1)
		}
		msgs := TrimMessages(req.Messages, q)
		if len(msgs) == len(req.Messages) {
			return req, nil, nil
		}
		r := *req
		r.Messages = msgs
		return &r, nil, nil
	})
}

// TrimMessages returns the end of msgs that fits p, keeping the system
// messages it starts with. It drops the oldest messages first, a turn
// unit at a time, where a unit is a message with the tool messages that
// answer its calls: a tool call is never kept without its results nor a
// result without its call, and tool messages whose call is not in msgs
// are dropped. The last unit is kept even when it alone is over the
// limits. It returns msgs itself when nothing is dropped.
func TrimMessages(msgs []model.Message, p TrimPolicy) []model.Message {
	if p.MaxTokens <= 0 && p.MaxMessages <= 0 {
		return msgs
	}
	head := 0
	for head < len(msgs) && msgs[head].Role == model.RoleSystem {
		head++
	}
	// units[i] is the index in msgs where unit i starts.
	var units []int
	tokens := 0
	for i := range msgs {
		tokens += EstimateMessageTokens(&msgs[i])
		if i >= head && msgs[i].Role != model.RoleTool {
			units = append(units, i)
		}
	}
	// A tool message at the start of the rest answers a call that is not
	// there: drop it whatever the limits.
	start := len(msgs)
	if len(units) > 0 {
		start = units[0]
	}
	for i := head; i < start; i++ {
		tokens -= EstimateMessageTokens(&msgs[i])
	}
	fits := func(from, tokens int) bool {
		if p.MaxTokens > 0 && tokens > p.MaxTokens {
			return false
		}
		return p.MaxMessages <= 0 || len(msgs)-from <= p.MaxMessages
	}
	u := 0
	for u < len(units)-1 && !fits(units[u], tokens) {
		for i := units[u]; i < units[u+1]; i++ {
			tokens -= EstimateMessageTokens(&msgs[i])
		}
		u++
	}
	from := len(msgs)
	if u < len(units) {
		from = units[u]
	}
	if from == head {
		return msgs
	}
	out := make([]model.Message, 0, head+len(msgs)-from)
	out = append(out, msgs[:head]...)
	return append(out, msgs[from:]...)
}
