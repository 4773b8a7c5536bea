package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/model"
)

// The API's clients (the SDKs' chat hooks, chat front ends) read and write
// a state's conversation as LangChain messages ({"type": "human",
// "content": "hi"}), while a Trellis state holds model.Message values
// ({"role": "user", "content": [{"type": "text", "text": "hi"}]}). The
// server translates the state's "messages" field (the JSON name of
// nodes.Chat's field, which every prebuilt agent's state embeds) both
// ways: the state it serves shows LangChain messages, and input, state
// updates and resumes may give messages in either form (or the OpenAI
// form, {"role": "user", "content": "hi"}). Other fields pass as they are.
const messagesField = "messages"

// lcMessage is a message as LangChain writes it.
type lcMessage struct {
	Type             string          `json:"type"`
	Content          any             `json:"content"`
	ID               string          `json:"id,omitempty"`
	Name             string          `json:"name,omitempty"`
	ToolCalls        []lcToolCall    `json:"tool_calls,omitempty"`
	InvalidToolCalls []any           `json:"invalid_tool_calls,omitempty"`
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	Status           string          `json:"status,omitempty"`
	AdditionalKwargs map[string]any  `json:"additional_kwargs"`
	ResponseMetadata map[string]any  `json:"response_metadata"`
	ToolCallChunks   []lcToolChunk   `json:"tool_call_chunks,omitempty"`
	Artifact         json.RawMessage `json:"artifact,omitempty"`
}

type lcToolCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
	ID   string          `json:"id,omitempty"`
	Type string          `json:"type,omitempty"`
}

type lcToolChunk struct {
	Name  string `json:"name,omitempty"`
	Args  string `json:"args,omitempty"`
	ID    string `json:"id,omitempty"`
	Index int    `json:"index"`
	Type  string `json:"type"`
}

// toLangChain returns m as a LangChain message.
func toLangChain(m model.Message) lcMessage {
	out := lcMessage{ID: m.ID, Name: m.Name, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{}}
	switch m.Role {
	case model.RoleUser:
		out.Type = "human"
	case model.RoleAssistant:
		out.Type = "ai"
	case model.RoleSystem:
		out.Type = "system"
	case model.RoleTool:
		out.Type = "tool"
		out.ToolCallID = m.ToolCallID
		if out.Name == "" {
			out.Name = m.ToolName
		}
		out.Status = "success"
		if m.IsError {
			out.Status = "error"
		}
	default:
		out.Type = string(m.Role)
	}
	out.Content = contentOf(m.Content)
	for _, c := range m.ToolCalls {
		args := c.Arguments
		if len(bytes.TrimSpace(args)) == 0 || !json.Valid(args) {
			args = json.RawMessage("{}")
		}
		out.ToolCalls = append(out.ToolCalls, lcToolCall{Name: c.Name, Args: args, ID: c.ID, Type: "tool_call"})
	}
	if out.Type == "ai" {
		out.InvalidToolCalls = []any{}
		if out.ToolCalls == nil {
			out.ToolCalls = []lcToolCall{}
		}
	}
	if len(m.Metadata) > 0 {
		out.AdditionalKwargs["metadata"] = m.Metadata
	}
	return out
}

// contentOf is a message's content as LangChain writes it: a string when
// the message holds text only, else a list of blocks.
func contentOf(parts []model.Part) any {
	textOnly := true
	for _, p := range parts {
		if p.Type != model.PartText {
			textOnly = false
		}
	}
	if textOnly {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	blocks := make([]map[string]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case model.PartText:
			blocks = append(blocks, map[string]any{"type": "text", "text": p.Text})
		case model.PartImage:
			url := p.URL
			if url == "" {
				url = "data:" + p.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
			}
			blocks = append(blocks, map[string]any{"type": "image_url", "image_url": map[string]any{"url": url}})
		case model.PartReasoning:
			blocks = append(blocks, map[string]any{"type": "reasoning", "reasoning": p.Text})
		default:
			// Trellis's own form, which the input side reads back.
			b, _ := json.Marshal(p)
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			blocks = append(blocks, m)
		}
	}
	return blocks
}

