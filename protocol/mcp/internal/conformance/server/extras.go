package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/protocol/mcp"
)

// extras returns the resources, templates, prompts and completions the
// scenarios read.
func extras() []mcp.ServerOption {
	pngData := redPixelPNG()
	text := func(s string) func(context.Context, string) ([]model.Part, error) {
		return func(context.Context, string) ([]model.Part, error) { return []model.Part{model.TextPart(s)}, nil }
	}
	user := func(parts ...model.Part) model.Message { return model.Message{Role: model.RoleUser, Content: parts} }
	return []mcp.ServerOption{
		mcp.WithResources(
			mcp.Resource{URI: "test://static-text", Name: "static-text", Description: "A static text resource",
				MIMEType: "text/plain", Read: text("This is the content of the static text resource.")},
			mcp.Resource{URI: "test://static-binary", Name: "static-binary", Description: "A static PNG image",
				MIMEType: "image/png", Read: func(context.Context, string) ([]model.Part, error) {
					return []model.Part{model.ImagePart("image/png", pngData)}, nil
				}},
			mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Description: "A resource clients subscribe to",
				MIMEType: "text/plain", Read: text("Watched resource content.")},
		),
		mcp.WithResourceTemplates(mcp.ResourceTemplate{
			URITemplate: "test://template/{id}/data", Name: "template-data", Description: "Data for an ID",
			MIMEType: "application/json",
			Read: func(_ context.Context, uri string) ([]model.Part, error) {
				id := strings.TrimSuffix(strings.TrimPrefix(uri, "test://template/"), "/data")
				return []model.Part{model.TextPart(fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id))}, nil
			},
		}),
		mcp.WithPrompts(
			mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments",
				Get: func(context.Context, map[string]string) ([]model.Message, error) {
					return []model.Message{user(model.TextPart("This is a simple prompt for testing."))}, nil
				}},
			mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two arguments",
				Arguments: []mcp.PromptArgument{{Name: "arg1", Description: "First argument", Required: true}, {Name: "arg2", Description: "Second argument", Required: true}},
				Get: func(_ context.Context, a map[string]string) ([]model.Message, error) {
					return []model.Message{user(model.TextPart(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])))}, nil
				}},
			mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt embedding a resource",
				Arguments: []mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}},
				Get: func(_ context.Context, a map[string]string) ([]model.Message, error) {
					return []model.Message{
						user(model.TextResourcePart(a["resourceUri"], "text/plain", "Embedded resource content for testing.")),
						user(model.TextPart("Please process the embedded resource above.")),
					}, nil
				}},
			mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image",
				Get: func(context.Context, map[string]string) ([]model.Message, error) {
					return []model.Message{user(model.ImagePart("image/png", pngData)), user(model.TextPart("Please analyze the image above."))}, nil
				}},
		),
		mcp.WithCompleter(func(_ context.Context, _ mcp.CompletionRef, _, value string, _ map[string]string) ([]string, error) {
			var out []string
			for _, v := range []string{"paris", "park", "party"} {
				if strings.HasPrefix(v, value) {
					out = append(out, v)
				}
			}
			return out, nil
		}),
	}
}
