package gemini

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"google.golang.org/genai"

	"github.com/trellis-go/trellis/model"
)

// PartMIMEType is the MIMEType of the provider parts (model.PartProvider)
// this package keeps: a Gemini content part it has no part of its own for
// (code the model ran and its result, say), as the API sent it. Parts of
// this type are sent back to Gemini as they came; others' provider parts
// are left out.
const PartMIMEType = "application/vnd.google.gemini.part+json"

// Metadata keys of an assistant message, under which the model keeps the
// thought signatures Gemini puts on parts other than thoughts, so that
// they go back with the message: the API requires the signature of a
// function call in the next request.
const (
	// MetaCallSignature prefixes the key of a function call's signature;
	// the call's ID follows. The value is base64.
	MetaCallSignature = "trellis.gemini.signature.call."
	// MetaTextSignature keys the signature of the reply's text (base64).
	MetaTextSignature = "trellis.gemini.signature.text"
)

// generatedIDPrefix starts the IDs this package gives function calls that
// came without one (the Gemini API leaves them out): such IDs are not
// sent back, as the API did not make them.
const generatedIDPrefix = "gemini-call-"

// request maps a request to the SDK's arguments.
func (m *Model) request(req *model.Request) (string, []*genai.Content, *genai.GenerateContentConfig, error) {
	if req == nil {
		return "", nil, nil, errors.New("gemini: nil request")
	}
	name := m.name
	if req.Model != "" {
		name = req.Model
	}
	cfg := &genai.GenerateContentConfig{ThinkingConfig: m.thinking, ResponseModalities: m.outputs}
	system, contents, err := messages(req.Messages)
	if err != nil {
		return "", nil, nil, err
	}
	cfg.SystemInstruction = system
	if len(req.Tools) > 0 {
		t := &genai.Tool{}
		for _, td := range req.Tools {
			fd, err := function(td)
			if err != nil {
				return "", nil, nil, err
			}
			t.FunctionDeclarations = append(t.FunctionDeclarations, fd)
		}
		cfg.Tools = []*genai.Tool{t}
	}
	if err := req.ToolChoice.Check(req.Tools); err != nil {
		return "", nil, nil, fmt.Errorf("gemini: %w", err)
	}
	if cfg.ToolConfig, err = toolConfig(req.ToolChoice); err != nil {
		return "", nil, nil, err
	}
	if len(req.Tools) == 0 {
		cfg.ToolConfig = nil // a mode without functions means nothing
	}
	if rf := req.ResponseFormat; rf != nil {
		if len(bytes.TrimSpace(rf.Schema)) == 0 {
			return "", nil, nil, errors.New("gemini: response format has no schema")
		}
		if !json.Valid(rf.Schema) {
			return "", nil, nil, errors.New("gemini: response format schema is not valid JSON")
		}
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = rf.Schema
	}
	s := m.settings.Override(req.Settings)
	if s.Temperature != nil {
		cfg.Temperature = genai.Ptr(float32(*s.Temperature))
	}
	if s.TopP != nil {
		cfg.TopP = genai.Ptr(float32(*s.TopP))
	}
	if s.MaxTokens < 0 || s.MaxTokens > math.MaxInt32 {
		return "", nil, nil, fmt.Errorf("gemini: max tokens %d out of range", s.MaxTokens)
	}
	cfg.MaxOutputTokens = int32(s.MaxTokens)
	cfg.StopSequences = s.Stop
	if s.Seed != nil {
		if *s.Seed < math.MinInt32 || *s.Seed > math.MaxInt32 {
			return "", nil, nil, fmt.Errorf("gemini: seed %d does not fit 32 bits", *s.Seed)
		}
		cfg.Seed = genai.Ptr(int32(*s.Seed))
	}
	return name, contents, cfg, nil
}

