package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// ElicitationHandler answers a server's elicitation/create: it asks the
// user and returns the answer. Defaults the schema gives for fields the
// answer leaves out are filled in afterwards (SEP-1034).
type ElicitationHandler func(ctx context.Context, req tool.ElicitRequest) (tool.ElicitResult, error)

// SamplingHandler answers a server's sampling/createMessage, typically
// with a model.Model after a policy check.
type SamplingHandler func(ctx context.Context, req tool.SamplingRequest) (tool.SamplingResult, error)

// WithElicitation makes the toolset declare the elicitation capability and
// answer the server's questions with fn.
func WithElicitation(fn ElicitationHandler) Option {
	return func(o *options) { o.elicit = fn }
}

// WithSampling makes the toolset declare the sampling capability and
// answer the server's sampling requests with fn.
func WithSampling(fn SamplingHandler) Option {
	return func(o *options) { o.sample = fn }
}

// WithLogger sends the server's log messages (notifications/message) to l,
// at the matching slog level, with the server's name and logger.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// clientOptions returns the go-sdk client options for o.
func (ts *Toolset) clientOptions() *sdk.ClientOptions {
	co := &sdk.ClientOptions{ToolListChangedHandler: ts.toolsChanged}
	if fn := ts.o.elicit; fn != nil {
		co.ElicitationHandler = func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			er := tool.ElicitRequest{Message: req.Params.Message}
			if req.Params.RequestedSchema != nil {
				raw, err := json.Marshal(req.Params.RequestedSchema)
				if err != nil {
					return nil, err
				}
				er.Schema = raw
			}
			res, err := fn(ctx, er)
			if err != nil {
				return nil, err
			}
			if res.Action == "accept" {
				res.Content = applyDefaults(er.Schema, res.Content)
			}
			return &sdk.ElicitResult{Action: res.Action, Content: res.Content}, nil
		}
	}
	if fn := ts.o.sample; fn != nil {
		co.CreateMessageHandler = func(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			sr := tool.SamplingRequest{SystemPrompt: req.Params.SystemPrompt, MaxTokens: int(req.Params.MaxTokens)}
			for _, m := range req.Params.Messages {
				if m == nil {
					continue
				}
				role := model.RoleUser
				if m.Role == "assistant" {
					role = model.RoleAssistant
				}
				sr.Messages = append(sr.Messages, model.Message{Role: role, Content: Parts([]sdk.Content{m.Content})})
			}
			res, err := fn(ctx, sr)
			if err != nil {
				return nil, err
			}
			content := Content(res.Message.Content)
			if len(content) == 0 {
				content = []sdk.Content{&sdk.TextContent{}}
			}
			return &sdk.CreateMessageResult{Role: "assistant", Content: content[0], Model: res.Model, StopReason: res.StopReason}, nil
		}
	}
	if l := ts.o.logger; l != nil {
		co.LoggingMessageHandler = func(ctx context.Context, req *sdk.LoggingMessageRequest) {
			p := req.Params
			l.Log(ctx, slogLevel(p.Level), fmt.Sprint(p.Data), "mcp_server", ts.name, "logger", p.Logger)
		}
	}
	return co
}

// slogLevel maps an MCP log level to slog's.
func slogLevel(l sdk.LoggingLevel) slog.Level {
	switch l {
	case "debug":
		return slog.LevelDebug
	case "info", "notice":
		return slog.LevelInfo
	case "warning":
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

// applyDefaults fills in the defaults schema gives for the properties the
// content leaves out.
func applyDefaults(schema json.RawMessage, content map[string]any) map[string]any {
	var s struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return content
	}
	for name, p := range s.Properties {
		if p.Default == nil {
			continue
		}
		if _, ok := content[name]; !ok {
			if content == nil {
				content = map[string]any{}
			}
			content[name] = p.Default
		}
	}
	return content
}
