package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// ResourceInfo describes a resource a server offers (resources/list).
type ResourceInfo struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
	// Size is the size in bytes, when the server says.
	Size int64 `json:"size,omitempty"`
}

// ResourceTemplateInfo describes a family of resources a server offers
// (resources/templates/list), named by an RFC 6570 URI template.
type ResourceTemplateInfo struct {
	URITemplate string `json:"uri_template"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mime_type,omitempty"`
}

// PromptInfo describes a prompt a server offers (prompts/list).
type PromptInfo struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// ErrNotOffered: the server does not offer what was asked of it (it
// declares no resources or no prompts capability).
var ErrNotOffered = errors.New("mcp: the server does not offer this")

// capable runs fn on the toolset's session after checking, with has, that
// the server declared the capability it needs.
func (ts *Toolset) capable(ctx context.Context, method, what string, has func(*sdk.ServerCapabilities) bool, fn func(context.Context, *sdk.ClientSession) error) error {
	return ts.do(ctx, method, func(ctx context.Context, s *session) error {
		if ir := s.cs.InitializeResult(); ir == nil || ir.Capabilities == nil || !has(ir.Capabilities) {
			return fmt.Errorf("%w: no %s", ErrNotOffered, what)
		}
		return fn(ctx, s.cs)
	})
}

func hasResources(c *sdk.ServerCapabilities) bool { return c.Resources != nil }
func hasPrompts(c *sdk.ServerCapabilities) bool   { return c.Prompts != nil }

// Resources lists the server's resources, every page of them. A server
// without resources gives an error matching ErrNotOffered.
func (ts *Toolset) Resources(ctx context.Context) ([]ResourceInfo, error) {
	var out []ResourceInfo
	err := ts.capable(ctx, "list resources", "resources", hasResources, func(ctx context.Context, cs *sdk.ClientSession) error {
		out = []ResourceInfo{}
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, ResourceInfo{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size})
		}
		return nil
	})
	return out, err
}

// ResourceTemplates lists the server's resource templates, every page of
// them.
func (ts *Toolset) ResourceTemplates(ctx context.Context) ([]ResourceTemplateInfo, error) {
	var out []ResourceTemplateInfo
	err := ts.capable(ctx, "list resource templates", "resources", hasResources, func(ctx context.Context, cs *sdk.ClientSession) error {
		out = []ResourceTemplateInfo{}
		for r, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, ResourceTemplateInfo{URITemplate: r.URITemplate, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType})
		}
		return nil
	})
	return out, err
}

// ReadResource reads the resource uri (a listed one, or one a template
// names) and returns its contents as resource parts (model.PartResource:
// the URI in URL, MIMEType, Text or Data), which keep their kind through
// Trellis; a model is given a text resource's text.
func (ts *Toolset) ReadResource(ctx context.Context, uri string) ([]model.Part, error) {
	var out []model.Part
	err := ts.capable(ctx, "read resource "+uri, "resources", hasResources, func(ctx context.Context, cs *sdk.ClientSession) error {
		res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		if err != nil {
			return err
		}
		out = resourceParts(res.Contents)
		return nil
	})
	return out, err
}

// resourceParts converts resource contents into resource parts.
func resourceParts(contents []*sdk.ResourceContents) []model.Part {
	out := make([]model.Part, 0, len(contents))
	for _, c := range contents {
		if c == nil {
			continue
		}
		if c.Blob != nil {
			out = append(out, model.BlobResourcePart(c.URI, c.MIMEType, c.Blob))
		} else {
			out = append(out, model.TextResourcePart(c.URI, c.MIMEType, c.Text))
		}
	}
	return out
}

// ResourceMessage reads the resources uris and returns a user message
// holding them, to attach to a conversation as context (a file the user
// picked, say). It fails on the first resource that cannot be read.
func (ts *Toolset) ResourceMessage(ctx context.Context, uris ...string) (model.Message, error) {
	msg := model.Message{Role: model.RoleUser}
	for _, u := range uris {
		parts, err := ts.ReadResource(ctx, u)
		if err != nil {
			return model.Message{}, err
		}
		msg.Content = append(msg.Content, parts...)
	}
	return msg, nil
}

// Prompts lists the server's prompts, every page of them. A server without
// prompts gives an error matching ErrNotOffered.
func (ts *Toolset) Prompts(ctx context.Context) ([]PromptInfo, error) {
	var out []PromptInfo
	err := ts.capable(ctx, "list prompts", "prompts", hasPrompts, func(ctx context.Context, cs *sdk.ClientSession) error {
		out = []PromptInfo{}
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return err
			}
			pi := PromptInfo{Name: p.Name, Title: p.Title, Description: p.Description}
			for _, a := range p.Arguments {
				if a != nil {
					pi.Arguments = append(pi.Arguments, PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
				}
			}
			out = append(out, pi)
		}
		return nil
	})
	return out, err
}

