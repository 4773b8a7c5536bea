package tokens

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
)

// Encoding names a byte-pair encoding.
type Encoding string

// The encodings of OpenAI's chat models.
const (
	// O200kBase is the encoding of GPT-4o, GPT-4.1, GPT-5 and the
	// o-series models.
	O200kBase Encoding = "o200k_base"
	// Cl100kBase is the encoding of GPT-4 and GPT-3.5.
	Cl100kBase Encoding = "cl100k_base"
)

// ErrUnknownModel is matched by the error of EncodingFor and of a
// Counter's CountTokens for a model whose encoding is not known.
var ErrUnknownModel = errors.New("tokens: no known encoding for the model")

// The figures of a chat request's count beyond its text.
const (
	// TokensPerMessage is what a message of a chat request takes around
	// its content: the markers of its start and end and its role.
	TokensPerMessage = 3
	// TokensPerName is what a message's name adds beside the name's own
	// tokens.
	TokensPerName = 1
	// TokensPerReply is what every request takes for the start of the
	// reply.
	TokensPerReply = 3
	// TokensPerToolCall is what an assistant message's tool call takes
	// beside the tokens of its name and arguments.
	TokensPerToolCall = 3
)

// EncodingFor returns the encoding of the named OpenAI model, by its
// name's family ("gpt-4o-mini-2024-07-18" is of "gpt-4o"), or an error
// matching ErrUnknownModel.
func EncodingFor(modelName string) (Encoding, error) {
	n := strings.ToLower(strings.TrimSpace(modelName))
	n = strings.TrimPrefix(n, "ft:")
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:] // "openai/gpt-4o" as a gateway names it
	}
	for _, p := range []string{"gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "chatgpt-4o", "o1", "o3", "o4", "gpt-oss"} {
		if strings.HasPrefix(n, p) {
			return O200kBase, nil
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada"} {
		if strings.HasPrefix(n, p) {
			return Cl100kBase, nil
		}
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownModel, modelName)
}

// codecs builds each encoding once: its tables take tens of milliseconds
// to build and are shared by every Counter.
var codecs = map[Encoding]func() tokenizer.Codec{
	O200kBase:  sync.OnceValue(func() tokenizer.Codec { return mustGet(tokenizer.O200kBase) }),
	Cl100kBase: sync.OnceValue(func() tokenizer.Codec { return mustGet(tokenizer.Cl100kBase) }),
}

func mustGet(e tokenizer.Encoding) tokenizer.Codec {
	c, err := tokenizer.Get(e)
	if err != nil {
		panic(fmt.Sprintf("tokens: encoding %s is compiled in but unavailable: %v", e, err))
	}
	return c
}

// Counter counts a request's tokens as OpenAI's chat completions API
// does. The zero Counter is not usable; make one with New or ForEncoding.
// A Counter is safe for concurrent use.
type Counter struct {
	fixed    Encoding // every request, whatever its model
	fallback string   // the model of a request that names none
}

var _ modelmw.TokenCounter = (*Counter)(nil)

// New returns a Counter that counts each request with the encoding of
// the model it names (Request.Model), or of defaultModel when it names
// none: give it the model name the provider is configured with.
func New(defaultModel string) (*Counter, error) {
	if _, err := EncodingFor(defaultModel); err != nil {
		return nil, err
	}
	return &Counter{fallback: defaultModel}, nil
}

// ForEncoding returns a Counter that counts every request with e, for
// models whose names EncodingFor does not know (a fine-tuned or a
// gateway's model of a known family).
func ForEncoding(e Encoding) (*Counter, error) {
	if codecs[e] == nil {
		return nil, fmt.Errorf("tokens: unknown encoding %q", e)
	}
	return &Counter{fixed: e}, nil
}

// codec returns the codec for a request of the named model.
func (c *Counter) codec(modelName string) (tokenizer.Codec, error) {
	e := c.fixed
	if e == "" {
		if modelName == "" {
			modelName = c.fallback
		}
		var err error
		if e, err = EncodingFor(modelName); err != nil {
			return nil, err
		}
	}
	return codecs[e](), nil
}

