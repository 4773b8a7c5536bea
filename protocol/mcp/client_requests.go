package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// ElicitationHandler answers a server's elicitation/create: it asks the
// user and returns the answer. Defaults the schema gives for fields the
// answer leaves out are filled in afterwards (SEP-1034).
//
// It runs with the values of the context of the tool call the request
// belongs to (see Toolset's doc), so it can reach the run: an error that
// is a *graph.InterruptError (returned by graph.Interrupt) pauses the run,
// and the call is made again when the run is resumed.
type ElicitationHandler func(ctx context.Context, req tool.ElicitRequest) (tool.ElicitResult, error)

// SamplingHandler answers a server's sampling/createMessage, typically
// with a model.Model after a policy check (see SampleWith). It runs with
// the values of the call's context, as an ElicitationHandler does.
type SamplingHandler func(ctx context.Context, req tool.SamplingRequest) (tool.SamplingResult, error)

// WithElicitation makes the toolset answer the server's questions
// (elicitation/create) with fn instead of InterruptElicitation, the
// default. WithElicitation(nil) turns elicitation off: the toolset does
// not declare the capability.
func WithElicitation(fn ElicitationHandler) Option {
	return func(o *options) { o.elicit, o.elicitSet = fn, true }
}

// WithSingleUser declares that the toolset serves one user only (a stdio
// server started for that user, a remote server with that user's
// credentials), so that a server's request (elicitation, sampling, a log
// message) that comes apart from any call it can be shown to belong to is
// handled with the values of the only call in flight, if exactly one is:
// its handler can then pause that call's run. Third-party servers on
// protocols before 2026-07-28 do not echo the call's token (see Toolset),
// and without this option their questions never reach a run.
//
// The risk: the toolset cannot tell whose request it is, only that one
// call is in flight. On a toolset that serves several users, a request the
// server sends for one user's purpose (or outside any call) while another
// user's call is the only one in flight would reach that other user's run,
// and its person would be asked, or its model sampled, in the first user's
// stead. Use it only when every call the toolset makes is one user's. With
// several calls in flight, or none, nothing is guessed: the request gets no
// call's values, as without the option. A request that echoes a token is
// related by it alone.
func WithSingleUser() Option {
	return func(o *options) { o.singleUser = true }
}

// WithSampling makes the toolset declare the sampling capability and
// answer the server's sampling requests with fn (see SampleWith).
func WithSampling(fn SamplingHandler) Option {
	return func(o *options) { o.sample = fn }
}

// WithLogger sends the server's log messages (notifications/message) to l,
// at the matching slog level, with the server's name and logger.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithLogLevel asks the server to send log messages of level and above:
// "debug", "info", "notice", "warning", "error", "critical", "alert" or
// "emergency". On protocol 2025-11-25 and earlier it is set on each new
// session (logging/setLevel, for servers with the logging capability); on
// 2026-07-28 each tool call carries it in its _meta.
func WithLogLevel(level tool.LogLevel) Option {
	return func(o *options) { o.logLevel = level }
}

