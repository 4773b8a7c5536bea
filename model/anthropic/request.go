package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/trellis-go/trellis/model"
)

// params maps a request to the Messages API parameters.
func (m *Model) params(req *model.Request) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	if req == nil {
		return p, errors.New("anthropic: nil request")
	}
	p.Model = m.name
	if req.Model != "" {
		p.Model = req.Model
	}
	system, msgs, err := messages(req.Messages)
	if err != nil {
		return p, err
	}
	p.System, p.Messages = system, msgs

	for _, td := range req.Tools {
		t, err := tool(td)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: t})
	}
	if err := m.addServerTools(&p, req.Tools); err != nil {
		return p, err
	}
	if p.ToolChoice, err = toolChoice(req.ToolChoice); err != nil {
		return p, err
	}
	if err := req.ToolChoice.Check(req.Tools); err != nil {
		return p, fmt.Errorf("anthropic: %w", err)
	}
	if len(p.Tools) == 0 && req.ToolChoice.Mode == model.ToolChoiceNone {
		// The API refuses a tool choice without tools, and with no tools
		// none is what the model gets anyway.
		p.ToolChoice = sdk.ToolChoiceUnionParam{}
	}
	if rf := req.ResponseFormat; rf != nil {
		schema, err := objectFields(rf.Schema)
		if err != nil {
			return p, fmt.Errorf("anthropic: response format schema: %w", err)
		}
		p.OutputConfig.Format = sdk.JSONOutputFormatParam{Schema: schema}
	}

	defaults := m.settings
	if req.Settings.Temperature != nil || req.Settings.TopP != nil {
		// Temperature and top_p are one choice of how to sample, and
		// recent models refuse both at once: a request that makes the
		// choice does not inherit the other half from the defaults.
		defaults.Temperature, defaults.TopP = nil, nil
	}
	s := defaults.Override(req.Settings)
	switch {
	case s.MaxTokens < 0:
		return p, fmt.Errorf("anthropic: negative max tokens %d", s.MaxTokens)
	case s.MaxTokens == 0:
		p.MaxTokens = DefaultMaxTokens
	default:
		p.MaxTokens = int64(s.MaxTokens)
	}
	if s.Temperature != nil {
		p.Temperature = sdk.Float(*s.Temperature)
	}
	if s.TopP != nil {
		p.TopP = sdk.Float(*s.TopP)
	}
	p.Thinking = m.thinking
	if b := m.thinking.OfEnabled; b != nil && b.BudgetTokens >= p.MaxTokens {
		return p, fmt.Errorf("anthropic: the thinking budget of %d tokens is not less than max_tokens %d, which it counts against; raise max_tokens (WithMaxTokens or Settings.MaxTokens)", b.BudgetTokens, p.MaxTokens)
	}
	if m.thinking.OfEnabled != nil {
		// The API refuses these with manual extended thinking; say so
		// before sending. (Adaptive thinking is left to the API, which
		// takes a forced tool choice with it.)
		switch {
		case s.Temperature != nil && *s.Temperature != 1:
			return p, fmt.Errorf("anthropic: temperature %v cannot be set with extended thinking; leave it unset (or 1)", *s.Temperature)
		case s.TopP != nil && (*s.TopP < 0.95 || *s.TopP > 1):
			return p, fmt.Errorf("anthropic: top_p %v cannot be used with extended thinking, which takes values from 0.95 to 1", *s.TopP)
		case req.ToolChoice.Mode == model.ToolChoiceRequired || req.ToolChoice.Mode == model.ToolChoiceTool:
			return p, fmt.Errorf("anthropic: a tool choice that forces a tool call (%s) cannot be used with extended thinking; use auto or none", req.ToolChoice.Mode)
		}
	}
	for _, stop := range s.Stop {
		if stop != "" { // the API refuses empty stop sequences
			p.StopSequences = append(p.StopSequences, stop)
		}
	}
	// The Messages API has no seed; Settings.Seed is ignored.
	return p, nil
}

