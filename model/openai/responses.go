package openai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/trellis-go/trellis/model"
)

// ItemMIMEType is the MIMEType of the provider parts (model.PartProvider)
// a model on the Responses API keeps: an output item as the API sent it,
// such as a reasoning item (its encrypted content included) or the call of
// a built-in tool (web search, file search, code interpreter). They are sent
// back as input items, as they came; Chat Completions and other providers
// leave them out.
const ItemMIMEType = "application/vnd.openai.response-item+json"

// WithResponsesAPI makes the model call the Responses API (POST
// /responses) instead of Chat Completions. The conversation is sent whole
// with every request and nothing is stored on the server ("store": false);
// reasoning items come back encrypted and are sent back as they came, so a
// reasoning model keeps its reasoning across tool calls. Only OpenAI
// itself (and the few servers that copy it) serve this API.
func WithResponsesAPI() Option {
	return func(c *config) { c.responses = true }
}

// WithBuiltinTools offers the model tools the Responses API runs itself,
// each given as the API's JSON for it, for example {"type":"web_search"}
// or {"type":"file_search","vector_store_ids":["vs_1"]}. Their calls and
// results come back as provider parts (ItemMIMEType); the answer's text is
// the reply's. It implies WithResponsesAPI.
func WithBuiltinTools(tools ...json.RawMessage) Option {
	return func(c *config) {
		c.responses = true
		for _, t := range tools {
			var head struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(t, &head) != nil || head.Type == "" {
				c.errs = append(c.errs, fmt.Errorf("WithBuiltinTools: %s is not a JSON object with a type", t))
				continue
			}
			c.builtin = append(c.builtin, bytes.Clone(t))
		}
	}
}

// WithReasoningSummary asks a reasoning model on the Responses API for
// summaries of its reasoning, which come back as reasoning parts: "auto",
// "concise" or "detailed".
func WithReasoningSummary(summary string) Option {
	return func(c *config) { c.summary = summary }
}

// inputItem is one item of a Responses request's input, in the API's
// shape: a message, a function call of the model's, or a function's
// output. The SDK's param types are unions of every variant the API
// knows; these hold only what a conversation needs.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
}

// contentPart is a part of an input message or of a function's output.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

// functionTool is a function tool of a Responses request.
type functionTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict"`
}

// responsesParams maps a request to the Responses API's parameters.
func (m *Model) responsesParams(req *model.Request) (responses.ResponseNewParams, error) {
	var p responses.ResponseNewParams
	if req == nil {
		return p, errors.New("openai: nil request")
	}
	p.Model = m.name
	if req.Model != "" {
		p.Model = req.Model
	}
	items, err := inputItems(req.Messages)
	if err != nil {
		return p, err
	}
	p.Input.OfInputItemList = items
	p.Store = param.NewOpt(false)
	p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}

	for _, td := range req.Tools {
		if td.Name == "" {
			return p, errors.New("openai: tool definition has no name")
		}
		schema := json.RawMessage(`{"type":"object","properties":{}}`)
		if raw := bytes.TrimSpace(td.InputSchema); len(raw) > 0 {
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
				return p, fmt.Errorf("openai: tool %q: input schema is not a JSON object", td.Name)
			}
			schema = raw
		}
		// Not strict: the API would otherwise demand schemas that close
		// every object and require every property.
		p.Tools = append(p.Tools, param.Override[responses.ToolUnionParam](functionTool{
			Type: "function", Name: td.Name, Description: td.Description, Parameters: schema,
		}))
	}
	for _, raw := range m.builtin {
		p.Tools = append(p.Tools, param.Override[responses.ToolUnionParam](raw))
	}
	if err := req.ToolChoice.Check(req.Tools); err != nil {
		return p, fmt.Errorf("openai: %w", err)
	}
	switch tc := req.ToolChoice; tc.Mode {
	case model.ToolChoiceAuto:
	case model.ToolChoiceNone:
		if len(p.Tools) > 0 {
			p.ToolChoice.OfToolChoiceMode = param.NewOpt(responses.ToolChoiceOptionsNone)
		}
	case model.ToolChoiceRequired:
		p.ToolChoice.OfToolChoiceMode = param.NewOpt(responses.ToolChoiceOptionsRequired)
	case model.ToolChoiceTool:
		if tc.Name == "" {
			return p, errors.New("openai: tool choice names no tool")
		}
		p.ToolChoice.OfFunctionTool = &responses.ToolChoiceFunctionParam{Name: tc.Name}
	default:
		return p, fmt.Errorf("openai: unknown tool choice mode %q", tc.Mode)
	}
	if rf := req.ResponseFormat; rf != nil {
		if len(bytes.TrimSpace(rf.Schema)) == 0 {
			return p, errors.New("openai: response format has no schema")
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(rf.Schema, &fields); err != nil || fields == nil {
			return p, errors.New("openai: response format schema is not a JSON object")
		}
		schema := make(map[string]any, len(fields))
		for k, v := range fields {
			schema[k] = v
		}
		js := &responses.ResponseFormatTextJSONSchemaConfigParam{Name: schemaName(rf.Name), Schema: schema}
		if rf.Description != "" {
			js.Description = param.NewOpt(rf.Description)
		}
		if rf.Strict {
			js.Strict = param.NewOpt(true)
		}
		p.Text.Format.OfJSONSchema = js
	}

	s := m.settings.Override(req.Settings)
	if s.Temperature != nil {
		p.Temperature = param.NewOpt(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.MaxTokens < 0 {
		return p, fmt.Errorf("openai: negative max tokens %d", s.MaxTokens)
	}
	if s.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(s.MaxTokens))
	}
	if len(s.Stop) > 0 {
		return p, errors.New("openai: the Responses API takes no stop sequences")
	}
	if s.Seed != nil {
		return p, errors.New("openai: the Responses API takes no seed")
	}
	if m.effort != "" {
		p.Reasoning.Effort = shared.ReasoningEffort(m.effort)
	}
	if m.summary != "" {
		p.Reasoning.Summary = shared.ReasoningSummary(m.summary)
	}
	return p, nil
}