// Elicitation is the payload of the interrupt InterruptElicitation raises:
// the server's question, for a person to answer. Resume the run with a
// tool.ElicitResult (or a value that converts to one through JSON).
type Elicitation struct {
	// Server names the MCP server that asks; Tool and CallID name the call
	// it asks during, when known.
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// Message is the question; Schema the JSON schema of the answer.
	Message string          `json:"message"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// InterruptElicitation is the default ElicitationHandler: it pauses the
// graph run the tool call belongs to with graph.Interrupt, with an
// Elicitation as the payload, and answers the server with the value the run
// is resumed with (a tool.ElicitResult). Until then the call ends, and it
// runs again, from its start, when the run is resumed; the server asks
// again and gets the answer. Outside a graph run it fails: no one can be
// asked.
func InterruptElicitation(ctx context.Context, req tool.ElicitRequest) (tool.ElicitResult, error) {
	q := Elicitation{Server: ServerName(ctx), CallID: tool.CallID(ctx), Message: req.Message, Schema: req.Schema}
	if c, ok := ctx.Value(callKey{}).(*inflight); ok {
		q.Tool = c.tool
	}
	ans, err := graph.Interrupt[tool.ElicitResult](ctx, q)
	if err != nil {
		if _, ok := errors.AsType[*graph.InterruptError](err); ok {
			return tool.ElicitResult{}, err
		}
		// No call of a graph run to pause: the request came outside a
		// run, or apart from any call it can be shown to belong to (see
		// Toolset).
		return tool.ElicitResult{}, fmt.Errorf("mcp: server %s asked for input outside a graph run or apart from any call it relates to, and no elicitation handler is set: %w", quote(q.Server), err)
	}
	if ans.Action == "" {
		ans.Action = "accept"
	}
	return ans, nil
}

// LogEventName names the custom events (graph.ModeCustom) that carry a
// server's log messages into a run's stream; the payload is a LogEvent.
const LogEventName = "mcp.log"

// LogEvent is a log message a server sent while serving a tool call of a
// run (notifications/message).
type LogEvent struct {
	Server string        `json:"server"`
	Level  tool.LogLevel `json:"level"`
	Logger string        `json:"logger,omitempty"`
	Data   any           `json:"data"`
}

// clientOptions returns the go-sdk client options for o.
func (ts *Toolset) clientOptions() *sdk.ClientOptions {
	co := &sdk.ClientOptions{ToolListChangedHandler: ts.toolsChanged}
	fn := ts.o.elicit
	if !ts.o.elicitSet {
		fn = InterruptElicitation
	}
	if fn != nil {
		co.ElicitationHandler = func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			er := tool.ElicitRequest{Message: req.Params.Message}
			if req.Params.RequestedSchema != nil {
				raw, err := json.Marshal(req.Params.RequestedSchema)
				if err != nil {
					return nil, err
				}
				er.Schema = raw
			}
			hctx, c := ts.requestContext(ctx, req.Params.Meta)
			res, err := fn(hctx, er)
			if err != nil {
				if handled(c, err) {
					// The run waits for a person; the call is cancelled,
					// and made again when the run resumes. The server
					// learns nothing of the run.
					return &sdk.ElicitResult{Action: "cancel"}, nil
				}
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
			sr := tool.SamplingRequest{SystemPrompt: req.Params.SystemPrompt, MaxTokens: int(req.Params.MaxTokens), Stop: req.Params.StopSequences}
			if t := req.Params.Temperature; t != 0 {
				// The go-sdk cannot tell 0 from absent; 0 is taken as absent.
				sr.Temperature = &t
			}
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
			hctx, c := ts.requestContext(ctx, req.Params.Meta)
			res, err := fn(hctx, sr)
			if err != nil {
				if handled(c, err) {
					// As for elicitation: the server learns nothing of the run.
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the request waits for approval; the call is cancelled"}
				}
				if errors.Is(err, ErrSamplingDenied) {
					// The code and message the specification gives a refusal.
					return nil, &jsonrpc.Error{Code: -1, Message: "User rejected sampling request"}
				}
				return nil, err
			}
			content := Content(res.Message.Content)
			if len(content) == 0 {
				content = []sdk.Content{&sdk.TextContent{}}
			}
			return &sdk.CreateMessageResult{Role: "assistant", Content: content[0], Model: res.Model, StopReason: res.StopReason}, nil
		}
	}
	l := ts.o.logger
	co.LoggingMessageHandler = func(ctx context.Context, req *sdk.LoggingMessageRequest) {
		p := req.Params
		if c := ts.callOf(ctx, p.Meta); c != nil {
			c.emit(LogEventName, LogEvent{Server: ts.name, Level: tool.LogLevel(p.Level), Logger: p.Logger, Data: p.Data})
		}
		if l != nil {
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