// fromAPI reads a message in any of the forms the API accepts: LangChain's
// ("type"), OpenAI's or Trellis's ("role", with string or list content).
func fromAPI(raw json.RawMessage) (model.Message, error) {
	var in struct {
		Type             string          `json:"type"`
		Role             string          `json:"role"`
		Content          json.RawMessage `json:"content"`
		ID               string          `json:"id"`
		Name             string          `json:"name"`
		ToolCalls        json.RawMessage `json:"tool_calls"`
		ToolCallID       string          `json:"tool_call_id"`
		ToolName         string          `json:"tool_name"`
		Status           string          `json:"status"`
		IsError          bool            `json:"is_error"`
		Metadata         map[string]string
		AdditionalKwargs struct {
			Metadata map[string]string `json:"metadata"`
		} `json:"additional_kwargs"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return model.Message{}, fmt.Errorf("a message is not an object: %w", err)
	}
	m := model.Message{ID: in.ID, Name: in.Name, ToolCallID: in.ToolCallID, ToolName: in.ToolName, IsError: in.IsError || in.Status == "error"}
	kind := in.Type
	if kind == "" {
		kind = in.Role
	}
	switch kind {
	case "human", "user":
		m.Role = model.RoleUser
	case "ai", "assistant", "AIMessageChunk":
		m.Role = model.RoleAssistant
	case "system", "developer":
		m.Role = model.RoleSystem
	case "tool":
		m.Role = model.RoleTool
		if m.ToolName == "" {
			m.ToolName, m.Name = in.Name, ""
		}
	default:
		return model.Message{}, fmt.Errorf("a message's type or role %q is not one of human, ai, system, tool (or user, assistant)", cut(kind, 32))
	}
	m.Metadata = in.Metadata
	if m.Metadata == nil {
		m.Metadata = in.AdditionalKwargs.Metadata
	}
	parts, err := partsOf(in.Content)
	if err != nil {
		return model.Message{}, err
	}
	m.Content = parts
	if len(in.ToolCalls) > 0 && string(in.ToolCalls) != "null" {
		var calls []struct {
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Args      json.RawMessage `json:"args"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(in.ToolCalls, &calls); err != nil {
			return model.Message{}, fmt.Errorf("a message's tool_calls are not a list of calls: %w", err)
		}
		for _, c := range calls {
			args := c.Args
			if len(args) == 0 {
				args = c.Arguments
			}
			if len(args) > 0 && args[0] == '"' {
				// Arguments as a JSON string (OpenAI's form).
				var s string
				if json.Unmarshal(args, &s) == nil {
					args = json.RawMessage(s)
				}
			}
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			m.ToolCalls = append(m.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
		}
	}
	return m, nil
}

func partsOf(raw json.RawMessage) ([]model.Part, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("a message's content: %w", err)
		}
		if s == "" {
			return nil, nil
		}
		return []model.Part{model.TextPart(s)}, nil
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("a message's content is neither a string nor a list of blocks")
	}
	var out []model.Part
	for _, b := range blocks {
		var blk struct {
			Type     string          `json:"type"`
			Text     string          `json:"text"`
			ImageURL json.RawMessage `json:"image_url"`
		}
		if err := json.Unmarshal(b, &blk); err != nil {
			return nil, fmt.Errorf("a content block is not an object: %w", err)
		}
		switch blk.Type {
		case "text":
			out = append(out, model.TextPart(blk.Text))
		case "image_url":
			var url struct {
				URL string `json:"url"`
			}
			if len(blk.ImageURL) > 0 && blk.ImageURL[0] == '"' {
				_ = json.Unmarshal(blk.ImageURL, &url.URL)
			} else {
				_ = json.Unmarshal(blk.ImageURL, &url)
			}
			out = append(out, imagePart(url.URL))
		default:
			var p model.Part
			if err := json.Unmarshal(b, &p); err != nil || p.Type == "" {
				return nil, fmt.Errorf("a content block of type %q is not understood", cut(blk.Type, 32))
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// imagePart reads a data URL into an inline image, or keeps a URL.
func imagePart(url string) model.Part {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		if mime, data, ok := strings.Cut(rest, ";base64,"); ok {
			if b, err := base64.StdEncoding.DecodeString(data); err == nil {
				return model.ImagePart(mime, b)
			}
		}
	}
	return model.ImageURLPart("", url)
}

// stateOut returns a state (or a partial one) with its messages as
// LangChain messages. Anything that is not an object with a list of
// Trellis messages under "messages" is returned as it is.
func stateOut(raw json.RawMessage) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"`+messagesField+`"`)) {
		return raw
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return raw
	}
	list, ok := obj[messagesField]
	if !ok {
		return raw
	}
	conv, ok := messagesOut(list)
	if !ok {
		return raw
	}
	obj[messagesField] = conv
	b, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return b
}

// messagesOut converts a JSON list of Trellis messages; ok is false when
// list is not one.
func messagesOut(list json.RawMessage) (json.RawMessage, bool) {
	var elems []json.RawMessage
	if json.Unmarshal(list, &elems) != nil {
		return nil, false
	}
	out := make([]lcMessage, 0, len(elems))
	for _, e := range elems {
		var probe struct {
			Role string `json:"role"`
		}
		if json.Unmarshal(e, &probe) != nil || probe.Role == "" {
			return nil, false
		}
		var m model.Message
		if json.Unmarshal(e, &m) != nil {
			return nil, false
		}
		out = append(out, toLangChain(m))
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, false
	}
	return b, true
}

// stateIn returns input (a partial state from a client) with its messages
// in Trellis's form. A single message instead of a list is taken as a list
// of one, and a string as a user's message, as LangGraph's message reducer
// takes them.
func stateIn(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !bytes.Contains(raw, []byte(`"`+messagesField+`"`)) {
		return raw, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, unprocessable("the input is not a JSON object: %v", cut(err.Error(), 100))
	}
	list, ok := obj[messagesField]
	if !ok {
		return raw, nil
	}
	list = bytes.TrimSpace(list)
	if len(list) > 0 && list[0] == '"' {
		// A string is a user's message, as LangGraph's message reducer
		// takes it.
		var text string
		if err := json.Unmarshal(list, &text); err != nil {
			return nil, unprocessable("the input's messages are not a list")
		}
		b, _ := json.Marshal([]model.Message{model.User(text)})
		obj[messagesField] = b
		return json.Marshal(obj)
	}
	if len(list) > 0 && list[0] == '{' {
		list = append(append([]byte{'['}, list...), ']')
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(list, &elems); err != nil {
		return nil, unprocessable("the input's messages are not a list")
	}
	msgs := make([]model.Message, 0, len(elems))
	for i, e := range elems {
		m, err := fromAPI(e)
		if err != nil {
			return nil, unprocessable("the input's message %d: %v", i, err)
		}
		msgs = append(msgs, m)
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil, unprocessable("the input's messages: %v", err)
	}
	obj[messagesField] = b
	return json.Marshal(obj)
}

// chunkMessage is a streamed chunk of a reply as LangChain's
// AIMessageChunk.
func chunkMessage(id string, c model.Chunk) lcMessage {
	out := lcMessage{Type: "AIMessageChunk", ID: id, Content: c.Text, AdditionalKwargs: map[string]any{}, ResponseMetadata: map[string]any{},
		ToolCalls: []lcToolCall{}, InvalidToolCalls: []any{}}
	if c.Reasoning != nil && c.Reasoning.Text != "" {
		out.AdditionalKwargs["reasoning_content"] = c.Reasoning.Text
	}
	if c.ToolCall != nil {
		out.ToolCallChunks = []lcToolChunk{{Name: c.ToolCall.Name, Args: c.ToolCall.Arguments, ID: c.ToolCall.ID, Index: c.ToolCall.Index, Type: "tool_call_chunk"}}
	}
	if c.FinishReason != "" {
		out.ResponseMetadata["finish_reason"] = c.FinishReason
	}
	if c.Model != "" {
		out.ResponseMetadata["model_name"] = c.Model
	}
	return out
}

// accumulated is a reply streamed so far, for the "messages" mode's
// partial messages.
type accumulated struct {
	acc model.Accumulator
	id  string
	n   int
}

func (a *accumulated) message() lcMessage {
	resp := a.acc.Response()
	m := resp.Message
	m.Role, m.ID = model.RoleAssistant, a.id
	out := toLangChain(m)
	return out
}