// inputItems maps the conversation to input items: system and user
// messages; an assistant message as the items it came with (reasoning,
// built-in tool calls), its text, then its function calls; a tool message
// as its function's output, images included.
func inputItems(in []model.Message) (responses.ResponseInputParam, error) {
	var out responses.ResponseInputParam
	add := func(v any) { out = append(out, param.Override[responses.ResponseInputItemUnionParam](v)) }
	for i, msg := range in {
		wrap := func(err error) error { return fmt.Errorf("openai: message %d (%s): %w", i, msg.Role, err) }
		switch msg.Role {
		case model.RoleSystem:
			text, err := assistantText(msg.Content)
			if err != nil {
				return nil, wrap(err)
			}
			add(inputItem{Type: "message", Role: "system", Content: jsonString(text)})
		case model.RoleUser:
			parts, err := inputParts(msg.Content)
			if err != nil {
				return nil, wrap(err)
			}
			add(inputItem{Type: "message", Role: "user", Content: mustJSON(parts)})
		case model.RoleAssistant:
			for _, p := range msg.Content {
				if p.Type == model.PartProvider && p.MIMEType == ItemMIMEType && json.Valid(p.JSON) {
					add(json.RawMessage(p.JSON))
				}
			}
			text, err := assistantText(msg.Content)
			if err != nil {
				return nil, wrap(err)
			}
			if text != "" {
				add(inputItem{Type: "message", Role: "assistant", Content: jsonString(text)})
			}
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, wrap(fmt.Errorf("tool call %q (ID %q) needs both an ID and a name", tc.Name, tc.ID))
				}
				add(inputItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: string(rawArguments(string(tc.Arguments)))})
			}
		case model.RoleTool:
			if msg.ToolCallID == "" {
				return nil, wrap(errors.New("tool message has no tool call ID"))
			}
			output, err := functionOutput(msg.Content)
			if err != nil {
				return nil, wrap(err)
			}
			add(inputItem{Type: "function_call_output", CallID: msg.ToolCallID, Output: output})
		default:
			return nil, wrap(fmt.Errorf("unknown role %q", msg.Role))
		}
	}
	return out, nil
}

// inputParts maps the parts of a user message.
func inputParts(parts []model.Part) ([]contentPart, error) {
	out := make([]contentPart, 0, len(parts))
	for j, p := range parts {
		if p.Type == model.PartProvider || p.IsReasoning() {
			continue
		}
		cp, err := inputPart(p)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", j, err)
		}
		out = append(out, cp)
	}
	if len(out) == 0 {
		out = append(out, contentPart{Type: "input_text"})
	}
	return out, nil
}

func inputPart(p model.Part) (contentPart, error) {
	if text, ok := partText(p); ok {
		return contentPart{Type: "input_text", Text: text}, nil
	}
	if p.Type != model.PartImage {
		return contentPart{}, fmt.Errorf("unknown part type %q", p.Type)
	}
	url := p.URL
	if len(p.Data) > 0 {
		if p.MIMEType == "" {
			return contentPart{}, errors.New("inline image has no MIME type")
		}
		url = "data:" + p.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
	}
	if url == "" {
		return contentPart{}, errors.New("image has neither data nor a URL")
	}
	return contentPart{Type: "input_image", ImageURL: url}, nil
}