// GetPrompt fills in the prompt name with args (prompts/get) and returns
// its messages: each MCP prompt message becomes a message of its role, its
// content a part (see Result for the kinds).
func (ts *Toolset) GetPrompt(ctx context.Context, name string, args map[string]string) ([]model.Message, error) {
	var out []model.Message
	err := ts.capable(ctx, "get prompt "+name, "prompts", hasPrompts, func(ctx context.Context, cs *sdk.ClientSession) error {
		res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
		if err != nil {
			return err
		}
		out = make([]model.Message, 0, len(res.Messages))
		for _, m := range res.Messages {
			if m == nil {
				continue
			}
			role := model.RoleUser
			if m.Role == "assistant" {
				role = model.RoleAssistant
			}
			out = append(out, model.Message{Role: role, Content: Parts([]sdk.Content{m.Content})})
		}
		return nil
	})
	return out, err
}

// PromptInstructions fills in the prompt name with args and returns its
// messages' text, in order, one paragraph each (other parts as their
// TextFallback): instructions for a model, to pass to tool.AddInstructions
// for one run or to an agent's system prompt.
func (ts *Toolset) PromptInstructions(ctx context.Context, name string, args map[string]string) (string, error) {
	msgs, err := ts.GetPrompt(ctx, name, args)
	if err != nil {
		return "", err
	}
	var paras []string
	for _, m := range msgs {
		for _, p := range m.Content {
			text := p.Text
			if p.Type != model.PartText {
				text = p.TextFallback()
			}
			if text = strings.TrimSpace(text); text != "" {
				paras = append(paras, text)
			}
		}
	}
	return strings.Join(paras, "\n\n"), nil
}

// The names of the tools WithResourceTools adds.
const (
	ListResourcesTool = "list_resources"
	ReadResourceTool  = "read_resource"
)

// WithResourceTools adds two tools to the server's, when it offers
// resources: list_resources, which lists the resources and resource
// templates, and read_resource, which reads one by URI; so that a model can
// find and read what the server offers. A server tool of the same name
// wins. Both are read-only.
func WithResourceTools() Option {
	return func(o *options) { o.resourceTools = true }
}

type readArgs struct {
	URI string `json:"uri" jsonschema:"minLength=1" jsonschema_description:"The URI of the resource to read: a listed one, or a template's with its variables filled in."`
}

type resourceList struct {
	Resources []ResourceInfo         `json:"resources"`
	Templates []ResourceTemplateInfo `json:"templates,omitempty"`
}

// resourceTools returns the tools WithResourceTools adds.
func (ts *Toolset) resourceTools() []tool.Tool {
	ro := tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true})
	list := tool.MustFunc(ListResourcesTool, fmt.Sprintf("Lists the resources (files, records, documents) MCP server %s offers, with the URI to read each by, and the URI templates of those it can read by name.", ts.name),
		func(ctx context.Context, _ struct{}) (resourceList, error) {
			rs, err := ts.Resources(ctx)
			if err != nil {
				return resourceList{}, err
			}
			out := resourceList{Resources: rs}
			if tmpls, err := ts.ResourceTemplates(ctx); err == nil {
				out.Templates = tmpls
			}
			return out, nil
		}, ro)
	read := tool.MustFunc(ReadResourceTool, fmt.Sprintf("Reads a resource of MCP server %s by URI and returns its content.", ts.name),
		func(ctx context.Context, in readArgs) ([]model.Part, error) {
			if strings.TrimSpace(in.URI) == "" {
				return nil, errors.New("the uri is empty")
			}
			return ts.ReadResource(ctx, in.URI)
		}, ro)
	return []tool.Tool{list, read}
}

// withResourceTools appends the resource tools to tools when the toolset
// adds them and the session's server offers resources, leaving out those
// whose names the server's tools take.
func (ts *Toolset) withResourceTools(tools []tool.Tool, s *session) []tool.Tool {
	if !ts.o.resourceTools || s == nil {
		return tools
	}
	if ir := s.cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Resources == nil {
		return tools
	}
	taken := map[string]bool{}
	for _, t := range tools {
		taken[t.Definition().Name] = true
	}
	for _, t := range ts.resourceTools() {
		if !taken[t.Definition().Name] {
			tools = append(tools, t)
		}
	}
	return tools
}