// CountText returns the tokens of text alone, in the encoding of the
// Counter's default model.
func (c *Counter) CountText(text string) (int, error) {
	codec, err := c.codec("")
	if err != nil {
		return 0, err
	}
	return count(codec, text), nil
}

// CountTokens counts the tokens of req's prompt: its messages, with the
// chat format's overhead, and its tool definitions. It does no I/O; ctx
// is unused.
func (c *Counter) CountTokens(_ context.Context, req *model.Request) (int, error) {
	if req == nil {
		return 0, nil
	}
	codec, err := c.codec(req.Model)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range req.Messages {
		n += messageTokens(codec, &req.Messages[i])
	}
	if len(req.Messages) > 0 {
		n += TokensPerReply
	}
	if len(req.Tools) > 0 {
		n += toolTokens(codec, req.Tools)
	}
	return n, nil
}

// count returns the tokens of s. Invalid UTF-8 is counted as the API
// sees it after the client's JSON encoding replaced it.
func count(codec tokenizer.Codec, s string) int {
	if s == "" {
		return 0
	}
	n, err := codec.Count(strings.ToValidUTF8(s, "\uFFFD"))
	if err != nil {
		return (len(s) + 3) / 4 // cannot happen with valid UTF-8
	}
	return n
}

// messageTokens counts one message as the API does: its overhead, role,
// content, name and tool calls.
func messageTokens(codec tokenizer.Codec, m *model.Message) int {
	n := TokensPerMessage + count(codec, string(m.Role)) + count(codec, m.Text())
	for _, p := range m.Content {
		if p.Type == model.PartImage {
			n += modelmw.TokensPerImage
		}
	}
	if m.Name != "" {
		n += TokensPerName + count(codec, m.Name)
	}
	for _, tc := range m.ToolCalls {
		n += TokensPerToolCall + count(codec, tc.Name) + count(codec, string(tc.Arguments))
	}
	return n
}

// The figures of OpenAI's published rule for counting function
// definitions in a prompt.
const (
	funcInit  = 7
	propInit  = 3
	propKey   = 3
	enumInit  = -3
	enumItem  = 3
	funcsEnd  = 12
	funcInit4 = 10 // GPT-4 and GPT-3.5 (cl100k_base)
)

// schemaProp is the part of a JSON Schema property the rule reads.
type schemaProp struct {
	Type        any    `json:"type"`
	Description string `json:"description"`
	Enum        []any  `json:"enum"`
}

// toolTokens counts tool definitions by OpenAI's published rule: each
// function's "name:description", then "key:type:description" of each of
// its top-level properties and their enum values, with fixed figures
// around them. Nested schemas are counted by their JSON text.
func toolTokens(codec tokenizer.Codec, defs []model.ToolDefinition) int {
	init := funcInit
	if codec.GetName() == string(Cl100kBase) {
		init = funcInit4
	}
	n := 0
	for _, d := range defs {
		n += init + count(codec, d.Name+":"+strings.TrimSuffix(d.Description, "."))
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if len(d.InputSchema) == 0 || json.Unmarshal(d.InputSchema, &schema) != nil || len(schema.Properties) == 0 {
			continue
		}
		n += propInit
		keys := make([]string, 0, len(schema.Properties))
		for k := range schema.Properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			raw := schema.Properties[k]
			n += propKey
			var p schemaProp
			if json.Unmarshal(raw, &p) != nil {
				n += count(codec, k+":"+string(raw))
				continue
			}
			if len(p.Enum) > 0 {
				n += enumInit
				for _, e := range p.Enum {
					n += enumItem + count(codec, fmt.Sprint(e))
				}
			}
			typ, _ := p.Type.(string)
			if typ == "" || typ == "object" || typ == "array" {
				// The rule covers flat properties; a nested schema is
				// counted by its text.
				typ = string(raw)
			}
			n += count(codec, k+":"+typ+":"+strings.TrimSuffix(p.Description, "."))
		}
	}
	return n + funcsEnd
}
