package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// ToolDefinition is what a model is told about a tool.
type ToolDefinition struct {
	// Name is the tool's name, unique within a request.
	Name string `json:"name"`
	// Description tells the model what the tool does and when to use it.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the tool's arguments (an object schema).
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// OutputSchema optionally describes the structured result.
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
}

// ToolChoiceMode says whether and how the model must call tools.
type ToolChoiceMode string

// The tool choice modes.
const (
	// ToolChoiceAuto lets the model decide (the default).
	ToolChoiceAuto ToolChoiceMode = ""
	// ToolChoiceNone forbids tool calls.
	ToolChoiceNone ToolChoiceMode = "none"
	// ToolChoiceRequired requires at least one tool call.
	ToolChoiceRequired ToolChoiceMode = "required"
	// ToolChoiceTool requires a call of the tool named in ToolChoice.Name.
	ToolChoiceTool ToolChoiceMode = "tool"
)

// ToolChoice constrains the model's use of tools.
type ToolChoice struct {
	Mode ToolChoiceMode `json:"mode,omitempty"`
	// Name is the required tool when Mode is ToolChoiceTool.
	Name string `json:"name,omitempty"`
}

// Check reports whether a request offering tools can satisfy c: a choice
// that forces a tool call needs tools to call, and ToolChoiceTool needs the
// tool it names among them. Providers check a request's choice before
// sending it, so that a choice no reply could follow fails with an error
// that says why rather than with the API's refusal. It does not judge the
// mode itself.
func (c ToolChoice) Check(tools []ToolDefinition) error {
	switch c.Mode {
	case ToolChoiceRequired:
		if len(tools) == 0 {
			return errors.New("tool choice requires a tool call, but the request offers no tools")
		}
	case ToolChoiceTool:
		if c.Name == "" {
			return nil // the providers say what is wrong with that
		}
		names := make([]string, len(tools))
		for i := range tools {
			if tools[i].Name == c.Name {
				return nil
			}
			names[i] = tools[i].Name
		}
		if len(tools) == 0 {
			return fmt.Errorf("tool choice names tool %q, but the request offers no tools", c.Name)
		}
		return fmt.Errorf("tool choice names tool %q, which the request does not offer (tools: %s)", c.Name, strings.Join(names, ", "))
	}
	return nil
}

// ResponseFormat asks for a reply that is a JSON value matching Schema.
type ResponseFormat struct {
	// Name names the schema; providers that require a name use it.
	Name string `json:"name"`
	// Description optionally explains the schema to the model.
	Description string `json:"description,omitempty"`
	// Schema is the JSON Schema the reply must satisfy.
	Schema json.RawMessage `json:"schema"`
	// Strict asks the provider to enforce the schema exactly where it can.
	Strict bool `json:"strict,omitempty"`
}

