package model

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Role says who wrote a message.
type Role string

// The roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartType names the kind of a content part.
type PartType string

// The kinds of content part.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
	PartJSON  PartType = "json"
	// PartReasoning is what a model thought before it answered (Claude's
	// "thinking", the "reasoning_content" of some OpenAI-compatible
	// servers): Text holds what the provider shows of it, possibly nothing,
	// and Data the provider's signature, which lets the part be sent back to
	// the model that wrote it. It is never part of the message's Text.
	PartReasoning PartType = "reasoning"
	// PartRedactedReasoning is reasoning the provider hands out only
	// encrypted: Data holds it, to be sent back as it is.
	PartRedactedReasoning PartType = "redacted_reasoning"
	// PartProvider is content only one provider understands, kept so that
	// it can be sent back to that provider as it came: Claude's server tool
	// calls and their results (web search, web fetch, code execution), for
	// example, which the API requires to see again in the next request.
	// JSON holds the provider's raw block and MIMEType names its format
	// (the Anthropic provider's is
	// "application/vnd.anthropic.content-block+json"). It is never part of
	// the message's Text. A provider sends back only the provider parts
	// whose MIMEType it understands and leaves the others out, without
	// error.
	PartProvider PartType = "provider"
	// PartAudio is inline audio, as a tool or an MCP server returns it:
	// Data holds the bytes and MIMEType their format ("audio/wav"). A
	// provider that takes no audio is given its TextFallback instead.
	PartAudio PartType = "audio"
	// PartResource is a resource embedded in content, as MCP embeds one:
	// URL holds its URI, MIMEType its media type, and Text its text or Data
	// its bytes (one of the two). Its text is part of the message's Text; a
	// provider is given its TextFallback.
	PartResource PartType = "resource"
)

// Part is one piece of a message's content: text, an image, a JSON value,
// the model's reasoning, or a provider's own content.
//
// Part is a tagged struct rather than an interface so that messages marshal
// to and from JSON without type registries.
type Part struct {
	// Type says which of the fields below are meaningful.
	Type PartType `json:"type"`
	// Text is the text of a PartText.
	Text string `json:"text,omitempty"`
	// MIMEType is the media type of a PartImage, for example "image/png",
	// or the format of a PartProvider's JSON.
	MIMEType string `json:"mime_type,omitempty"`
	// Data holds the bytes of an inline image, the signature of a
	// PartReasoning, or the encrypted reasoning of a PartRedactedReasoning.
	Data []byte `json:"data,omitempty"`
	// URL locates an image that is not inline.
	URL string `json:"url,omitempty"`
	// JSON is the value of a PartJSON, or the raw block of a PartProvider.
	JSON json.RawMessage `json:"json,omitempty"`
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Type: PartText, Text: text} }

// ImagePart returns an inline image part with the given media type.
func ImagePart(mimeType string, data []byte) Part {
	return Part{Type: PartImage, MIMEType: mimeType, Data: data}
}

// ImageURLPart returns an image part that refers to an image by URL.
func ImageURLPart(mimeType, url string) Part {
	return Part{Type: PartImage, MIMEType: mimeType, URL: url}
}

// JSONPart returns a JSON part holding raw.
func JSONPart(raw json.RawMessage) Part { return Part{Type: PartJSON, JSON: raw} }

// ReasoningPart returns a reasoning part with the given text and the
// provider's signature (nil when it gave none).
func ReasoningPart(text string, signature []byte) Part {
	return Part{Type: PartReasoning, Text: text, Data: signature}
}

// RedactedReasoningPart returns a reasoning part the provider encrypted.
func RedactedReasoningPart(data []byte) Part {
	return Part{Type: PartRedactedReasoning, Data: data}
}

// ProviderPart returns a part holding a provider's own content block raw,
// in the format mimeType names (see PartProvider).
func ProviderPart(mimeType string, raw json.RawMessage) Part {
	return Part{Type: PartProvider, MIMEType: mimeType, JSON: raw}
}

// AudioPart returns an inline audio part with the given media type.
func AudioPart(mimeType string, data []byte) Part {
	return Part{Type: PartAudio, MIMEType: mimeType, Data: data}
}

// TextResourcePart returns an embedded resource holding text.
func TextResourcePart(uri, mimeType, text string) Part {
	return Part{Type: PartResource, URL: uri, MIMEType: mimeType, Text: text}
}

