package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/trellis-go/trellis/internal/streamlimit"
	"github.com/trellis-go/trellis/model"
)

// toResponse maps a chat completion to a Response.
func toResponse(c *oai.ChatCompletion) (*model.Response, error) {
	if c == nil || len(c.Choices) == 0 {
		return nil, errors.New("openai: the reply has no choices")
	}
	choice := c.Choices[0]
	msg := model.Message{Role: model.RoleAssistant}
	text, reasoning := contentText(choice.Message.Content, choice.Message.JSON.Content.Raw())
	if r := reasoningText(choice.Message.JSON.ExtraFields); r != "" {
		reasoning = r + reasoning
	}
	if reasoning != "" {
		msg.Content = []model.Part{model.ReasoningPart(reasoning, nil)}
	}
	if text == "" {
		text = choice.Message.Refusal
	}
	if text != "" {
		msg.Content = append(msg.Content, model.TextPart(text))
	}
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: rawArguments(tc.Function.Arguments),
		})
	}
	if fc := choice.Message.FunctionCall; len(msg.ToolCalls) == 0 && fc.Name != "" {
		// The legacy function_call, which servers that predate tool calls
		// still send: a call without an ID.
		msg.ToolCalls = []model.ToolCall{{Name: fc.Name, Arguments: rawArguments(fc.Arguments)}}
	}
	resp := &model.Response{
		Message:      msg,
		FinishReason: finishReason(choice.FinishReason),
		Model:        c.Model,
	}
	if c.JSON.Usage.Valid() {
		resp.Usage = usage(c.Usage)
	}
	return resp, nil
}

// contentText returns the text of a message's content and the reasoning
// it holds. Some compatible servers (Mistral's, for one) send the content as
// an array of parts, which the client hands over as the array's JSON: the
// text of its "text" parts is the reply, the text inside its "thinking"
// parts the reasoning, and parts of other types are left out.
func contentText(content, raw string) (text, reasoning string) {
	if !strings.HasPrefix(strings.TrimSpace(raw), "[") {
		return content, ""
	}
	type textPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	var parts []struct {
		textPart
		Thinking json.RawMessage `json:"thinking"`
	}
	if json.Unmarshal([]byte(raw), &parts) != nil {
		return content, ""
	}
	var b, r strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "thinking":
			var inner []textPart
			if json.Unmarshal(p.Thinking, &inner) != nil {
				continue
			}
			for _, t := range inner {
				if t.Type == "text" {
					r.WriteString(t.Text)
				}
			}
		}
	}
	return b.String(), r.String()
}

// reasoningText returns the reasoning that some compatible servers send
// beside the content of a message or delta: "reasoning_content" (DeepSeek,
// vLLM, SGLang, llama.cpp) or "reasoning" (Ollama, OpenRouter). OpenAI's
// own models do not return their reasoning through this API.
func reasoningText(extra map[string]respjson.Field) string {
	for _, key := range [...]string{"reasoning_content", "reasoning"} {
		f, ok := extra[key]
		if !ok {
			continue
		}
		var text string
		if json.Unmarshal([]byte(f.Raw()), &text) == nil && text != "" {
			return text
		}
	}
	return ""
}

func rawArguments(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

// usage maps the token counts. Cached prompt tokens are part of the prompt
// tokens and reasoning tokens part of the completion tokens, so both are
// counted. A total that a compatible server left out is computed.
func usage(u oai.CompletionUsage) model.Usage {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return model.Usage{
		InputTokens:       int(u.PromptTokens),
		OutputTokens:      int(u.CompletionTokens),
		TotalTokens:       int(total),
		CachedInputTokens: int(u.PromptTokensDetails.CachedTokens),
		ReasoningTokens:   int(u.CompletionTokensDetails.ReasoningTokens),
	}
}

// finishReason normalizes the legacy "function_call" to "tool_calls", and
// the names other servers that speak the API use for the normalized
// reasons; the reasons OpenAI sends already use the normalized names.
// Others pass through unchanged.
func finishReason(r string) string {
	switch r {
	case "function_call", "tool_use":
		return "tool_calls"
	case "eos", "eos_token", "end_turn", "stop_sequence":
		return "stop"
	case "max_tokens", "max_length", "model_length":
		return "length"
	}
	return r
}

// streamState turns chat completion chunks into model chunks. The finish
// reason and usage are held back and sent together in the final chunk,
// because OpenAI sends usage in a chunk of its own after the finish reason.
type streamState struct {
	model  string
	finish string
	usage  *model.Usage
}

func (s *streamState) add(c oai.ChatCompletionChunk) []model.Chunk {
	if c.Model != "" {
		s.model = c.Model
	}
	if c.JSON.Usage.Valid() {
		u := usage(c.Usage)
		s.usage = &u
	}
	var out []model.Chunk
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		text, reasoning := contentText(ch.Delta.Content, ch.Delta.JSON.Content.Raw())
		if r := reasoningText(ch.Delta.JSON.ExtraFields); r != "" {
			reasoning = r + reasoning
		}
		if reasoning != "" {
			// One reasoning part: these servers stream it before the text.
			out = append(out, model.Chunk{Reasoning: &model.ReasoningDelta{Text: reasoning}})
		}
		if text != "" {
			out = append(out, model.Chunk{Text: text})
		}
		if ch.Delta.Refusal != "" {
			out = append(out, model.Chunk{Text: ch.Delta.Refusal})
		}
		for _, tc := range ch.Delta.ToolCalls {
			out = append(out, model.Chunk{ToolCall: &model.ToolCallDelta{
				Index:     int(tc.Index),
				ID:        tc.ID,
				Name:      tc.Function.Name,
				Arguments: tc.Function.Arguments,
			}})
		}
		if fc := ch.Delta.FunctionCall; fc.Name != "" || fc.Arguments != "" {
			// The legacy function_call, which servers that predate tool
			// calls still send: one call without an ID, at index 0.
			out = append(out, model.Chunk{ToolCall: &model.ToolCallDelta{
				Name:      fc.Name,
				Arguments: fc.Arguments,
			}})
		}
		if ch.FinishReason != "" {
			s.finish = finishReason(ch.FinishReason)
		}
	}
	return out
}

