package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// ErrSamplingDenied: the sampling policy, or the person asked, refused a
// server's sampling request. The server is told "User rejected sampling
// request" (code -1), as the specification says.
var ErrSamplingDenied = errors.New("mcp: sampling request denied")

// SamplingDecision is what a SamplingPolicy decides for a sampling request.
type SamplingDecision int

// The decisions.
const (
	// SamplingAsk pauses the run to ask a person (see SamplingApproval).
	SamplingAsk SamplingDecision = iota
	// SamplingAllow sends the request to the model.
	SamplingAllow
	// SamplingDeny refuses it (ErrSamplingDenied).
	SamplingDeny
)

// SamplingPolicy decides whether a server's sampling request goes to the
// model. ServerName(ctx) names the server; ctx carries the values of the
// tool call the request belongs to (the run's, the user's).
type SamplingPolicy func(ctx context.Context, req tool.SamplingRequest) SamplingDecision

// SamplingApproval is the payload of the interrupt a SamplingAsk decision
// raises: the request a server wants the model to answer. Resume the run
// with true to send it to the model, false to refuse it.
type SamplingApproval struct {
	// Server names the MCP server that asks; Tool and CallID name the call
	// it asks during, when known.
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// Request is what the model would be asked.
	Request tool.SamplingRequest `json:"request"`
}

// SampleWith returns a SamplingHandler that answers with m, after policy:
// SamplingAllow sends the request to m, SamplingDeny refuses it, and
// SamplingAsk pauses the graph run the tool call belongs to with
// graph.Interrupt and a SamplingApproval, and goes on as the person
// decides when the run is resumed (the call runs again from its start; the
// server asks again). A nil policy asks every time. Outside a graph run,
// asking fails.
//
// The model gets the server's system prompt as a system message, then the
// server's messages, with the server's token limit, temperature and stop
// sequences; it answers with its
// reply's text, image and audio parts (the first of them: sampling answers
// with one content block), and its finish reason as MCP's stop reason
// ("endTurn", "maxTokens", or the provider's).
func SampleWith(m model.Model, policy SamplingPolicy) SamplingHandler {
	return func(ctx context.Context, req tool.SamplingRequest) (tool.SamplingResult, error) {
		decision := SamplingAsk
		if policy != nil {
			decision = policy(ctx, req)
		}
		switch decision {
		case SamplingAllow:
		case SamplingAsk:
			q := SamplingApproval{Server: ServerName(ctx), CallID: tool.CallID(ctx), Request: req}
			if c, ok := ctx.Value(callKey{}).(*inflight); ok {
				q.Tool = c.tool
			}
			ok, err := graph.Interrupt[bool](ctx, q)
			if err != nil {
				if _, isPause := errors.AsType[*graph.InterruptError](err); isPause {
					return tool.SamplingResult{}, err
				}
				return tool.SamplingResult{}, fmt.Errorf("%w: no one to ask outside a graph run: %w", ErrSamplingDenied, err)
			}
			if !ok {
				return tool.SamplingResult{}, ErrSamplingDenied
			}
		default:
			return tool.SamplingResult{}, ErrSamplingDenied
		}
		mreq := &model.Request{Settings: model.Settings{MaxTokens: req.MaxTokens, Temperature: req.Temperature, Stop: req.Stop}}
		if req.SystemPrompt != "" {
			mreq.Messages = append(mreq.Messages, model.System(req.SystemPrompt))
		}
		mreq.Messages = append(mreq.Messages, req.Messages...)
		resp, err := m.Generate(ctx, mreq)
		if err != nil {
			return tool.SamplingResult{}, fmt.Errorf("mcp: sampling for server %s: %w", quote(ServerName(ctx)), err)
		}
		msg := model.Message{Role: model.RoleAssistant}
		for _, p := range resp.Message.Content {
			if p.Type == model.PartText || p.Type == model.PartImage || p.Type == model.PartAudio {
				msg.Content = append(msg.Content, p)
				break
			}
		}
		return tool.SamplingResult{Message: msg, Model: resp.Model, StopReason: stopReason(resp.FinishReason)}, nil
	}
}

// stopReason maps a model's finish reason to MCP's stop reason.
func stopReason(finish string) string {
	switch finish {
	case "stop", "":
		return "endTurn"
	case "length":
		return "maxTokens"
	default:
		return finish
	}
}
