package fakeprovider

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Message is one message of a request, in a form common to both APIs.
type Message struct {
	Role  string // "user", "assistant" or "tool"
	Text  string
	Calls []Call // the assistant's tool calls
}

// Call is a tool call.
type Call struct {
	Name      string
	Arguments string // JSON
}

// Request is what a client sent.
type Request struct {
	Path     string
	Key      string // the API key the client sent
	Model    string
	System   string
	Tools    []string // names of the tools offered
	Messages []Message
}

// HasTool reports whether the request offers the named tool.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// ToolResults returns the texts of the tool results after the last user
// message, in order.
func (r Request) ToolResults() []string {
	var out []string
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != "user"; i-- {
		if r.Messages[i].Role == "tool" {
			out = append([]string{r.Messages[i].Text}, out...)
		}
	}
	return out
}

// LastUser returns the text of the last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Text
		}
	}
	return ""
}

// Reply is the model's answer: text, tool calls, or both.
type Reply struct {
	Text  string
	Calls []Call
}

// Policy answers a request.
type Policy func(Request) Reply

// Server is a fake provider. Its requests are recorded.
type Server struct {
	URL string // the base URL to give the client

	hs       *httptest.Server
	mu       sync.Mutex
	requests []Request
}

// Close stops the server before the test ends.
func (s *Server) Close() { s.hs.Close() }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) record(r Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	return len(s.requests)
}

// Tokens reported by the fake servers for every answer.
const (
	InputTokens  = 11
	OutputTokens = 7
)

// OpenAI starts a fake OpenAI Chat Completions server; its URL ends in /v1,
// as OPENAI_BASE_URL does. It is closed when the test ends.
func OpenAI(t testing.TB, policy Policy) *Server {
	s := &Server{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		req, err := decodeOpenAI(r)
		if err != nil {
			http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
			t.Errorf("fakeprovider: %v", err)
			return
		}
		n := s.record(req)
		reply := policy(req)
		msg := map[string]any{"role": "assistant", "content": reply.Text}
		finish := "stop"
		if len(reply.Calls) > 0 {
			var calls []map[string]any
			for i, c := range reply.Calls {
				calls = append(calls, map[string]any{
					"id":       fmt.Sprintf("call_%d_%d", n, i),
					"type":     "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
				})
			}
			msg["tool_calls"] = calls
			finish = "tool_calls"
		}
		writeJSON(w, map[string]any{
			"id":      fmt.Sprintf("chatcmpl-%d", n),
			"object":  "chat.completion",
			"created": 1,
			"model":   req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": InputTokens, "completion_tokens": OutputTokens, "total_tokens": InputTokens + OutputTokens},
		})
	}))
	t.Cleanup(hs.Close)
	s.hs, s.URL = hs, hs.URL+"/v1"
	return s
}

func decodeOpenAI(r *http.Request) (Request, error) {
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := readJSON(r, &body); err != nil {
		return Request{}, err
	}
	req := Request{
		Path:  r.URL.Path,
		Key:   strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
		Model: body.Model,
	}
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	for _, m := range body.Messages {
		text, err := openAIText(m.Content)
		if err != nil {
			return Request{}, err
		}
		if m.Role == "system" || m.Role == "developer" {
			req.System += text
			continue
		}
		msg := Message{Role: m.Role, Text: text}
		for _, c := range m.ToolCalls {
			msg.Calls = append(msg.Calls, Call{Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	return req, nil
}

// openAIText reads a message's content: a string, null, or an array of
// parts of which the text parts count.
func openAIText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content: %w", err)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// Anthropic starts a fake Anthropic Messages server, closed when the test
// ends.
func Anthropic(t testing.TB, policy Policy) *Server {
	s := &Server{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"not found"}}`, http.StatusNotFound)
			return
		}
		req, err := decodeAnthropic(r)
		if err != nil {
			http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad request"}}`, http.StatusBadRequest)
			t.Errorf("fakeprovider: %v", err)
			return
		}
		n := s.record(req)
		reply := policy(req)
		content := []any{}
		if reply.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": reply.Text})
		}
		stop := "end_turn"
		for i, c := range reply.Calls {
			content = append(content, map[string]any{
				"type":  "tool_use",
				"id":    fmt.Sprintf("toolu_%d_%d", n, i),
				"name":  c.Name,
				"input": json.RawMessage(c.Arguments),
			})
			stop = "tool_use"
		}
		writeJSON(w, map[string]any{
			"id":            fmt.Sprintf("msg_%d", n),
			"type":          "message",
			"role":          "assistant",
			"model":         req.Model,
			"content":       content,
			"stop_reason":   stop,
			"stop_sequence": nil,
			"usage":         map[string]any{"input_tokens": InputTokens, "output_tokens": OutputTokens},
		})
	}))
	t.Cleanup(hs.Close)
	s.hs, s.URL = hs, hs.URL
	return s
}

type anthropicBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"` // of a tool_result: a string or blocks
}

func decodeAnthropic(r *http.Request) (Request, error) {
	var body struct {
		Model    string          `json:"model"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := readJSON(r, &body); err != nil {
		return Request{}, err
	}
	system, err := anthropicText(body.System)
	if err != nil {
		return Request{}, err
	}
	req := Request{Path: r.URL.Path, Key: r.Header.Get("X-Api-Key"), Model: body.Model, System: system}
	for _, t := range body.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range body.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return Request{}, err
		}
		msg := Message{Role: m.Role}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				msg.Text += b.Text
			case "tool_use":
				msg.Calls = append(msg.Calls, Call{Name: b.Name, Arguments: string(b.Input)})
			case "tool_result":
				text, err := anthropicText(b.Content)
				if err != nil {
					return Request{}, err
				}
				req.Messages = append(req.Messages, Message{Role: "tool", Text: text})
			}
		}
		if msg.Text != "" || len(msg.Calls) > 0 {
			req.Messages = append(req.Messages, msg)
		}
	}
	return req, nil
}

// anthropicBlocks reads content given as a string or as blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("content: %w", err)
	}
	return blocks, nil
}

func anthropicText(raw json.RawMessage) (string, error) {
	blocks, err := anthropicBlocks(raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String(), nil
}

func readJSON(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("request body %s: %w", data, err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	// The values are maps of strings and numbers: encoding cannot fail, and
	// a failed write means the client has gone.
	_ = json.NewEncoder(w).Encode(v)
}
