package modelmw

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/model"
)

// TrimPolicy says how far Trim, TrimRequest and TrimMessages shorten a
// conversation. A zero limit is no limit.
type TrimPolicy struct {
	// MaxTokens caps the prompt's tokens: messages and tool definitions,
	// by Counter or, without one, by EstimateTokens. Leave the reply's
	// room (Settings.MaxTokens) between it and the model's window, and a
	// margin for the estimate when there is no Counter.
	MaxTokens int
	// MaxMessages caps the messages after the leading system messages.
	MaxMessages int
	// Counter, when set, counts the tokens of the requests TrimRequest
	// (and so Trim) weighs against MaxTokens: the whole request is counted
	// once, and when it is over, a binary search over the places where
	// the conversation may be cut counts about log2(n) shorter ones, n
	// the turn units of the conversation. With a provider's count
	// endpoint each count is a network call: prefer an offline counter
	// (such as model/openai/tokens) or the estimate with a margin. Nil
	// estimates. TrimMessages, which takes no context, always estimates.
	Counter TokenCounter
}

// Trim returns a Middleware that sends the model the request shortened by
// TrimRequest when it is over p's limits. The conversation in the run's
// state is left whole: the model sees the trimmed copy on every call (see
// the Summarize node to shorten the state itself). A failed count (with
// p.Counter) fails the call.
func Trim(p TrimPolicy) Middleware {
	return Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		r, err := TrimRequest(ctx, req, p)
		return r, nil, err
	})
}

// TrimRequest returns req with its conversation shortened to fit p, cut
// as TrimMessages cuts: the leading system messages are kept and the
// oldest turn units dropped, a tool call never kept without its results.
// The tokens weighed against p.MaxTokens are those of the whole request
// sent (system messages, the messages kept and req's tools).
//
// With p.Counter, the request kept is the one with the longest end of the
// conversation that the counter says fits (the last unit is kept even
// when it alone does not): req is counted whole first and returned as it
// is when it fits, else about log2(n) shorter requests are counted, which
// relies on a longer end never counting fewer tokens. A counter's error
// is returned, wrapped: it is not replaced by the estimate, because a
// caller who gave a counter relies on the limit holding by it, and an
// estimate can be short of the real count (code, other languages) or
// drop more than needed. A caller who wants the estimate when counting
// fails can give a counter that falls back to EstimateTokens itself.
//
// Without p.Counter, the tool definitions are estimated once and the
// messages cut by TrimMessages within what is left. TrimRequest returns
// req itself when nothing is dropped; it never changes req.
func TrimRequest(ctx context.Context, req *model.Request, p TrimPolicy) (*model.Request, error) {
	r, err := trimRequest(ctx, req, p)
	if err != nil {
		return nil, fmt.Errorf("modelmw: trim: %w", err)
	}
	return r, nil
}

// trimRequest is TrimRequest, its errors not yet named for the trim.
func trimRequest(ctx context.Context, req *model.Request, p TrimPolicy) (*model.Request, error) {
	if p.MaxTokens <= 0 && p.MaxMessages <= 0 {
		return req, nil
	}
	var msgs []model.Message
	if p.Counter == nil || p.MaxTokens <= 0 {
		q := p
		if q.MaxTokens > 0 && len(req.Tools) > 0 {
			q.MaxTokens = max(q.MaxTokens-EstimateTokens(&model.Request{Tools: req.Tools}), 1)
		}
		msgs = TrimMessages(req.Messages, q)
	} else {
		var err error
		if msgs, err = trimCounted(ctx, req, p); err != nil {
			return nil, err
		}
	}
	if len(msgs) == len(req.Messages) {
		return req, nil
	}
	r := *req
	r.Messages = msgs
	return &r, nil
}

// trimCounted is TrimRequest with p.Counter and p.MaxTokens set: it
// returns the messages of the longest request that fits by the counter.
func trimCounted(ctx context.Context, req *model.Request, p TrimPolicy) ([]model.Message, error) {
	msgs := req.Messages
	head, units := turnUnits(msgs)
	count := func(from int) (int, error) {
		r := *req
		if from > head {
			r.Messages = make([]model.Message, 0, head+len(msgs)-from)
			r.Messages = append(r.Messages, msgs[:head]...)
			r.Messages = append(r.Messages, msgs[from:]...)
		}
		n, err := p.Counter.CountTokens(ctx, &r)
		if err != nil {
			return 0, fmt.Errorf("counting the tokens of %d messages: %w", len(r.Messages), err)
		}
		return n, nil
	}
	if len(units) == 0 {
		return cutAt(msgs, head, len(msgs)), nil
	}
	// lo is the first unit MaxMessages allows; the last one is kept
	// whatever the limits.
	lo, hi := 0, len(units)-1
	for lo < hi && p.MaxMessages > 0 && len(msgs)-units[lo] > p.MaxMessages {
		lo++
	}
	// The cheap case first: the request as it is fits, and so does any
	// shorter one.
	n, err := count(head)
	if err != nil {
		return nil, err
	}
	if n <= p.MaxTokens {
		return cutAt(msgs, head, units[lo]), nil
	}
	// The first unit from which the rest fits, or the last one.
	for lo < hi {
		mid := lo + (hi-lo)/2
		n, err := count(units[mid])
		if err != nil {
			return nil, err
		}
		if n <= p.MaxTokens {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return cutAt(msgs, head, units[lo]), nil
}

// TrimMessages returns the end of msgs that fits p by EstimateTokens
// (p.Counter is not used: see TrimRequest to count exactly), keeping the
// system messages it starts with. It drops the oldest messages first, a
// turn unit at a time, where a unit is a message with the tool messages
// that answer its calls: a tool call is never kept without its results
// nor a result without its call, and tool messages whose call is not in
// msgs are dropped. The last unit is kept even when it alone is over the
// limits. It returns msgs itself when nothing is dropped.
func TrimMessages(msgs []model.Message, p TrimPolicy) []model.Message {
	if p.MaxTokens <= 0 && p.MaxMessages <= 0 {
		return msgs
	}
	head, units := turnUnits(msgs)
	tokens := 0
	for i := range msgs {
		tokens += EstimateMessageTokens(&msgs[i])
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
	return cutAt(msgs, head, from)
}

// turnUnits returns how many system messages msgs starts with, and the
// index in msgs where each turn unit after them starts: a message other
// than a tool message, with the tool messages that follow it.
func turnUnits(msgs []model.Message) (head int, units []int) {
	for head < len(msgs) && msgs[head].Role == model.RoleSystem {
		head++
	}
	for i := head; i < len(msgs); i++ {
		if msgs[i].Role != model.RoleTool {
			units = append(units, i)
		}
	}
	return head, units
}

// cutAt returns the first head messages of msgs and those from from on:
// msgs itself when from is head.
func cutAt(msgs []model.Message, head, from int) []model.Message {
	if from == head {
		return msgs
	}
	out := make([]model.Message, 0, head+len(msgs)-from)
	out = append(out, msgs[:head]...)
	return append(out, msgs[from:]...)
}
