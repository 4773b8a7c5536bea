package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// sessionPeer is the MCP client a served tool was called by: tool.Log,
// tool.Sample and tool.Elicit reach it through the call's context. Each
// request carries the token the client gave the call, if any, under
// relatedCallMeta, so that the client can tell which of its calls the
// request belongs to.
type sessionPeer struct {
	ss    *sdk.ServerSession
	token string // the call's token (relatedCallMeta), or ""
}

// meta returns the _meta of a request sent while serving the call.
func (p sessionPeer) meta() sdk.Meta {
	if p.token == "" {
		return nil
	}
	return sdk.Meta{relatedCallMeta: p.token}
}

// callToken returns the token a client gave a call under relatedCallMeta,
// or "" when it gave none or one past maxCallToken.
func callToken(meta sdk.Meta) string {
	token, _ := meta[relatedCallMeta].(string)
	if len(token) > maxCallToken {
		return ""
	}
	return token
}

var _ tool.Peer = sessionPeer{}

// Log sends notifications/message; the go-sdk drops it when the client has
// not set a level or set a higher one.
func (p sessionPeer) Log(ctx context.Context, level tool.LogLevel, logger string, data any) error {
	return p.ss.Log(ctx, &sdk.LoggingMessageParams{Meta: p.meta(), Level: sdk.LoggingLevel(level), Logger: logger, Data: data})
}

// Sample sends sampling/createMessage, or fails with tool.ErrNoPeer when the
// client declared no sampling capability.
func (p sessionPeer) Sample(ctx context.Context, req tool.SamplingRequest) (tool.SamplingResult, error) {
	params, err := samplingParams(p.ss, req)
	if err != nil {
		return tool.SamplingResult{}, err
	}
	params.Meta = p.meta()
	res, err := p.ss.CreateMessage(ctx, params)
	if err != nil {
		return tool.SamplingResult{}, fmt.Errorf("mcp: sampling: %w", err)
	}
	return tool.SamplingResult{
		Message:    model.Message{Role: model.RoleAssistant, Content: Parts([]sdk.Content{res.Content})},
		Model:      res.Model,
		StopReason: res.StopReason,
	}, nil
}

// samplingParams returns the parameters of sampling/createMessage for req,
// or fails with tool.ErrNoPeer when the client of ss declared no sampling
// capability.
func samplingParams(ss *sdk.ServerSession, req tool.SamplingRequest) (*sdk.CreateMessageParams, error) {
	if ip := ss.InitializeParams(); ip == nil || ip.Capabilities == nil || ip.Capabilities.Sampling == nil {
		return nil, fmt.Errorf("%w: the MCP client does not offer sampling", tool.ErrNoPeer)
	}
	params := &sdk.CreateMessageParams{SystemPrompt: req.SystemPrompt, MaxTokens: int64(req.MaxTokens), StopSequences: req.Stop}
	if req.Temperature != nil {
		params.Temperature = *req.Temperature
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultSamplingMaxTokens
	}
	for _, m := range req.Messages {
		role := sdk.Role("user")
		if m.Role == model.RoleAssistant {
			role = "assistant"
		}
		for _, c := range Content(m.Content) {
			params.Messages = append(params.Messages, &sdk.SamplingMessage{Role: role, Content: c})
		}
	}
	return params, nil
}

// DefaultSamplingMaxTokens is the maxTokens of a sampling request that sets
// none (the protocol requires one).
const DefaultSamplingMaxTokens = 1024

// Elicit sends elicitation/create (a form), or fails with tool.ErrNoPeer
// when the client declared no elicitation capability.
func (p sessionPeer) Elicit(ctx context.Context, req tool.ElicitRequest) (tool.ElicitResult, error) {
	params, err := elicitParams(p.ss, req)
	if err != nil {
		return tool.ElicitResult{}, err
	}
	params.Meta = p.meta()
	res, err := p.ss.Elicit(ctx, params)
	if err != nil {
		return tool.ElicitResult{}, fmt.Errorf("mcp: elicitation: %w", err)
	}
	return tool.ElicitResult{Action: res.Action, Content: res.Content}, nil
}

// elicitParams returns the parameters of elicitation/create for req, or
// fails with tool.ErrNoPeer when the client of ss declared no elicitation
// capability.
func elicitParams(ss *sdk.ServerSession, req tool.ElicitRequest) (*sdk.ElicitParams, error) {
	if ip := ss.InitializeParams(); ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return nil, fmt.Errorf("%w: the MCP client does not offer elicitation", tool.ErrNoPeer)
	}
	params := &sdk.ElicitParams{Message: req.Message}
	if len(req.Schema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(req.Schema, &schema); err != nil {
			return nil, fmt.Errorf("mcp: elicitation: the schema is not a JSON object: %w", err)
		}
		params.RequestedSchema = schema
	}
	return params, nil
}