// functionOutput is a tool message's output: its text as a string, or,
// when it holds images, a list of text and image parts, which the API
// shows the model as they are.
func functionOutput(parts []model.Part) (json.RawMessage, error) {
	var (
		text   strings.Builder
		list   []contentPart
		images bool
	)
	for j, p := range parts {
		if p.Type == model.PartProvider {
			continue
		}
		cp, err := inputPart(p)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", j, err)
		}
		images = images || p.Type == model.PartImage
		text.WriteString(cp.Text)
		list = append(list, cp)
	}
	if !images {
		return jsonString(text.String()), nil
	}
	return mustJSON(list), nil
}

func jsonString(s string) json.RawMessage { return mustJSON(s) }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings and plain structs always marshal
	}
	return b
}

// outputItem is an output item of a response, in the fields this package
// reads; the item's whole JSON is kept for the items sent back.
type outputItem struct {
	Type string `json:"type"`
	// A message's content.
	Content []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	// A reasoning item's summary.
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
	// A function call.
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// responsesState turns a response, whole or streamed, into chunks.
type responsesState struct {
	model  string
	finish string
	usage  *model.Usage
	err    error
	// calls maps an output index to its call's index; reasoning to its
	// reasoning part's, with the summary part it is in and whether any
	// summary text came as deltas.
	calls     map[int64]int
	reasoning map[int64]*reasoningItem
}

type reasoningItem struct {
	index   int
	summary int64
	text    bool
}

func (s *responsesState) reasoningAt(out int64) *reasoningItem {
	if s.reasoning == nil {
		s.reasoning = map[int64]*reasoningItem{}
	}
	r := s.reasoning[out]
	if r == nil {
		r = &reasoningItem{index: len(s.reasoning)}
		s.reasoning[out] = r
	}
	return r
}

// item maps a finished output item. Text and calls that came as deltas
// (streamed is true) are not repeated.
func (s *responsesState) item(out int64, raw string, streamed bool) []model.Chunk {
	var it outputItem
	if json.Unmarshal([]byte(raw), &it) != nil {
		return nil
	}
	var chunks []model.Chunk
	switch it.Type {
	case "message":
		if streamed {
			return nil
		}
		for _, c := range it.Content {
			if t := c.Text + c.Refusal; t != "" {
				chunks = append(chunks, model.Chunk{Text: t})
			}
		}
	case "function_call":
		if streamed {
			return nil
		}
		if s.calls == nil {
			s.calls = map[int64]int{}
		}
		i := len(s.calls)
		s.calls[out] = i
		chunks = append(chunks, model.Chunk{ToolCall: &model.ToolCallDelta{Index: i, ID: it.CallID, Name: it.Name, Arguments: it.Arguments}})
	case "reasoning":
		r := s.reasoningAt(out)
		if !r.text {
			texts := make([]string, 0, len(it.Summary))
			for _, t := range it.Summary {
				if t.Text != "" {
					texts = append(texts, t.Text)
				}
			}
			if len(texts) > 0 {
				chunks = append(chunks, model.Chunk{Reasoning: &model.ReasoningDelta{Index: r.index, Text: strings.Join(texts, "\n\n")}})
			}
		}
		fallthrough
	default:
		p := model.ProviderPart(ItemMIMEType, json.RawMessage(raw))
		chunks = append(chunks, model.Chunk{Part: &p})
	}
	return chunks
}

// done records the end of the response: its status, usage and model, or
// its failure.
func (s *responsesState) done(r *responses.Response) {
	if r.Model != "" {
		s.model = string(r.Model)
	}
	if r.JSON.Usage.Valid() {
		u := model.Usage{InputTokens: int(r.Usage.InputTokens), OutputTokens: int(r.Usage.OutputTokens), TotalTokens: int(r.Usage.TotalTokens)}
		if u.TotalTokens == 0 {
			u.TotalTokens = u.InputTokens + u.OutputTokens
		}
		s.usage = &u
	}
	switch r.Status {
	case responses.ResponseStatusCompleted:
		s.finish = "stop"
	case responses.ResponseStatusIncomplete:
		switch reason := r.IncompleteDetails.Reason; reason {
		case "max_output_tokens":
			s.finish = "length"
		case "content_filter":
			s.finish = "content_filter"
		case "":
			s.finish = "incomplete"
		default:
			s.finish = reason
		}
	case responses.ResponseStatusFailed:
		s.err = responseError(string(r.Error.Code), r.Error.Message)
	}
}

func (s *responsesState) final() model.Chunk {
	finish := s.finish
	if finish == "stop" && len(s.calls) > 0 {
		finish = "tool_calls"
	}
	return model.Chunk{Usage: s.usage, FinishReason: finish, Model: s.model}
}

// responseError is the error of a failed response or an error event.
func responseError(code, message string) error {
	if message == "" {
		message = "the response failed"
	}
	return &model.ProviderError{Provider: "openai", StatusCode: streamErrorStatus(code, code), Type: code, Code: code, Message: message}
}

// event maps one event of a stream.
func (s *responsesState) event(e responses.ResponseStreamEventUnion) []model.Chunk {
	switch e.Type {
	case "response.created", "response.in_progress":
		if e.Response.Model != "" {
			s.model = string(e.Response.Model)
		}
	case "response.output_text.delta", "response.refusal.delta":
		if e.Delta != "" {
			return []model.Chunk{{Text: e.Delta}}
		}
	case "response.reasoning_summary_text.delta":
		if e.Delta == "" {
			return nil
		}
		r := s.reasoningAt(e.OutputIndex)
		text := e.Delta
		if r.text && e.SummaryIndex != r.summary {
			text = "\n\n" + text
		}
		r.text, r.summary = true, e.SummaryIndex
		return []model.Chunk{{Reasoning: &model.ReasoningDelta{Index: r.index, Text: text}}}
	case "response.output_item.added":
		if e.Item.Type != "function_call" {
			return nil
		}
		if s.calls == nil {
			s.calls = map[int64]int{}
		}
		i := len(s.calls)
		s.calls[e.OutputIndex] = i
		return []model.Chunk{{ToolCall: &model.ToolCallDelta{Index: i, ID: e.Item.CallID, Name: e.Item.Name}}}
	case "response.function_call_arguments.delta":
		if i, ok := s.calls[e.OutputIndex]; ok && e.Delta != "" {
			return []model.Chunk{{ToolCall: &model.ToolCallDelta{Index: i, Arguments: e.Delta}}}
		}
	case "response.output_item.done":
		_, call := s.calls[e.OutputIndex]
		streamed := call || e.Item.Type == "message"
		if e.Item.Type == "function_call" && !call {
			streamed = false // a call that was never added
		}
		return s.item(e.OutputIndex, e.Item.RawJSON(), streamed)
	case "response.completed", "response.incomplete", "response.failed":
		s.done(&e.Response)
	case "error":
		s.err = responseError(e.Code, e.Message)
	}
	return nil
}

// generateResponses is Generate on the Responses API.
func (m *Model) generateResponses(ctx context.Context, req *model.Request) (*model.Response, error) {
	params, err := m.responsesParams(req)
	if err != nil {
		return nil, err
	}
	var r *responses.Response
	err = m.retry.Do(ctx, func(ctx context.Context) error {
		res, err := m.client.Responses.New(ctx, params)
		if err != nil {
			return convertError(err)
		}
		r = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return fromResponse(r)
}

// fromResponse maps a whole response.
func fromResponse(r *responses.Response) (*model.Response, error) {
	if r == nil {
		return nil, errors.New("openai: empty response")
	}
	var (
		st  responsesState
		acc model.Accumulator
	)
	for i, it := range r.Output {
		for _, c := range st.item(int64(i), it.RawJSON(), false) {
			acc.Add(c)
		}
	}
	st.done(r)
	if st.err != nil {
		return nil, st.err
	}
	if st.finish == "" {
		return nil, fmt.Errorf("openai: the response is not finished (status %q)", r.Status)
	}
	acc.Add(st.final())
	return acc.Response(), nil
}

// streamResponses is Stream on the Responses API: like Chat Completions',
// failures before the first chunk are retried, later ones end the stream.
func (m *Model) streamResponses(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		params, err := m.responsesParams(req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		var (
			stream *ssestream.Stream[responses.ResponseStreamEventUnion]
			st     responsesState
			first  []model.Chunk
		)
		err = m.retry.Do(ctx, func(ctx context.Context) error {
			st = responsesState{}
			s := m.client.Responses.NewStreaming(ctx, params, option.WithMiddleware(m.bound))
			for s.Next() {
				out := st.event(s.Current())
				if st.err != nil {
					_ = s.Close()
					return st.err
				}
				if len(out) > 0 {
					stream, first = s, out
					return nil
				}
			}
			_ = s.Close()
			if err := s.Err(); err != nil {
				return convertError(err)
			}
			if st.finish != "" {
				return nil
			}
			return fmt.Errorf("openai: stream ended before the response began: %w", io.ErrUnexpectedEOF)
		})
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		if stream != nil {
			defer stream.Close()
			for _, c := range first {
				if !yield(c, nil) {
					return
				}
			}
			for stream.Next() {
				for _, c := range st.event(stream.Current()) {
					if !yield(c, nil) {
						return
					}
				}
				if st.err != nil {
					yield(model.Chunk{}, st.err)
					return
				}
			}
			if err := stream.Err(); err != nil {
				yield(model.Chunk{}, convertError(err))
				return
			}
		}
		if st.finish == "" {
			yield(model.Chunk{}, fmt.Errorf("openai: stream ended before the response was complete: %w", io.ErrUnexpectedEOF))
			return
		}
		yield(st.final(), nil)
	}
}
