package mcp

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/model"
)

// Resource is a resource a Server serves (resources/list, resources/read).
type Resource struct {
	// URI identifies the resource ("file:///notes.txt", "app://config").
	URI string
	// Name, Title and Description describe it to clients.
	Name, Title, Description string
	// MIMEType is the media type of its content.
	MIMEType string
	// Read returns its content: text parts become text contents, resource
	// parts are kept, image and audio parts become blobs. uri is the URI
	// read, which for a template is the expanded one.
	Read func(ctx context.Context, uri string) ([]model.Part, error)
}

// ResourceTemplate is a family of resources a Server serves, named by an
// RFC 6570 URI template ("app://users/{id}/profile"); Read gets the URI a
// client asked for.
type ResourceTemplate struct {
	// URITemplate names the resources.
	URITemplate string
	// Name, Title, Description and MIMEType are as Resource's.
	Name, Title, Description, MIMEType string
	// Read returns the content of one resource of the family.
	Read func(ctx context.Context, uri string) ([]model.Part, error)
}

// Prompt is a prompt template a Server serves (prompts/list, prompts/get).
type Prompt struct {
	// Name identifies the prompt; Title and Description describe it.
	Name, Title, Description string
	// Arguments are the values a client fills in.
	Arguments []PromptArgument
	// Get returns the prompt's messages for the arguments given. Each
	// part of a message becomes one MCP prompt message of the same role
	// (system messages are sent as user messages, as MCP has no system
	// role).
	Get func(ctx context.Context, args map[string]string) ([]model.Message, error)
}

// PromptArgument is an argument of a Prompt.
type PromptArgument struct {
	Name, Title, Description string
	Required                 bool
}

// CompletionRef says what a completion request completes an argument of:
// a prompt (Prompt holds its name) or a resource template (URI holds its
// URI template).
type CompletionRef struct {
	Prompt, URI string
}

// Completer suggests values for the argument named arg of ref, given what
// the user typed so far (value) and the arguments already filled in.
type Completer func(ctx context.Context, ref CompletionRef, arg, value string, filled map[string]string) ([]string, error)

// WithResources serves resources (see Resource). Resource subscriptions
// are accepted (resources/subscribe); Server.ResourceUpdated tells the
// subscribed clients that one changed.
func WithResources(rs ...Resource) ServerOption {
	return func(c *serverConfig) { c.resources = append(c.resources, rs...) }
}

// WithResourceTemplates serves resource templates (see ResourceTemplate).
func WithResourceTemplates(ts ...ResourceTemplate) ServerOption {
	return func(c *serverConfig) { c.templates = append(c.templates, ts...) }
}

// WithPrompts serves prompts (see Prompt).
func WithPrompts(ps ...Prompt) ServerOption {
	return func(c *serverConfig) { c.prompts = append(c.prompts, ps...) }
}

// WithCompleter answers completion/complete requests, for the arguments of
// prompts and resource templates.
func WithCompleter(fn Completer) ServerOption {
	return func(c *serverConfig) { c.completer = fn }
}

// maxCompletions is how many values a completion result may hold.
const maxCompletions = 100

// serveExtras sets the go-sdk options for what c serves beyond tools.
func (c *serverConfig) serveExtras(so *sdk.ServerOptions) {
	if len(c.resources) > 0 || len(c.templates) > 0 {
		so.HasResources = true
		if so.SubscribeHandler == nil {
			so.SubscribeHandler = func(context.Context, *sdk.SubscribeRequest) error { return nil }
		}
		if so.UnsubscribeHandler == nil {
			so.UnsubscribeHandler = func(context.Context, *sdk.UnsubscribeRequest) error { return nil }
		}
	}
	if len(c.prompts) > 0 {
		so.HasPrompts = true
	}
	if fn := c.completer; fn != nil {
		so.CompletionHandler = func(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			p := req.Params
			var ref CompletionRef
			if p.Ref != nil {
				if p.Ref.Type == "ref/prompt" {
					ref.Prompt = p.Ref.Name
				} else {
					ref.URI = p.Ref.URI
				}
			}
			var filled map[string]string
			if p.Context != nil {
				filled = p.Context.Arguments
			}
			values, err := fn(ctx, ref, p.Argument.Name, p.Argument.Value, filled)
			if err != nil {
				return nil, err
			}
			res := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: values, Total: len(values)}}
			if len(values) > maxCompletions {
				res.Completion.Values, res.Completion.HasMore = values[:maxCompletions], true
			}
			if res.Completion.Values == nil {
				res.Completion.Values = []string{}
			}
			return res, nil
		}
	}
}