// Settings are the sampling settings of a request. Nil or zero fields leave
// the provider's default in place.
type Settings struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Stop        []string `json:"stop,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// Override returns s with every field that o sets replaced by o's. Providers
// use it to apply a request's settings over their defaults.
func (s Settings) Override(o Settings) Settings {
	if o.Temperature != nil {
		s.Temperature = o.Temperature
	}
	if o.TopP != nil {
		s.TopP = o.TopP
	}
	if o.MaxTokens != 0 {
		s.MaxTokens = o.MaxTokens
	}
	if o.Stop != nil {
		s.Stop = o.Stop
	}
	if o.Seed != nil {
		s.Seed = o.Seed
	}
	return s
}

// Request is one call to a model.
type Request struct {
	// Model overrides the provider's configured model name when not empty.
	Model string `json:"model,omitempty"`
	// Messages is the conversation so far, system messages included.
	Messages []Message `json:"messages"`
	// Tools are the tools the model may call.
	Tools []ToolDefinition `json:"tools,omitempty"`
	// ToolChoice constrains tool calls.
	ToolChoice ToolChoice `json:"tool_choice,omitempty"`
	// ResponseFormat, when set, asks for structured output.
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// Settings are the sampling settings.
	Settings Settings `json:"settings,omitempty"`
}

// Usage counts the tokens of one call.
type Usage struct {
	// InputTokens counts the prompt's tokens, cached ones included.
	InputTokens int `json:"input_tokens"`
	// OutputTokens counts the reply's tokens, reasoning included.
	OutputTokens int `json:"output_tokens"`
	// TotalTokens is InputTokens plus OutputTokens, as the provider
	// reports it.
	TotalTokens int `json:"total_tokens"`
	// CachedInputTokens is the part of InputTokens the provider read from
	// its prompt cache, when it says (OpenAI's cached tokens, Anthropic's
	// cache reads).
	CachedInputTokens int `json:"cached_input_tokens,omitempty"`
	// ReasoningTokens is the part of OutputTokens the model spent
	// reasoning, when the provider says (OpenAI's reasoning tokens).
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		TotalTokens:       u.TotalTokens + v.TotalTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Response is a model's complete reply.
type Response struct {
	// Message is the assistant message.
	Message Message `json:"message"`
	// Usage counts the call's tokens.
	Usage Usage `json:"usage"`
	// FinishReason is the provider's reason for stopping, normalized to
	// "stop", "tool_calls", "length", "content_filter" or FinishPaused
	// where it maps.
	FinishReason string `json:"finish_reason,omitempty"`
	// Model is the model that answered, as the provider reports it.
	Model string `json:"model,omitempty"`
}

// FinishPaused is the finish reason of a reply the provider paused in the
// middle of a long turn (Claude's "pause_turn", while its server tools
// work): sent back as it is, with the conversation, it lets the model go
// on with its turn. The LLM node does so on its own (nodes.MaxPauses).
const FinishPaused = "paused"

// ToolCallDelta is a fragment of a tool call in a stream. Fragments with the
// same Index belong to the same call; ID and Name usually arrive in the first.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// ReasoningDelta is a fragment of a reasoning part in a stream (see
// PartReasoning). Fragments with the same Index belong to the same part;
// the reply's reasoning parts are numbered from 0 in the order they start.
type ReasoningDelta struct {
	Index int `json:"index"`
	// Text is a fragment of the part's text.
	Text string `json:"text,omitempty"`
	// Data is a fragment of the part's Data: the signature, or the
	// encrypted reasoning of a redacted part.
	Data string `json:"data,omitempty"`
	// Redacted marks a PartRedactedReasoning.
	Redacted bool `json:"redacted,omitempty"`
}

// Chunk is one element of a streamed reply.
type Chunk struct {
	// Reasoning is a fragment of the model's reasoning, which comes before
	// the text and tool calls it leads to.
	Reasoning *ReasoningDelta `json:"reasoning,omitempty"`
	// Text is a fragment of the reply's text.
	Text string `json:"text,omitempty"`
	// ToolCall is a fragment of a tool call.
	ToolCall *ToolCallDelta `json:"tool_call,omitempty"`
	// Part, when not nil, is a content part that arrives whole: a
	// provider's own block (PartProvider), such as the call and result of
	// a tool the provider ran itself. Such parts join the message's content
	// after its text, in the order they arrive.
	Part *Part `json:"part,omitempty"`
	// Usage, when not nil, reports the call's token usage (usually last).
	Usage *Usage `json:"usage,omitempty"`
	// FinishReason, when not empty, ends the reply.
	FinishReason string `json:"finish_reason,omitempty"`
	// Model is the model that answered, when the provider reports it.
	Model string `json:"model,omitempty"`
	// Metadata, when not nil, is added to the reply message's Metadata:
	// what a provider records to send the message back exactly as it came
	// (the order of its content blocks, say).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Model is a language model.
//
// Implementations must be safe for concurrent use.
type Model interface {
	// Generate returns the model's complete reply to req.
	Generate(ctx context.Context, req *Request) (*Response, error)
	// Stream returns the reply as it is produced. The sequence ends after the
	// last chunk, or with a non-nil error.
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Info describes a model's identity and abilities.
type Info struct {
	// Provider names the provider, for example "openai" or "anthropic".
	Provider string
	// Name is the model's name.
	Name string
	// StructuredOutput reports whether the model honours Request.ResponseFormat
	// natively. When false, callers that need structured output use a
	// set-model-response tool instead.
	StructuredOutput bool
}

// Describer is implemented by models that can describe themselves.
type Describer interface {
	Info() Info
}