// messages maps the conversation: system messages to the system
// instruction, user messages to "user" contents, assistant messages to
// "model" contents, and each run of tool messages to one "user" content of
// function responses (the API wants a turn's responses together).
func messages(in []model.Message) (*genai.Content, []*genai.Content, error) {
	var (
		system   *genai.Content
		contents []*genai.Content
		// names of the calls so far, by ID, for tool messages without one
		names = map[string]string{}
		tools *genai.Content // the run of tool messages being gathered
	)
	for i, msg := range in {
		if msg.Role != model.RoleTool && tools != nil {
			contents, tools = append(contents, tools), nil
		}
		wrap := func(err error) error { return fmt.Errorf("gemini: message %d (%s): %w", i, msg.Role, err) }
		switch msg.Role {
		case model.RoleSystem:
			if system == nil {
				system = &genai.Content{}
			}
			for j, p := range msg.Content {
				if p.Type == model.PartProvider || p.IsReasoning() {
					continue
				}
				text, ok := partText(p)
				if !ok {
					return nil, nil, wrap(fmt.Errorf("part %d: %s content is not supported in system messages", j, p.Type))
				}
				system.Parts = append(system.Parts, &genai.Part{Text: text})
			}
		case model.RoleUser:
			c := &genai.Content{Role: genai.RoleUser}
			for j, p := range msg.Content {
				gp, err := userPart(p)
				if err != nil {
					return nil, nil, wrap(fmt.Errorf("part %d: %w", j, err))
				}
				if gp != nil {
					c.Parts = append(c.Parts, gp)
				}
			}
			if len(c.Parts) == 0 {
				c.Parts = []*genai.Part{{Text: ""}}
			}
			contents = append(contents, c)
		case model.RoleAssistant:
			c, err := assistant(msg, names)
			if err != nil {
				return nil, nil, wrap(err)
			}
			if len(c.Parts) > 0 {
				contents = append(contents, c)
			}
		case model.RoleTool:
			fr, err := functionResponse(msg, names)
			if err != nil {
				return nil, nil, wrap(err)
			}
			if tools == nil {
				tools = &genai.Content{Role: genai.RoleUser}
			}
			tools.Parts = append(tools.Parts, &genai.Part{FunctionResponse: fr})
		default:
			return nil, nil, wrap(fmt.Errorf("unknown role %q", msg.Role))
		}
	}
	if tools != nil {
		contents = append(contents, tools)
	}
	return system, contents, nil
}

// partText returns the text a text or JSON part carries, and the text
// that stands for an audio or resource part (model.Part.TextFallback).
func partText(p model.Part) (string, bool) {
	switch p.Type {
	case model.PartText:
		return p.Text, true
	case model.PartJSON:
		return string(p.JSON), true
	case model.PartAudio, model.PartResource:
		return p.TextFallback(), true
	}
	return "", false
}

// userPart maps a part of a user or assistant message: text, an image
// inline or by URL, or one of this package's provider parts. Other
// providers' parts and reasoning give nil.
func userPart(p model.Part) (*genai.Part, error) {
	if text, ok := partText(p); ok {
		return &genai.Part{Text: text}, nil
	}
	switch p.Type {
	case model.PartImage:
		if len(p.Data) > 0 {
			if p.MIMEType == "" {
				return nil, errors.New("inline image has no MIME type")
			}
			return &genai.Part{InlineData: &genai.Blob{MIMEType: p.MIMEType, Data: p.Data}}, nil
		}
		if p.URL == "" {
			return nil, errors.New("image has neither data nor a URL")
		}
		return &genai.Part{FileData: &genai.FileData{MIMEType: p.MIMEType, FileURI: p.URL}}, nil
	case model.PartProvider:
		if p.MIMEType != PartMIMEType {
			return nil, nil // another provider's content
		}
		var gp genai.Part
		if err := json.Unmarshal(p.JSON, &gp); err != nil {
			return nil, fmt.Errorf("gemini part: %w", err)
		}
		return &gp, nil
	case model.PartReasoning, model.PartRedactedReasoning:
		return nil, nil
	}
	return nil, fmt.Errorf("unknown part type %q", p.Type)
}

// assistant maps an assistant message to a "model" content: its thoughts
// (with their signatures), its text and images, its provider parts, then
// its function calls, each with the signature it came with.
func assistant(msg model.Message, names map[string]string) (*genai.Content, error) {
	c := &genai.Content{Role: genai.RoleModel}
	var lastText *genai.Part
	for j, p := range msg.Content {
		switch p.Type {
		case model.PartReasoning:
			if p.Text == "" && len(p.Data) == 0 {
				continue
			}
			c.Parts = append(c.Parts, &genai.Part{Text: p.Text, Thought: true, ThoughtSignature: p.Data})
			continue
		case model.PartRedactedReasoning:
			continue // Gemini has none; another provider's
		}
		gp, err := userPart(p)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", j, err)
		}
		if gp == nil {
			continue
		}
		if gp.Text != "" {
			lastText = gp
		}
		c.Parts = append(c.Parts, gp)
	}
	if sig := signature(msg.Metadata, MetaTextSignature); sig != nil && lastText != nil {
		lastText.ThoughtSignature = sig
	}
	for _, tc := range msg.ToolCalls {
		if tc.Name == "" {
			return nil, fmt.Errorf("tool call %q has no name", tc.ID)
		}
		args := map[string]any{}
		if raw := bytes.TrimSpace(tc.Arguments); len(raw) > 0 {
			if err := json.Unmarshal(raw, &args); err != nil || args == nil {
				return nil, fmt.Errorf("tool call %q (%s): arguments are not a JSON object", tc.ID, tc.Name)
			}
		}
		fc := &genai.FunctionCall{Name: tc.Name, Args: args}
		if !strings.HasPrefix(tc.ID, generatedIDPrefix) {
			fc.ID = tc.ID
		}
		names[tc.ID] = tc.Name
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: fc, ThoughtSignature: signature(msg.Metadata, MetaCallSignature+tc.ID)})
	}
	return c, nil
}

