package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// resourceLink is the JSON part a resource link becomes.
type resourceLink struct {
	Type        string `json:"type"`
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

// Parts converts MCP content into Trellis content parts, in order:
//
//   - text becomes a text part;
//   - an image becomes an image part with its MIME type;
//   - audio becomes an audio part (model.PartAudio);
//   - an embedded resource becomes a resource part (model.PartResource)
//     with its URI, MIME type and text or bytes;
//   - a resource link becomes a JSON part
//     {"type":"resource_link","uri":...,"name":...,"mime_type":...};
//   - anything else becomes a JSON part holding its MCP form.
//
// Content converts each kind back, so content that passes through Trellis
// keeps its kind.
func Parts(contents []sdk.Content) []model.Part {
	parts := make([]model.Part, 0, len(contents))
	for _, c := range contents {
		if p, ok := part(c); ok {
			parts = append(parts, p)
		}
	}
	return parts
}

func part(c sdk.Content) (model.Part, bool) {
	if v := reflect.ValueOf(c); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return model.Part{}, false
	}
	switch c := c.(type) {
	case *sdk.TextContent:
		return model.TextPart(c.Text), true
	case *sdk.ImageContent:
		return model.ImagePart(c.MIMEType, c.Data), true
	case *sdk.ResourceLink:
		return jsonPart(resourceLink{Type: "resource_link", URI: c.URI, Name: c.Name, Title: c.Title,
			Description: c.Description, MIMEType: c.MIMEType, Size: c.Size}), true
	case *sdk.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil:
			return model.Part{}, false
		case r.Blob == nil:
			return model.TextResourcePart(r.URI, r.MIMEType, r.Text), true
		default:
			return model.BlobResourcePart(r.URI, r.MIMEType, r.Blob), true
		}
	case *sdk.AudioContent:
		return model.AudioPart(c.MIMEType, c.Data), true
	default:
		raw, err := c.MarshalJSON()
		if err != nil {
			return model.Part{}, false
		}
		return model.JSONPart(raw), true
	}
}

func jsonPart(v any) model.Part {
	raw, err := json.Marshal(v)
	if err != nil {
		return model.TextPart(err.Error())
	}
	return model.JSONPart(raw)
}

// Result converts an MCP tool result into a Trellis result. The content
// becomes parts as Parts describes. Structured content becomes a JSON part:
// it takes the place of the text block that carries the same JSON value
// (servers send one for older clients), as that block's JSON, compacted,
// whose numbers are exactly as the server wrote them; or it is appended when
// there is none. Either way the model sees the value once. A result with isError becomes an error result
// (status failed, code tool.CodeToolError) whose Err is a *ToolError holding
// the tool's text; server and toolName name the tool in it. The result's
// _meta becomes the result's Metadata (see MetadataFromMeta).
func Result(server, toolName string, res *sdk.CallToolResult) tool.Result {
	if res == nil {
		return tool.Result{Status: tool.StatusSuccess}
	}
	parts := Parts(res.Content)
	if res.StructuredContent != nil {
		if raw, err := marshalStructured(res.StructuredContent); err == nil && !bytes.Equal(raw, []byte("null")) {
			parts = placeStructured(parts, raw)
		}
	}
	r := tool.Result{Content: parts, Status: tool.StatusSuccess, Metadata: MetadataFromMeta(res.Meta)}
	if res.IsError {
		msg := tool.Result{Content: parts}.Text()
		if msg == "" {
			msg = "the tool reported an error"
			r.Content = append(r.Content, model.TextPart(msg))
		}
		r.IsError = true
		r.Status = tool.StatusFailed
		r.ErrorCode = tool.CodeToolError
		r.Err = &ToolError{Server: server, Tool: toolName, Message: msg}
	}
	return r
}