func (s *streamState) final() model.Chunk {
	return model.Chunk{Usage: s.usage, FinishReason: s.finish, Model: s.model}
}

// convertError turns an error of the openai-go client into a
// *model.ProviderError carrying the status and the provider's message.
// Errors that did not come from the API (cancellation, connection failures)
// are returned wrapped but otherwise unchanged, so model.IsTransient can
// classify them.
func convertError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*streamlimit.Error](err); ok {
		return fmt.Errorf("openai: %w (openai.WithStreamLimits sets the limits)", err)
	}
	if apiErr, ok := errors.AsType[*oai.Error](err); ok {
		pe := &model.ProviderError{
			Provider:   "openai",
			StatusCode: apiErr.StatusCode,
			Type:       apiErr.Type,
			Code:       apiErr.Code,
			Message:    apiErr.Message,
			Err:        err,
		}
		if apiErr.Response != nil {
			if d, ok := model.RetryAfter(apiErr.Response.Header, time.Now()); ok {
				pe.RetryAfter = d
			}
			if pe.Message == "" {
				pe.Message = bodyMessage(apiErr.Response.Body)
			}
		}
		return pe
	}
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		pe := &model.ProviderError{Provider: "openai", Message: se.Message, Err: err}
		if json.Unmarshal(se.Event.Data, &body) == nil && body.Error.Message != "" {
			pe.Message, pe.Type = body.Error.Message, body.Error.Type
			if body.Error.Code != nil {
				pe.Code = fmt.Sprint(body.Error.Code)
			}
		}
		pe.StatusCode = streamErrorStatus(pe.Type, pe.Code)
		return pe
	}
	return fmt.Errorf("openai: %w", err)
}

// streamErrorStatus is the HTTP status that an error reported inside an
// event stream (which began with 200) stands for, from its type and code,
// so that one reported before the reply began is retried like the same
// error sent as a status: rate limits 429, server errors and overload 5xx.
// It is 0 for the rest.
func streamErrorStatus(typ, code string) int {
	switch {
	case strings.Contains(typ, "rate_limit") || strings.Contains(code, "rate_limit"):
		return http.StatusTooManyRequests
	case strings.Contains(typ, "overloaded") || strings.Contains(code, "overloaded"):
		return http.StatusServiceUnavailable
	case typ == "server_error" || typ == "api_error" || code == "server_error":
		return http.StatusInternalServerError
	}
	return 0
}

// normalizeErrorBody rewrites an error reply whose "error" member is not an
// object — {"error": "Model is overloaded"}, as some compatible servers and
// gateways send — into OpenAI's shape, {"error": {"message": ...}}, which
// the client decodes into an error that keeps the status and the headers.
// Left as it was, the client fails to decode it and the status is lost.
func normalizeErrorBody(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.StatusCode < 400 || res.Body == nil {
		return res, err
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	var top struct {
		Error     json.RawMessage `json:"error"`
		ErrorType string          `json:"error_type"`
	}
	if json.Unmarshal(b, &top) != nil || len(top.Error) == 0 || top.Error[0] == '{' || string(top.Error) == "null" {
		return res, nil
	}
	var text string
	if json.Unmarshal(top.Error, &text) != nil {
		text = string(top.Error)
	}
	shaped, err := json.Marshal(map[string]any{"error": map[string]string{"message": text, "type": top.ErrorType}})
	if err != nil {
		return res, nil
	}
	res.Body = io.NopCloser(bytes.NewReader(shaped))
	res.ContentLength = int64(len(shaped))
	return res, nil
}

// bodyMessage extracts a message from an error body that is not shaped like
// OpenAI's ({"error": {...}}): the top-level "message" or "detail" some
// compatible servers send, or else the body's text. (An "error" given as a
// string was reshaped by normalizeErrorBody.)
func bodyMessage(body io.Reader) string {
	if body == nil {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(body, 64<<10))
	if err != nil {
		return ""
	}
	var top struct {
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal(b, &top) == nil {
		for _, s := range []string{top.Message, top.Detail} {
			if s != "" {
				return s
			}
		}
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}