// signature decodes the signature kept under key, or nil.
func signature(meta map[string]string, key string) []byte {
	v, ok := meta[key]
	if !ok {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// functionResponse maps a tool message: its text (JSON parts as their
// raw JSON) under "output", or "error" for a failure, and its images as
// the response's own parts, which the model sees as images.
func functionResponse(msg model.Message, names map[string]string) (*genai.FunctionResponse, error) {
	name := msg.ToolName
	if name == "" {
		name = names[msg.ToolCallID]
	}
	if name == "" {
		return nil, fmt.Errorf("tool message for call %q names no tool, and no call before it has that ID", msg.ToolCallID)
	}
	fr := &genai.FunctionResponse{Name: name}
	if !strings.HasPrefix(msg.ToolCallID, generatedIDPrefix) {
		fr.ID = msg.ToolCallID
	}
	var text strings.Builder
	for j, p := range msg.Content {
		switch p.Type {
		case model.PartImage:
			if len(p.Data) > 0 {
				if p.MIMEType == "" {
					return nil, fmt.Errorf("part %d: inline image has no MIME type", j)
				}
				fr.Parts = append(fr.Parts, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{MIMEType: p.MIMEType, Data: p.Data}})
			} else if p.URL != "" {
				fr.Parts = append(fr.Parts, &genai.FunctionResponsePart{FileData: &genai.FunctionResponseFileData{MIMEType: p.MIMEType, FileURI: p.URL}})
			} else {
				return nil, fmt.Errorf("part %d: image has neither data nor a URL", j)
			}
		case model.PartProvider:
		default:
			t, ok := partText(p)
			if !ok {
				return nil, fmt.Errorf("part %d: %s content is not supported in tool messages", j, p.Type)
			}
			text.WriteString(t)
		}
	}
	key := "output"
	if msg.IsError {
		key = "error"
	}
	fr.Response = map[string]any{key: text.String()}
	return fr, nil
}

// function maps a tool definition to a function declaration whose
// parameters are the tool's JSON Schema as it is.
func function(td model.ToolDefinition) (*genai.FunctionDeclaration, error) {
	if td.Name == "" {
		return nil, errors.New("gemini: tool definition has no name")
	}
	fd := &genai.FunctionDeclaration{Name: td.Name, Description: td.Description}
	if raw := bytes.TrimSpace(td.InputSchema); len(raw) > 0 {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("gemini: tool %q: input schema is not a JSON object", td.Name)
		}
		fd.ParametersJsonSchema = json.RawMessage(raw)
	} else {
		fd.ParametersJsonSchema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return fd, nil
}

// toolConfig maps a tool choice: required is "ANY", a named tool "ANY"
// restricted to it.
func toolConfig(tc model.ToolChoice) (*genai.ToolConfig, error) {
	fc := &genai.FunctionCallingConfig{}
	switch tc.Mode {
	case model.ToolChoiceAuto:
		return nil, nil
	case model.ToolChoiceNone:
		fc.Mode = genai.FunctionCallingConfigModeNone
	case model.ToolChoiceRequired:
		fc.Mode = genai.FunctionCallingConfigModeAny
	case model.ToolChoiceTool:
		if tc.Name == "" {
			return nil, errors.New("gemini: tool choice names no tool")
		}
		fc.Mode = genai.FunctionCallingConfigModeAny
		fc.AllowedFunctionNames = []string{tc.Name}
	default:
		return nil, fmt.Errorf("gemini: unknown tool choice mode %q", tc.Mode)
	}
	return &genai.ToolConfig{FunctionCallingConfig: fc}, nil
}
