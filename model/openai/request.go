package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/trellis-go/trellis/model"
)

// params maps a request to the Chat Completions parameters.
func (m *Model) params(req *model.Request) (oai.ChatCompletionNewParams, error) {
	var p oai.ChatCompletionNewParams
	if req == nil {
		return p, errors.New("openai: nil request")
	}
	p.Model = m.name
	if req.Model != "" {
		p.Model = req.Model
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs

	for _, td := range req.Tools {
		t, err := tool(td)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, t)
	}
	if p.ToolChoice, err = toolChoice(req.ToolChoice); err != nil {
		return p, err
	}
	if err := req.ToolChoice.Check(req.Tools); err != nil {
		return p, fmt.Errorf("openai: %w", err)
	}
	if len(p.Tools) == 0 && req.ToolChoice.Mode == model.ToolChoiceNone {
		// OpenAI refuses a tool choice without tools, and with no tools
		// none is what the model gets anyway.
		p.ToolChoice = oai.ChatCompletionToolChoiceOptionUnionParam{}
	}
	if rf := req.ResponseFormat; rf != nil {
		if len(bytes.TrimSpace(rf.Schema)) == 0 {
			return p, errors.New("openai: response format has no schema")
		}
		if !json.Valid(rf.Schema) {
			return p, errors.New("openai: response format schema is not valid JSON")
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: schemaName(rf.Name), Schema: rf.Schema}
		if rf.Description != "" {
			js.Description = oai.String(rf.Description)
		}
		if rf.Strict {
			js.Strict = oai.Bool(true)
		}
		p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
	}

	s := m.settings.Override(req.Settings)
	if s.Temperature != nil {
		p.Temperature = oai.Float(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = oai.Float(*s.TopP)
	}
	if s.MaxTokens < 0 {
		return p, fmt.Errorf("openai: negative max tokens %d", s.MaxTokens)
	}
	if s.MaxTokens > 0 {
		if m.legacyMaxTokens {
			p.MaxTokens = oai.Int(int64(s.MaxTokens))
		} else {
			p.MaxCompletionTokens = oai.Int(int64(s.MaxTokens))
		}
	}
	if len(s.Stop) > 0 {
		p.Stop.OfStringArray = s.Stop
	}
	if s.Seed != nil {
		p.Seed = oai.Int(*s.Seed)
	}
	p.ReasoningEffort = shared.ReasoningEffort(m.effort)
	return p, nil
}

// schemaName returns name in the form OpenAI requires of a response
// format's name: at most 64 letters, digits, '_' and '-'. Other characters
// (a Go type's name can hold brackets, stars, spaces and dots) become '_';
// an empty name becomes "response".
func schemaName(name string) string {
	const maxLen = 64
	b := make([]byte, 0, min(len(name), maxLen))
	for _, r := range name {
		if len(b) == maxLen {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b = append(b, byte(r))
		default:
			b = append(b, '_')
		}
	}
	if len(b) == 0 {
		return "response"
	}
	return string(b)
}

func messages(in []model.Message) ([]oai.ChatCompletionMessageParamUnion, error) {
	out := make([]oai.ChatCompletionMessageParamUnion, 0, len(in))
	// The images of the tool messages since the last other message: tool
	// messages take only text, so they follow the run of tool messages in
	// a user message of their own (a message between the tool messages of
	// one turn would be refused).
	var images []oai.ChatCompletionContentPartUnionParam
	for i, msg := range in {
		if msg.Role != model.RoleTool && len(images) > 0 {
			out, images = append(out, toolImages(images)), nil
		}
		var (
			u   oai.ChatCompletionMessageParamUnion
			err error
		)
		if msg.Role == model.RoleTool {
			u, images, err = toolMessage(msg, images)
		} else {
			u, err = message(msg)
		}
		if err != nil {
			return nil, fmt.Errorf("openai: message %d (%s): %w", i, msg.Role, err)
		}
		out = append(out, u)
	}
	if len(images) > 0 {
		out = append(out, toolImages(images))
	}
	return out, nil
}

// toolImages is the user message that carries the images of tool results.
func toolImages(parts []oai.ChatCompletionContentPartUnionParam) oai.ChatCompletionMessageParamUnion {
	head := oai.ChatCompletionContentPartUnionParam{OfText: &oai.ChatCompletionContentPartTextParam{
		Text: "The images the tool results above refer to:"}}
	p := &oai.ChatCompletionUserMessageParam{}
	p.Content.OfArrayOfContentParts = append([]oai.ChatCompletionContentPartUnionParam{head}, parts...)
	return oai.ChatCompletionMessageParamUnion{OfUser: p}
}

// toolMessage is a tool message's text, each image replaced by a note that
// it follows, and the images added to images, each after a label that
// names the call.
func toolMessage(msg model.Message, images []oai.ChatCompletionContentPartUnionParam) (oai.ChatCompletionMessageParamUnion, []oai.ChatCompletionContentPartUnionParam, error) {
	var u oai.ChatCompletionMessageParamUnion
	if msg.ToolCallID == "" {
		return u, images, errors.New("tool message has no tool call ID")
	}
	p := &oai.ChatCompletionToolMessageParam{ToolCallID: msg.ToolCallID}
	texts := make([]oai.ChatCompletionContentPartTextParam, 0, len(msg.Content))
	for j, part := range msg.Content {
		if part.Type == model.PartProvider {
			continue // another provider's content
		}
		if part.Type == model.PartImage {
			img, err := userPart(part)
			if err != nil {
				return u, images, fmt.Errorf("part %d: %w", j, err)
			}
			n := len(images)/2 + 1
			label := fmt.Sprintf("Image %d, from the result of call %s", n, msg.ToolCallID)
			if msg.ToolName != "" {
				label += " (" + msg.ToolName + ")"
			}
			images = append(images, oai.ChatCompletionContentPartUnionParam{OfText: &oai.ChatCompletionContentPartTextParam{Text: label + ":"}}, img)
			texts = append(texts, oai.ChatCompletionContentPartTextParam{Text: fmt.Sprintf("[image %d: in the user message after the tool results]", n)})
			continue
		}
		text, ok := partText(part)
		if !ok {
			return u, images, fmt.Errorf("part %d: %s content is not supported in tool messages", j, part.Type)
		}
		texts = append(texts, oai.ChatCompletionContentPartTextParam{Text: text})
	}
	switch len(texts) {
	case 0:
		p.Content.OfString = oai.String("")
	case 1:
		p.Content.OfString = oai.String(texts[0].Text)
	default:
		p.Content.OfArrayOfContentParts = texts
	}
	u.OfTool = p
	return u, images, nil
}

func message(msg model.Message) (oai.ChatCompletionMessageParamUnion, error) {
	var u oai.ChatCompletionMessageParamUnion
	switch msg.Role {
	case model.RoleSystem:
		text, err := assistantText(msg.Content)
		if err != nil {
			return u, err
		}
		p := &oai.ChatCompletionSystemMessageParam{}
		p.Content.OfString = oai.String(text)
		if msg.Name != "" {
			p.Name = oai.String(msg.Name)
		}
		u.OfSystem = p

	case model.RoleUser:
		p := &oai.ChatCompletionUserMessageParam{}
		if only, ok := onlyText(msg.Content); ok {
			p.Content.OfString = oai.String(only)
		} else {
			parts := make([]oai.ChatCompletionContentPartUnionParam, 0, len(msg.Content))
			for j, part := range msg.Content {
				if part.Type == model.PartProvider {
					continue // another provider's content
				}
				cp, err := userPart(part)
				if err != nil {
					return u, fmt.Errorf("part %d: %w", j, err)
				}
				parts = append(parts, cp)
			}
			if len(parts) == 0 {
				p.Content.OfString = oai.String("")
			} else {
				p.Content.OfArrayOfContentParts = parts
			}
		}
		if msg.Name != "" {
			p.Name = oai.String(msg.Name)
		}
		u.OfUser = p

	case model.RoleAssistant:
		text, err := assistantText(msg.Content)
		if err != nil {
			return u, err
		}
		p := &oai.ChatCompletionAssistantMessageParam{}
		if text != "" || len(msg.ToolCalls) == 0 {
			p.Content.OfString = oai.String(text)
		}
		for _, tc := range msg.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return u, fmt.Errorf("tool call %q (ID %q) needs both an ID and a name", tc.Name, tc.ID)
			}
			args := string(tc.Arguments)
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			p.ToolCalls = append(p.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
				},
			})
		}
		if msg.Name != "" {
			p.Name = oai.String(msg.Name)
		}
		u.OfAssistant = p

	case model.RoleTool:
		u, _, err := toolMessage(msg, nil)
		return u, err

	default:
		return u, fmt.Errorf("unknown role %q", msg.Role)
	}
	return u, nil
}

