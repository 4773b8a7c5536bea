package modelmw

import (
	"context"
	"unicode/utf8"

	"github.com/trellis-go/trellis/model"
)

// TokenCounter counts the tokens a request's prompt takes: its messages,
// system prompt and tool definitions.
type TokenCounter interface {
	CountTokens(ctx context.Context, req *model.Request) (int, error)
}

// TokenCounterFunc adapts a function to TokenCounter.
type TokenCounterFunc func(ctx context.Context, req *model.Request) (int, error)

// CountTokens calls f(ctx, req).
func (f TokenCounterFunc) CountTokens(ctx context.Context, req *model.Request) (int, error) {
	return f(ctx, req)
}

// The figures of EstimateTokens.
const (
	// CharsPerToken is how many characters of text EstimateTokens counts
	// as a token: the rule of thumb for English text with the tokenizers
	// of OpenAI's and Anthropic's current models. Code, other languages
	// and JSON take more tokens per character, so leave a margin.
	CharsPerToken = 4
	// TokensPerMessage is what EstimateTokens adds for each message: the
	// role and the markers around it.
	TokensPerMessage = 4
	// TokensPerImage is what EstimateTokens counts for an image, whatever
	// its size: about what a provider charges for a picture of about a
	// megapixel.
	TokensPerImage = 1000
)

// Estimator returns the TokenCounter of EstimateTokens.
func Estimator() TokenCounter {
	return TokenCounterFunc(func(_ context.Context, req *model.Request) (int, error) {
		return EstimateTokens(req), nil
	})
}

// EstimateTokens estimates the tokens of a request's prompt without a
// tokenizer: a token per CharsPerToken characters of text (message text,
// reasoning, tool calls' names and arguments, JSON parts, tool
// definitions), TokensPerMessage per message and TokensPerImage per image.
// It is meant for limits with a margin, not for billing: a provider's
// count (see TokenCounter) is exact.
func EstimateTokens(req *model.Request) int {
	if req == nil {
		return 0
	}
	chars, fixed := 0, 0
	for i := range req.Messages {
		fixed += TokensPerMessage
		c, f := messageSize(&req.Messages[i])
		chars += c
		fixed += f
	}
	for _, d := range req.Tools {
		chars += utf8.RuneCountInString(d.Name) + utf8.RuneCountInString(d.Description) + len(d.InputSchema)
	}
	return fixed + (chars+CharsPerToken-1)/CharsPerToken
}

// EstimateMessageTokens estimates the tokens of one message as
// EstimateTokens counts it within a request.
func EstimateMessageTokens(m *model.Message) int {
	c, f := messageSize(m)
	return TokensPerMessage + f + (c+CharsPerToken-1)/CharsPerToken
}

// messageSize returns the characters of m's text and the tokens counted
// whole (images).
func messageSize(m *model.Message) (chars, fixed int) {
	for _, p := range m.Content {
		switch p.Type {
		case model.PartImage:
			fixed += TokensPerImage
		case model.PartJSON, model.PartProvider:
			chars += len(p.JSON)
		default:
			chars += utf8.RuneCountInString(p.Text)
		}
	}
	for _, c := range m.ToolCalls {
		chars += utf8.RuneCountInString(c.Name) + len(c.Arguments)
	}
	return chars, fixed
}

// countOrEstimate counts req's tokens with c, or estimates them when c is
// nil or fails.
func countOrEstimate(ctx context.Context, c TokenCounter, req *model.Request) int {
	if c != nil {
		if n, err := c.CountTokens(ctx, req); err == nil {
			return n
		}
	}
	return EstimateTokens(req)
}