// addExtras registers c's resources, templates and prompts with srv.
func (c *serverConfig) addExtras(srv *sdk.Server) {
	for _, r := range c.resources {
		srv.AddResource(&sdk.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType},
			readHandler(r.MIMEType, r.Read))
	}
	for _, t := range c.templates {
		srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType},
			readHandler(t.MIMEType, t.Read))
	}
	for _, p := range c.prompts {
		mp := &sdk.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		for _, a := range p.Arguments {
			mp.Arguments = append(mp.Arguments, &sdk.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		srv.AddPrompt(mp, promptHandler(p))
	}
}

func readHandler(mimeType string, read func(context.Context, string) ([]model.Part, error)) sdk.ResourceHandler {
	return func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		uri := req.Params.URI
		if read == nil {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		parts, err := read(ctx, uri)
		if err != nil {
			return nil, fmt.Errorf("mcp: reading %s: %w", quote(uri), err)
		}
		return &sdk.ReadResourceResult{Contents: ResourceContents(uri, mimeType, parts)}, nil
	}
}

// ResourceContents converts the content parts of the resource uri into MCP
// resource contents: text and JSON parts become text (of mimeType), image
// and audio parts blobs, and resource parts are kept as they are.
func ResourceContents(uri, mimeType string, parts []model.Part) []*sdk.ResourceContents {
	out := make([]*sdk.ResourceContents, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case model.PartResource:
			rc := &sdk.ResourceContents{URI: p.URL, MIMEType: p.MIMEType, Text: p.Text, Blob: p.Data}
			if rc.URI == "" {
				rc.URI = uri
			}
			out = append(out, rc)
		case model.PartImage, model.PartAudio:
			if p.Data != nil {
				out = append(out, &sdk.ResourceContents{URI: uri, MIMEType: p.MIMEType, Blob: p.Data})
			}
		case model.PartJSON:
			out = append(out, &sdk.ResourceContents{URI: uri, MIMEType: firstOf(mimeType, "application/json"), Text: string(p.JSON)})
		case model.PartText:
			out = append(out, &sdk.ResourceContents{URI: uri, MIMEType: firstOf(mimeType, "text/plain"), Text: p.Text})
		}
	}
	return out
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func promptHandler(p Prompt) sdk.PromptHandler {
	return func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		args := req.Params.Arguments
		var missing []string
		for _, a := range p.Arguments {
			if _, ok := args[a.Name]; a.Required && !ok {
				missing = append(missing, a.Name)
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("mcp: prompt %s: missing arguments: %s", quote(p.Name), strings.Join(missing, ", "))
		}
		if p.Get == nil {
			return &sdk.GetPromptResult{Description: p.Description}, nil
		}
		msgs, err := p.Get(ctx, args)
		if err != nil {
			return nil, fmt.Errorf("mcp: prompt %s: %w", quote(p.Name), err)
		}
		res := &sdk.GetPromptResult{Description: p.Description, Messages: []*sdk.PromptMessage{}}
		for _, m := range msgs {
			role := sdk.Role("user")
			if m.Role == model.RoleAssistant {
				role = "assistant"
			}
			for _, c := range Content(m.Content) {
				res.Messages = append(res.Messages, &sdk.PromptMessage{Role: role, Content: c})
			}
		}
		return res, nil
	}
}

// ResourceUpdated tells the clients subscribed to uri that the resource
// changed (notifications/resources/updated).
func (s *Server) ResourceUpdated(ctx context.Context, uri string) error {
	return s.mcp.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uri})
}
