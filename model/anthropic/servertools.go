package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/trellis-go/trellis/model"
)

// ContentBlockMIMEType is the MIMEType of the provider parts
// (model.PartProvider) this package keeps: the JSON of such a part is one
// content block of the Messages API, as the API sent it. Replies keep their
// server tool calls and results (server_tool_use, web_search_tool_result,
// web_fetch_tool_result, code execution results, and any other block that
// is not text, thinking or a tool_use) this way, and the model sends them
// back as they came. A provider part of this type in a user or tool
// message is sent as the block it holds, too.
const ContentBlockMIMEType = "application/vnd.anthropic.content-block+json"

// WithServerTools offers tools that Anthropic runs itself (web search, web
// fetch, code execution; see WebSearch) in every request, after the
// function tools the request carries. The model calls them and reads their
// results within one reply, so their calls are never tool calls of the
// reply (model.Message.ToolCalls) for the application to run: they and
// their results are kept in the reply as provider parts (see
// ContentBlockMIMEType), in their place among its text and tool calls, and
// sent back with it.
//
// Each tool must be exactly one variant of the union, other than OfTool:
// function tools come with the request. Two server tools may not share a
// name, and a request whose function tool has the name of a server tool
// fails, naming both. Anthropic-defined tools that the client runs (bash,
// text editor, memory) may be given too: their calls come back as ordinary
// tool calls, for a tool of the same name to answer. Some server tools
// need an anthropic-beta header (WithHeader). Several WithServerTools add
// up.
func WithServerTools(tools ...sdk.ToolUnionParam) Option {
	return func(c *config) {
		for i, t := range tools {
			name, typ, err := serverTool(t)
			if err != nil {
				c.errs = append(c.errs, fmt.Errorf("WithServerTools: tool %d: %w", i, err))
				continue
			}
			if name != "" && slices.ContainsFunc(c.serverTools, func(u sdk.ToolUnionParam) bool { return nameOf(u) == name }) {
				c.errs = append(c.errs, fmt.Errorf("WithServerTools: tool %d (%s): another server tool is named %q", i, typ, name))
				continue
			}
			c.serverTools = append(c.serverTools, t)
		}
	}
}

// WebSearch returns Anthropic's web search tool (web_search_20250305,
// named "web_search") for WithServerTools. A maxUses above zero limits the
// searches of one request; allowedDomains, when given, are the only
// domains whose pages the results include.
func WebSearch(maxUses int, allowedDomains ...string) sdk.ToolUnionParam {
	t := &sdk.WebSearchTool20250305Param{AllowedDomains: slices.Clone(allowedDomains)}
	if maxUses > 0 {
		t.MaxUses = sdk.Int(int64(maxUses))
	}
	return sdk.ToolUnionParam{OfWebSearchTool20250305: t}
}

// serverTool checks a tool given to WithServerTools and returns its name
// (empty for a toolset, which has none) and type.
func serverTool(t sdk.ToolUnionParam) (name, typ string, err error) {
	if t.OfTool != nil {
		return "", "", errors.New("a function tool (OfTool): offer it with the request's tools instead")
	}
	p := t.GetType()
	if p == nil {
		return "", "", errors.New("no tool: the union has no variant set")
	}
	if _, err := json.Marshal(t); err != nil {
		return "", "", fmt.Errorf("%s: cannot be encoded (more than one variant set?): %w", *p, err)
	}
	return nameOf(t), *p, nil
}

// nameOf returns the name a tool is called by, empty when it has none.
func nameOf(t sdk.ToolUnionParam) string {
	if p := t.GetName(); p != nil {
		return *p
	}
	return ""
}

// typeOf returns a tool's type, empty when it has none.
func typeOf(t sdk.ToolUnionParam) string {
	if p := t.GetType(); p != nil {
		return *p
	}
	return ""
}

// addServerTools appends the model's server tools to p's tools, refusing a
// request whose function tool has a server tool's name.
func (m *Model) addServerTools(p *sdk.MessageNewParams, tools []model.ToolDefinition) error {
	for _, st := range m.serverTools {
		if name := nameOf(st); name != "" {
			for _, td := range tools {
				if td.Name == name {
					return fmt.Errorf("anthropic: server tool %q (%s) has the name of the request's function tool %q; rename the function tool", name, typeOf(st), td.Name)
				}
			}
		}
		p.Tools = append(p.Tools, st)
	}
	return nil
}

// providerPart returns the provider part that keeps a reply's block of
// type typ, raw its JSON, with input, when not nil, as its "input" (a server_tool_use
// block streams its input apart from the block). The block is re-encoded
// in one canonical form — object keys sorted, no insignificant space,
// strings escaped only where JSON requires it, numbers as they were
// written — so that a streamed block and the same block of a whole reply
// give the same part. It returns false for a block that is not a JSON
// object of type typ.
func providerPart(raw, typ string, input json.RawMessage) (model.Part, bool) {
	var fields map[string]any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&fields) != nil || fields == nil {
		return model.Part{}, false
	}
	if t, _ := fields["type"].(string); t == "" || t != typ {
		return model.Part{}, false // not a block, or not the one the SDK read
	}
	if input != nil {
		var in any
		dec := json.NewDecoder(bytes.NewReader(input))
		dec.UseNumber()
		if dec.Decode(&in) != nil {
			return model.Part{}, false
		}
		fields["input"] = in
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(fields) != nil {
		return model.Part{}, false
	}
	return model.ProviderPart(ContentBlockMIMEType, bytes.TrimSuffix(b.Bytes(), []byte("\n"))), true
}

// ours reports whether p is a provider part of this package.
func ours(p model.Part) bool {
	return p.Type == model.PartProvider && p.MIMEType == ContentBlockMIMEType
}

// rawBlock returns the content block a provider part of this package holds,
// to be sent as it is.
func rawBlock(p model.Part) (sdk.ContentBlockParamUnion, error) {
	trimmed := bytes.TrimSpace(p.JSON)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return sdk.ContentBlockParamUnion{}, errors.New("the provider part's block is not a JSON object")
	}
	return param.Override[sdk.ContentBlockParamUnion](json.RawMessage(trimmed)), nil
}

// rawOf returns the JSON of a block made by rawBlock, and false for any
// other block.
func rawOf(b sdk.ContentBlockParamUnion) (json.RawMessage, bool) {
	v, ok := b.Overrides()
	if !ok {
		return nil, false
	}
	raw, ok := v.(json.RawMessage)
	return raw, ok
}