// BlobResourcePart returns an embedded resource holding bytes.
func BlobResourcePart(uri, mimeType string, data []byte) Part {
	return Part{Type: PartResource, URL: uri, MIMEType: mimeType, Data: data}
}

// TextFallback returns the text that stands for an audio or resource part
// before a model that takes neither: a resource's text, or a short note
// naming the part's kind, media type, URI and size. Other parts have none.
func (p Part) TextFallback() string {
	switch p.Type {
	case PartResource:
		if p.Data == nil {
			return p.Text
		}
		return fmt.Sprintf("[resource %s (%s, %d bytes)]", p.URL, p.MIMEType, len(p.Data))
	case PartAudio:
		return fmt.Sprintf("[audio (%s, %d bytes)]", p.MIMEType, len(p.Data))
	}
	return ""
}

// IsReasoning reports whether p is a reasoning part, redacted or not.
func (p Part) IsReasoning() bool { return p.Type == PartReasoning || p.Type == PartRedactedReasoning }

// ToolCall is a model's request to run a tool. Arguments stay raw JSON from
// the model to the tool.
type ToolCall struct {
	// ID identifies the call; the tool message that answers it carries the same ID.
	ID string `json:"id"`
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is the JSON object the model produced, as it produced it.
	Arguments json.RawMessage `json:"arguments"`
}

// Message is one turn of a conversation.
type Message struct {
	// ID identifies the message so that state reducers can replace or remove
	// it. The nodes that write messages give them IDs; a message without one
	// can only be appended.
	ID string `json:"id,omitempty"`
	// Role says who wrote the message.
	Role Role `json:"role"`
	// Name optionally names the author, for example the agent that wrote an
	// assistant message in a multi-agent system.
	Name string `json:"name,omitempty"`
	// Content is what the message says.
	Content []Part `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is, on a tool message, the ID of the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ToolName is, on a tool message, the name of the tool that answered.
	ToolName string `json:"tool_name,omitempty"`
	// IsError marks a tool message that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// Metadata is data that travels with the message in the state and its
	// checkpoints and is never sent to a model: the application's own, and
	// the framework's under keys that start with "trellis.".
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Key returns the message's ID. It lets the state package's keyed reducers
// upsert and remove messages.
func (m Message) Key() string { return m.ID }

// Text returns the message's text: its text parts, and its JSON parts as
// raw JSON, and its text resources, concatenated in order. Images, audio,
// binary resources, reasoning and provider parts are
// left out.
func (m Message) Text() string {
	if len(m.Content) == 1 {
		return m.Content[0].text()
	}
	var b strings.Builder
	for _, p := range m.Content {
		b.WriteString(p.text())
	}
	return b.String()
}

func (p Part) text() string {
	switch p.Type {
	case PartText:
		return p.Text
	case PartJSON:
		return string(p.JSON)
	case PartResource:
		if p.Data == nil {
			return p.Text
		}
	}
	return ""
}

// Reasoning returns the text of the message's reasoning parts,
// concatenated in order (see PartReasoning).
func (m Message) Reasoning() string {
	var b strings.Builder
	for _, p := range m.Content {
		if p.Type == PartReasoning {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// HasToolCalls reports whether the message asks for at least one tool call.
func (m Message) HasToolCalls() bool { return len(m.ToolCalls) > 0 }

// System returns a system message with the given text.
func System(text string) Message {
	return Message{Role: RoleSystem, Content: []Part{TextPart(text)}}
}

// User returns a user message with the given text.
func User(text string) Message {
	return Message{Role: RoleUser, Content: []Part{TextPart(text)}}
}

// Assistant returns an assistant message with the given text and tool calls.
func Assistant(text string, calls ...ToolCall) Message {
	m := Message{Role: RoleAssistant, ToolCalls: calls}
	if text != "" {
		m.Content = []Part{TextPart(text)}
	}
	return m
}

// ToolMessage returns the tool message that answers the call with the given
// ID and tool name.
func ToolMessage(callID, toolName string, isError bool, content ...Part) Message {
	return Message{Role: RoleTool, ToolCallID: callID, ToolName: toolName, IsError: isError, Content: content}
}

// LastAssistant returns the last assistant message of msgs and whether there was one.
func LastAssistant(msgs []Message) (Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleAssistant {
			return msgs[i], true
		}
	}
	return Message{}, false
}