// messages maps a conversation to the system prompt and the turns of the
// Messages API. System messages, wherever they are, join the system prompt
// in order. Tool messages become tool_result blocks of a user turn. Messages
// of one role that end up next to each other (consecutive tool messages, a
// user message next to tool messages, messages that only a system message
// or an empty message separated) share one turn, and in a user turn the
// tool_result blocks come before the rest, as the API requires after a turn
// with tool_use blocks.
func messages(in []model.Message) ([]sdk.TextBlockParam, []sdk.MessageParam, error) {
	var system []sdk.TextBlockParam
	out := make([]sdk.MessageParam, 0, len(in))
	// add appends blocks to the conversation, to its last turn when that
	// turn has the same role.
	add := func(role sdk.MessageParamRole, blocks []sdk.ContentBlockParamUnion) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, sdk.MessageParam{Role: role, Content: blocks})
	}
	for i, msg := range in {
		switch msg.Role {
		case model.RoleSystem:
			for j, part := range msg.Content {
				if part.Type == model.PartProvider {
					continue // the system prompt takes only text
				}
				text, ok := partText(part)
				if !ok {
					return nil, nil, fmt.Errorf("anthropic: message %d (system): part %d: %s content is not supported", i, j, part.Type)
				}
				if !blank(text) {
					system = append(system, sdk.TextBlockParam{Text: text})
				}
			}

		case model.RoleUser:
			blocks, err := contentBlocks(msg.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("anthropic: message %d (user): %w", i, err)
			}
			add(sdk.MessageParamRoleUser, blocks)

		case model.RoleAssistant:
			// Thinking comes first in the turn, as the model wrote it, then
			// the blocks of server tools, the text and the tool calls —
			// unless the reply recorded another order (MetaBlocks).
			blocks := thinkingBlocks(msg.Content)
			if ordered, ok := orderedBlocks(&msg, blocks); ok {
				add(sdk.MessageParamRoleAssistant, ordered)
				continue
			}
			for j, part := range msg.Content {
				if ours(part) {
					b, err := rawBlock(part)
					if err != nil {
						return nil, nil, fmt.Errorf("anthropic: message %d (assistant): part %d: %w", i, j, err)
					}
					blocks = append(blocks, b)
				}
			}
			for j, part := range msg.Content {
				if part.IsReasoning() || part.Type == model.PartProvider {
					continue
				}
				text, ok := partText(part)
				if !ok {
					return nil, nil, fmt.Errorf("anthropic: message %d (assistant): part %d: %s content is not supported", i, j, part.Type)
				}
				if !blank(text) {
					blocks = append(blocks, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: text}})
				}
			}
			for _, tc := range msg.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, nil, fmt.Errorf("anthropic: message %d (assistant): tool call %q (ID %q) needs both an ID and a name", i, tc.Name, tc.ID)
				}
				blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolUse: &sdk.ToolUseBlockParam{
					ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments),
				}})
			}
			// An assistant message without content is rejected by the API
			// and says nothing; it is left out.
			add(sdk.MessageParamRoleAssistant, blocks)

		case model.RoleTool:
			if msg.ToolCallID == "" {
				return nil, nil, fmt.Errorf("anthropic: message %d (tool): no tool call ID", i)
			}
			res := &sdk.ToolResultBlockParam{ToolUseID: msg.ToolCallID}
			if msg.IsError {
				res.IsError = sdk.Bool(true)
			}
			blocks, err := contentBlocks(msg.Content)
			if err != nil {
				return nil, nil, fmt.Errorf("anthropic: message %d (tool): %w", i, err)
			}
			for _, b := range blocks {
				if raw, ok := rawOf(b); ok {
					res.Content = append(res.Content, param.Override[sdk.ToolResultBlockParamContentUnion](raw))
					continue
				}
				res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfText: b.OfText, OfImage: b.OfImage})
			}
			block := sdk.ContentBlockParamUnion{OfToolResult: res}
			if n := len(out); n > 0 && out[n-1].Role == sdk.MessageParamRoleUser {
				// After the turn's other tool results, before its other content.
				last := &out[n-1]
				at := 0
				for at < len(last.Content) && last.Content[at].OfToolResult != nil {
					at++
				}
				last.Content = slices.Insert(last.Content, at, block)
			} else {
				out = append(out, sdk.MessageParam{Role: sdk.MessageParamRoleUser, Content: []sdk.ContentBlockParamUnion{block}})
			}

		default:
			return nil, nil, fmt.Errorf("anthropic: message %d: unknown role %q", i, msg.Role)
		}
	}
	return system, out, nil
}

// thinkingBlocks maps the reasoning parts of an assistant message to
// thinking and redacted_thinking blocks. Parts without data are left out:
// the API takes back only the thinking it signed, so reasoning that came
// from another provider, or that a model showed without a signature, cannot
// be returned to it.
func thinkingBlocks(parts []model.Part) []sdk.ContentBlockParamUnion {
	var out []sdk.ContentBlockParamUnion
	for _, p := range parts {
		if len(p.Data) == 0 {
			continue
		}
		switch p.Type {
		case model.PartReasoning:
			out = append(out, sdk.NewThinkingBlock(string(p.Data), p.Text))
		case model.PartRedactedReasoning:
			out = append(out, sdk.NewRedactedThinkingBlock(string(p.Data)))
		}
	}
	return out
}

// blank reports whether text is empty or only whitespace: the API rejects
// text blocks that hold no other characters.
func blank(text string) bool { return strings.TrimSpace(text) == "" }

