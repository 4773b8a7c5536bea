package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/trellis-go/trellis/internal/streamlimit"
	"github.com/trellis-go/trellis/model"
)

// toResponse maps a message of the Messages API to a Response. Thinking
// blocks become reasoning parts (the signature in Data), before the text;
// text blocks are joined (their citations are dropped); tool_use blocks
// become tool calls; other blocks (server tool calls and their results)
// become provider parts (ContentBlockMIMEType), after the text. MetaBlocks
// records where each block was when that is not the usual order.
func toResponse(msg *sdk.Message) *model.Response {
	out := model.Message{Role: model.RoleAssistant}
	var (
		text     strings.Builder
		order    blockOrder
		provided []model.Part
	)
	for _, b := range msg.Content {
		switch b.Type {
		case "thinking":
			out.Content = append(out.Content, model.ReasoningPart(b.Thinking, bytesOf(b.Signature)))
			order.thinking()
		case "redacted_thinking":
			out.Content = append(out.Content, model.RedactedReasoningPart(bytesOf(b.Data)))
			order.thinking()
		case "text":
			text.WriteString(b.Text)
			order.text(len(b.Text))
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: rawInput(b.Input)})
			order.toolUse(b.ID)
		case "":
			// Not a block the API would take back.
		default:
			if p, ok := providerPart(b.RawJSON(), b.Type, nil); ok {
				provided = append(provided, p)
				order.provider()
			}
		}
	}
	if text.Len() > 0 {
		out.Content = append(out.Content, model.TextPart(text.String()))
	}
	out.Content = append(out.Content, provided...)
	out.Metadata = order.metadata()
	u := model.Usage{
		InputTokens:       int(msg.Usage.InputTokens + msg.Usage.CacheCreationInputTokens + msg.Usage.CacheReadInputTokens),
		OutputTokens:      int(msg.Usage.OutputTokens),
		CachedInputTokens: int(msg.Usage.CacheReadInputTokens),
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return &model.Response{
		Message:      out,
		Usage:        u,
		FinishReason: finishReason(string(msg.StopReason)),
		Model:        msg.Model,
	}
}

// bytesOf returns s as bytes, nil when it is empty.
func bytesOf(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func rawInput(in json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(in))) == 0 || string(in) == "null" {
		return json.RawMessage("{}")
	}
	return in
}

// finishReason normalizes Anthropic's stop reasons.
func finishReason(r string) string {
	switch r {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "refusal":
		return "content_filter"
	case "pause_turn":
		return model.FinishPaused
	}
	return r
}

// streamState turns Messages API stream events into chunks. Content block
// indices count every kind of block together; tool calls are numbered 0, 1,
// 2... in the order their blocks start, and so are thinking blocks. The
// blocks of server tools become whole provider parts, yielded in the order
// they started, each once it and those before it have ended.
type streamState struct {
	model      string
	finish     string
	stopped    bool
	order      blockOrder     // the kinds of the content blocks, in order
	textPos    map[int64]int  // content block index → its place in order
	toolIndex  map[int64]int  // content block index → tool call index
	thinkIndex map[int64]int  // content block index → reasoning part index
	pending    map[int64]bool // tool blocks that have not streamed input yet
	initial    map[int64]string
	provided   []*openBlock // provider blocks not yet yielded, in start order

	// Token counts. The input counts are kept apart because message_delta
	// may update any one of them; Usage.InputTokens is their sum.
	input, cacheCreation, cacheRead, output int64
}

// openBlock is a streamed block that becomes a provider part: its start,
// and the input it streams (a server_tool_use's).
type openBlock struct {
	index   int64
	start   string
	typ     string
	input   strings.Builder
	stopped bool
}

func newStreamState() *streamState {
	return &streamState{toolIndex: map[int64]int{}, thinkIndex: map[int64]int{}, pending: map[int64]bool{}, initial: map[int64]string{}}
}