// onlyText returns the text of parts that are one text part, provider
// parts aside.
func onlyText(parts []model.Part) (string, bool) {
	var (
		text string
		n    int
	)
	for _, p := range parts {
		switch p.Type {
		case model.PartProvider:
		case model.PartText:
			text = p.Text
			n++
		default:
			return "", false
		}
	}
	return text, n == 1
}

// partText returns the text a text or JSON part carries.
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

// assistantText joins the text of an assistant message's parts, refusing
// parts that are not text. Reasoning parts are left out: the servers that
// send reasoning do not take it back. So are provider parts
// (model.PartProvider), which belong to other providers.
func assistantText(parts []model.Part) (string, error) {
	var b strings.Builder
	for j, p := range parts {
		if p.IsReasoning() || p.Type == model.PartProvider {
			continue
		}
		text, ok := partText(p)
		if !ok {
			return "", fmt.Errorf("part %d: %s content is not supported for this role", j, p.Type)
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

func userPart(p model.Part) (oai.ChatCompletionContentPartUnionParam, error) {
	var u oai.ChatCompletionContentPartUnionParam
	if text, ok := partText(p); ok {
		u.OfText = &oai.ChatCompletionContentPartTextParam{Text: text}
		return u, nil
	}
	if p.Type != model.PartImage {
		return u, fmt.Errorf("unknown part type %q", p.Type)
	}
	url := p.URL
	if len(p.Data) > 0 {
		if p.MIMEType == "" {
			return u, errors.New("inline image has no MIME type")
		}
		url = "data:" + p.MIMEType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
	}
	if url == "" {
		return u, errors.New("image has neither data nor a URL")
	}
	u.OfImageURL = &oai.ChatCompletionContentPartImageParam{
		ImageURL: oai.ChatCompletionContentPartImageImageURLParam{URL: url},
	}
	return u, nil
}

func tool(td model.ToolDefinition) (oai.ChatCompletionToolUnionParam, error) {
	var u oai.ChatCompletionToolUnionParam
	if td.Name == "" {
		return u, errors.New("openai: tool definition has no name")
	}
	params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	if len(bytes.TrimSpace(td.InputSchema)) > 0 {
		// Keep every keyword's value as raw JSON so that numbers and key
		// order inside it survive unchanged.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(td.InputSchema, &fields); err != nil || fields == nil {
			return u, fmt.Errorf("openai: tool %q: input schema is not a JSON object", td.Name)
		}
		params = make(shared.FunctionParameters, len(fields))
		for k, v := range fields {
			params[k] = v
		}
	}
	fn := shared.FunctionDefinitionParam{Name: td.Name, Parameters: params}
	if td.Description != "" {
		fn.Description = oai.String(td.Description)
	}
	u.OfFunction = &oai.ChatCompletionFunctionToolParam{Function: fn}
	return u, nil
}

func toolChoice(tc model.ToolChoice) (oai.ChatCompletionToolChoiceOptionUnionParam, error) {
	var u oai.ChatCompletionToolChoiceOptionUnionParam
	switch tc.Mode {
	case model.ToolChoiceAuto:
	case model.ToolChoiceNone:
		u.OfAuto = oai.String("none")
	case model.ToolChoiceRequired:
		u.OfAuto = oai.String("required")
	case model.ToolChoiceTool:
		if tc.Name == "" {
			return u, errors.New("openai: tool choice names no tool")
		}
		u.OfFunctionToolChoice = &oai.ChatCompletionNamedToolChoiceParam{
			Function: oai.ChatCompletionNamedToolChoiceFunctionParam{Name: tc.Name},
		}
	default:
		return u, fmt.Errorf("openai: unknown tool choice mode %q", tc.Mode)
	}
	return u, nil
}