// toolInput returns a call's arguments as the JSON object the API requires.
// Arguments that are not a JSON object (a model can produce broken JSON)
// are sent as an empty object, so that the conversation, whose tool result
// reports the problem, stays acceptable to the API.
func toolInput(args json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return json.RawMessage("{}")
	}
	return trimmed
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

// contentBlocks maps parts to text and image blocks, leaving out text that
// is empty or only whitespace, which the API rejects. Provider parts of
// this package are sent as the blocks they hold; other providers' are left
// out.
func contentBlocks(parts []model.Part) ([]sdk.ContentBlockParamUnion, error) {
	var out []sdk.ContentBlockParamUnion
	for j, part := range parts {
		if part.Type == model.PartProvider {
			if !ours(part) {
				continue
			}
			b, err := rawBlock(part)
			if err != nil {
				return nil, fmt.Errorf("part %d: %w", j, err)
			}
			out = append(out, b)
			continue
		}
		if text, ok := partText(part); ok {
			if !blank(text) {
				out = append(out, sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: text}})
			}
			continue
		}
		if part.Type != model.PartImage {
			return nil, fmt.Errorf("part %d: unknown part type %q", j, part.Type)
		}
		img := &sdk.ImageBlockParam{}
		switch {
		case len(part.Data) > 0:
			if part.MIMEType == "" {
				return nil, fmt.Errorf("part %d: inline image has no MIME type", j)
			}
			img.Source.OfBase64 = &sdk.Base64ImageSourceParam{
				Data:      base64.StdEncoding.EncodeToString(part.Data),
				MediaType: sdk.Base64ImageSourceMediaType(mediaType(part.MIMEType)),
			}
		case part.URL != "":
			img.Source.OfURL = &sdk.URLImageSourceParam{URL: part.URL}
		default:
			return nil, fmt.Errorf("part %d: image has neither data nor a URL", j)
		}
		out = append(out, sdk.ContentBlockParamUnion{OfImage: img})
	}
	return out, nil
}

// mediaType returns a MIME type in the form the API expects: lower case,
// without parameters, and image/jpeg for the common alias image/jpg. The
// API judges the type itself.
func mediaType(mime string) string {
	t, _, _ := strings.Cut(mime, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	if t == "image/jpg" || t == "image/pjpeg" {
		return "image/jpeg"
	}
	return t
}

// objectFields decodes a JSON object keeping each value as raw JSON, so that
// numbers and nested key order survive unchanged.
func objectFields(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("empty schema")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, errors.New("not a JSON object")
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		out[k] = v
	}
	return out, nil
}

func tool(td model.ToolDefinition) (*sdk.ToolParam, error) {
	if td.Name == "" {
		return nil, errors.New("anthropic: tool definition has no name")
	}
	t := &sdk.ToolParam{Name: td.Name}
	if td.Description != "" {
		t.Description = sdk.String(td.Description)
	}
	if len(bytes.TrimSpace(td.InputSchema)) == 0 {
		t.InputSchema.Properties = map[string]any{}
		return t, nil
	}
	fields, err := objectFields(td.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("anthropic: tool %q: input schema is %w", td.Name, err)
	}
	for k, v := range fields {
		raw := v.(json.RawMessage)
		switch k {
		case "type":
			var typ string
			if json.Unmarshal(raw, &typ) != nil || typ != "object" {
				return nil, fmt.Errorf("anthropic: tool %q: input schema type is %s, want \"object\"", td.Name, strings.TrimSpace(string(raw)))
			}
		case "properties":
			t.InputSchema.Properties = raw
		case "required":
			if err := json.Unmarshal(raw, &t.InputSchema.Required); err != nil {
				return nil, fmt.Errorf("anthropic: tool %q: input schema \"required\" is not a list of names", td.Name)
			}
		default:
			if t.InputSchema.ExtraFields == nil {
				t.InputSchema.ExtraFields = map[string]any{}
			}
			t.InputSchema.ExtraFields[k] = raw
		}
	}
	if t.InputSchema.Properties == nil {
		t.InputSchema.Properties = map[string]any{}
	}
	return t, nil
}

func toolChoice(tc model.ToolChoice) (sdk.ToolChoiceUnionParam, error) {
	var u sdk.ToolChoiceUnionParam
	switch tc.Mode {
	case model.ToolChoiceAuto:
	case model.ToolChoiceNone:
		u.OfNone = &sdk.ToolChoiceNoneParam{}
	case model.ToolChoiceRequired:
		u.OfAny = &sdk.ToolChoiceAnyParam{}
	case model.ToolChoiceTool:
		if tc.Name == "" {
			return u, errors.New("anthropic: tool choice names no tool")
		}
		u.OfTool = &sdk.ToolChoiceToolParam{Name: tc.Name}
	default:
		return u, fmt.Errorf("anthropic: unknown tool choice mode %q", tc.Mode)
	}
	return u, nil
}