func (s *streamState) add(ev sdk.MessageStreamEventUnion) []model.Chunk {
	switch ev.Type {
	case "message_start":
		s.model = ev.Message.Model
		u := ev.Message.Usage
		s.input, s.cacheCreation, s.cacheRead = u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens
		s.output = u.OutputTokens
		if s.model != "" {
			return []model.Chunk{{Model: s.model}}
		}

	case "content_block_start":
		cb := ev.ContentBlock
		switch cb.Type {
		case "thinking", "redacted_thinking":
			s.order.thinking()
			idx := len(s.thinkIndex)
			s.thinkIndex[ev.Index] = idx
			d := &model.ReasoningDelta{Index: idx, Text: cb.Thinking, Data: cb.Signature}
			if cb.Type == "redacted_thinking" {
				d = &model.ReasoningDelta{Index: idx, Data: cb.Data, Redacted: true}
			}
			return []model.Chunk{{Reasoning: d}}
		case "text":
			if s.textPos == nil {
				s.textPos = map[int64]int{}
			}
			s.textPos[ev.Index] = s.order.text(len(cb.Text))
			if cb.Text != "" {
				return []model.Chunk{{Text: cb.Text}}
			}
		case "tool_use":
			s.order.toolUse(cb.ID)
			idx := len(s.toolIndex)
			s.toolIndex[ev.Index] = idx
			s.pending[ev.Index] = true
			s.initial[ev.Index] = cb.JSON.Input.Raw()
			return []model.Chunk{{ToolCall: &model.ToolCallDelta{Index: idx, ID: cb.ID, Name: cb.Name}}}
		case "":
		default:
			// A server tool's call or result. A result comes whole here;
			// a call streams its input as tool_use does, but it is not a
			// tool call of the reply.
			if _, ok := providerPart(cb.RawJSON(), cb.Type, nil); ok && s.open(ev.Index) == nil {
				s.order.provider()
				s.provided = append(s.provided, &openBlock{index: ev.Index, start: cb.RawJSON(), typ: cb.Type})
			}
		}

	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			if k, ok := s.textPos[ev.Index]; ok {
				s.order.grow(k, len(ev.Delta.Text))
			}
			if ev.Delta.Text != "" {
				return []model.Chunk{{Text: ev.Delta.Text}}
			}
		case "thinking_delta", "signature_delta":
			idx, ok := s.thinkIndex[ev.Index]
			if !ok || ev.Delta.Thinking == "" && ev.Delta.Signature == "" {
				return nil
			}
			return []model.Chunk{{Reasoning: &model.ReasoningDelta{Index: idx, Text: ev.Delta.Thinking, Data: ev.Delta.Signature}}}
		case "input_json_delta":
			if b := s.open(ev.Index); b != nil {
				b.input.WriteString(ev.Delta.PartialJSON)
				return nil
			}
			idx, ok := s.toolIndex[ev.Index]
			if !ok || ev.Delta.PartialJSON == "" {
				return nil
			}
			delete(s.pending, ev.Index)
			return []model.Chunk{{ToolCall: &model.ToolCallDelta{Index: idx, Arguments: ev.Delta.PartialJSON}}}
		}

	case "content_block_stop":
		if b := s.open(ev.Index); b != nil {
			b.stopped = true
			return s.flush(false)
		}
		// A tool block that streamed no input keeps the input it started
		// with, which for a call without arguments is {}.
		if s.pending[ev.Index] {
			delete(s.pending, ev.Index)
			if in := strings.TrimSpace(s.initial[ev.Index]); in != "" && in != "{}" && in != "null" {
				return []model.Chunk{{ToolCall: &model.ToolCallDelta{Index: s.toolIndex[ev.Index], Arguments: in}}}
			}
		}

	case "message_delta":
		if r := string(ev.Delta.StopReason); r != "" {
			s.finish = finishReason(r)
		}
		// Counts are cumulative; a field the event leaves out keeps the
		// value message_start gave it.
		u := ev.Usage
		if u.JSON.InputTokens.Valid() {
			s.input = u.InputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			s.cacheCreation = u.CacheCreationInputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			s.cacheRead = u.CacheReadInputTokens
		}
		if u.JSON.OutputTokens.Valid() {
			s.output = u.OutputTokens
		}

	case "message_stop":
		s.stopped = true
		return s.flush(true)
	}
	return nil
}