// marshalStructured returns the JSON of a structured value, without the
// HTML escaping of encoding/json, which the model has no use for.
func marshalStructured(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// placeStructured puts the structured value raw into parts: in place of the
// first text part holding the same JSON value, as that part's JSON
// (compacted, its numbers and strings as written), or at the end. Values are compared as decoded, so that a text written
// differently (spacing, escapes, 20.0 for 20, integers too large for the
// float64 the client decoded the structured value into) still matches.
func placeStructured(parts []model.Part, raw json.RawMessage) []model.Part {
	var want any
	if err := json.Unmarshal(raw, &want); err != nil {
		return append(parts, model.JSONPart(raw))
	}
	for i, p := range parts {
		if p.Type != model.PartText {
			continue
		}
		var got any
		if json.Unmarshal([]byte(p.Text), &got) != nil || !reflect.DeepEqual(got, want) {
			continue
		}
		var compact bytes.Buffer
		if json.Compact(&compact, []byte(p.Text)) != nil {
			continue
		}
		parts[i] = model.JSONPart(compact.Bytes())
		return parts
	}
	return append(parts, model.JSONPart(raw))
}

// Content converts Trellis content parts into MCP content: text parts become
// text, inline images become images, images by URL become resource links,
// audio parts become audio, resource parts become embedded resources, and
// JSON parts become text holding the JSON.
func Content(parts []model.Part) []sdk.Content {
	out := make([]sdk.Content, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case model.PartImage:
			if len(p.Data) > 0 {
				out = append(out, &sdk.ImageContent{Data: p.Data, MIMEType: p.MIMEType})
			} else if p.URL != "" {
				out = append(out, &sdk.ResourceLink{URI: p.URL, Name: "image", MIMEType: p.MIMEType})
			}
		case model.PartJSON:
			out = append(out, &sdk.TextContent{Text: string(p.JSON)})
		case model.PartAudio:
			out = append(out, &sdk.AudioContent{Data: p.Data, MIMEType: p.MIMEType})
		case model.PartResource:
			r := &sdk.ResourceContents{URI: p.URL, MIMEType: p.MIMEType, Text: p.Text}
			if p.Data != nil {
				r.Text, r.Blob = "", p.Data
			}
			out = append(out, &sdk.EmbeddedResource{Resource: r})
		default:
			out = append(out, &sdk.TextContent{Text: p.Text})
		}
	}
	return out
}

// CallToolResult converts a Trellis result into an MCP tool result: the
// content as Content describes, the only JSON part (when there is exactly
// one) also as structured content, IsError from the result's error flag,
// and the result's Metadata as _meta, but for the framework's own keys
// (those that start with "trellis."), which stay in-process, and keys the
// protocol keeps for itself (see MetadataFromMeta).
func CallToolResult(r tool.Result) *sdk.CallToolResult {
	res := &sdk.CallToolResult{Content: Content(r.Content), IsError: r.IsError}
	for k, v := range r.Metadata {
		if strings.HasPrefix(k, frameworkPrefix) || protocolKey(k) {
			continue
		}
		if res.Meta == nil {
			res.Meta = sdk.Meta{}
		}
		res.Meta[k] = v
	}
	var structured json.RawMessage
	n := 0
	for _, p := range r.Content {
		if p.Type == model.PartJSON {
			n++
			structured = p.JSON
		}
	}
	if n == 1 && json.Valid(structured) {
		res.StructuredContent = structured
	}
	return res
}

// frameworkPrefix starts the metadata keys that are Trellis's own.
const frameworkPrefix = "trellis."

// MetadataFromMeta converts the _meta of an MCP result into a Trellis
// result's Metadata: string values as they are, other values as compact
// JSON (as the client decoded them: an integer beyond 2^53 has lost
// precision). Keys that start with "trellis." are left out, so that no server can
// set what the framework records in a tool message's metadata, and so are
// the keys the protocol reserves for itself (a prefix with a
// "modelcontextprotocol" or "mcp" label, such as
// "io.modelcontextprotocol/serverInfo"). nil when nothing is left.
func MetadataFromMeta(meta sdk.Meta) map[string]string {
	var out map[string]string
	for k, v := range meta {
		if strings.HasPrefix(k, frameworkPrefix) || protocolKey(k) {
			continue
		}
		s, ok := v.(string)
		if !ok {
			raw, err := marshalStructured(v)
			if err != nil {
				continue
			}
			s = string(raw)
		}
		if out == nil {
			out = make(map[string]string, len(meta))
		}
		out[k] = s
	}
	return out
}

// protocolKey reports whether the _meta key k belongs to the protocol: its
// prefix (before "/") has a label "modelcontextprotocol" or "mcp", as in
// the prefixes the specification reserves ("modelcontextprotocol.io/",
// "tools.mcp.com/") and in the reverse-domain ones SDKs use
// ("io.modelcontextprotocol/").
func protocolKey(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	if !ok {
		return false
	}
	for l := range strings.SplitSeq(prefix, ".") {
		if l == "modelcontextprotocol" || l == "mcp" {
			return true
		}
	}
	return false
}