// open returns the provider block being streamed at a content block index,
// nil when there is none.
func (s *streamState) open(index int64) *openBlock {
	for _, b := range s.provided {
		if b.index == index && !b.stopped {
			return b
		}
	}
	return nil
}

// flush yields the provider blocks that have ended and follow no block
// still open, or all of them when all is set.
func (s *streamState) flush(all bool) []model.Chunk {
	var out []model.Chunk
	for len(s.provided) > 0 && (all || s.provided[0].stopped) {
		b := s.provided[0]
		s.provided = s.provided[1:]
		var input json.RawMessage
		if in := strings.TrimSpace(b.input.String()); in != "" && json.Valid([]byte(in)) {
			input = json.RawMessage(in)
		}
		if p, ok := providerPart(b.start, b.typ, input); ok {
			out = append(out, model.Chunk{Part: &p})
		}
	}
	return out
}

func (s *streamState) final() model.Chunk {
	u := model.Usage{InputTokens: int(s.input + s.cacheCreation + s.cacheRead), OutputTokens: int(s.output), CachedInputTokens: int(s.cacheRead)}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return model.Chunk{Usage: &u, FinishReason: s.finish, Model: s.model, Metadata: s.order.metadata()}
}

// statusOfType returns the HTTP status Anthropic documents for an error
// type. It classifies errors that arrive as stream events, after a 200
// response.
func statusOfType(typ string) (int, bool) {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest, true
	case "authentication_error":
		return http.StatusUnauthorized, true
	case "billing_error":
		return http.StatusPaymentRequired, true
	case "permission_error":
		return http.StatusForbidden, true
	case "not_found_error":
		return http.StatusNotFound, true
	case "request_too_large":
		return http.StatusRequestEntityTooLarge, true
	case "rate_limit_error":
		return http.StatusTooManyRequests, true
	case "api_error":
		return http.StatusInternalServerError, true
	case "timeout_error":
		return http.StatusGatewayTimeout, true
	case "overloaded_error":
		return 529, true
	}
	return 0, false
}

// convertError turns an error of the anthropic-sdk-go client into a
// *model.ProviderError carrying the status and Anthropic's message. Errors
// that did not come from the API (cancellation, connection failures) are
// returned wrapped but otherwise unchanged, so model.IsTransient can
// classify them.
func convertError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*streamlimit.Error](err); ok {
		return fmt.Errorf("anthropic: %w (anthropic.WithStreamLimits sets the limits)", err)
	}
	apiErr, ok := errors.AsType[*sdk.Error](err)
	if !ok {
		return fmt.Errorf("anthropic: %w", err)
	}
	pe := &model.ProviderError{Provider: "anthropic", StatusCode: apiErr.StatusCode, Err: err}
	raw := apiErr.RawJSON()
	var body struct {
		Error   json.RawMessage `json:"error"` // an object, or a gateway's string
		Message string          `json:"message"`
		Detail  string          `json:"detail"` // gateways and proxies in front of the API
	}
	if json.Unmarshal([]byte(raw), &body) == nil {
		var obj struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		var text string
		if json.Unmarshal(body.Error, &obj) == nil {
			pe.Type, pe.Message = obj.Type, obj.Message
		} else if json.Unmarshal(body.Error, &text) == nil {
			pe.Message = text
		}
		if pe.Message == "" {
			pe.Message = body.Message
		}
		if pe.Message == "" {
			pe.Message = body.Detail
		}
	} else {
		pe.Message = strings.TrimSpace(raw)
		if len(pe.Message) > 500 {
			pe.Message = pe.Message[:500] + "..."
		}
	}
	if pe.StatusCode < 400 {
		// An error event inside a stream that had started with 200: the
		// status is the one its type stands for, or none.
		pe.StatusCode, _ = statusOfType(pe.Type)
	}
	if apiErr.Response != nil && apiErr.Response.StatusCode >= 400 {
		if d, ok := model.RetryAfter(apiErr.Response.Header, time.Now()); ok {
			pe.RetryAfter = d
		}
	}
	return pe
}
