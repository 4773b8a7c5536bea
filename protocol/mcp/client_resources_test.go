package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// offeringServer serves a text and a binary resource, a template and a
// prompt, besides the fixture's tools.
func offeringServer(t *testing.T) *Server {
	t.Helper()
	srv, _ := newFixtureServer(t, nil,
		WithResources(
			Resource{URI: "app://readme", Name: "readme", Description: "The README", MIMEType: "text/markdown",
				Read: func(context.Context, string) ([]model.Part, error) {
					return []model.Part{model.TextPart("# Hello")}, nil
				}},
			Resource{URI: "app://logo", Name: "logo", MIMEType: "image/png",
				Read: func(context.Context, string) ([]model.Part, error) {
					return []model.Part{model.ImagePart("image/png", []byte{0x89, 'P', 'N', 'G'})}, nil
				}},
		),
		WithResourceTemplates(ResourceTemplate{URITemplate: "app://users/{id}", Name: "user", MIMEType: "application/json",
			Read: func(_ context.Context, uri string) ([]model.Part, error) {
				return []model.Part{model.JSONPart(json.RawMessage(`{"uri":"` + uri + `"}`))}, nil
			}}),
		WithPrompts(Prompt{Name: "review", Description: "Review a file",
			Arguments: []PromptArgument{{Name: "path", Required: true}},
			Get: func(_ context.Context, args map[string]string) ([]model.Message, error) {
				return []model.Message{
					{Role: model.RoleUser, Content: []model.Part{model.TextPart("You review code."), model.TextPart("Review " + args["path"] + ".")}},
				}, nil
			}}),
	)
	return srv
}

func TestToolsetListsAndReadsResources(t *testing.T) {
	ts := memToolset(t, offeringServer(t))
	ctx := t.Context()

	rs, err := ts.Resources(ctx)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	byURI := map[string]ResourceInfo{}
	for _, r := range rs {
		byURI[r.URI] = r
	}
	assert.Equal(t, ResourceInfo{URI: "app://readme", Name: "readme", Description: "The README", MIMEType: "text/markdown"}, byURI["app://readme"])

	tmpls, err := ts.ResourceTemplates(ctx)
	require.NoError(t, err)
	require.Len(t, tmpls, 1)
	assert.Equal(t, "app://users/{id}", tmpls[0].URITemplate)

	parts, err := ts.ReadResource(ctx, "app://readme")
	require.NoError(t, err)
	assert.Equal(t, []model.Part{model.TextResourcePart("app://readme", "text/markdown", "# Hello")}, parts)

	parts, err = ts.ReadResource(ctx, "app://logo")
	require.NoError(t, err)
	assert.Equal(t, []model.Part{model.BlobResourcePart("app://logo", "image/png", []byte{0x89, 'P', 'N', 'G'})}, parts)

	parts, err = ts.ReadResource(ctx, "app://users/42")
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.JSONEq(t, `{"uri":"app://users/42"}`, parts[0].Text)

	_, err = ts.ReadResource(ctx, "app://nothing")
	assert.Error(t, err)

	msg, err := ts.ResourceMessage(ctx, "app://readme", "app://users/7")
	require.NoError(t, err)
	assert.Equal(t, model.RoleUser, msg.Role)
	require.Len(t, msg.Content, 2)
	assert.Equal(t, "# Hello", msg.Content[0].TextFallback())
}

func TestToolsetGetsPromptsAsMessagesAndInstructions(t *testing.T) {
	ts := memToolset(t, offeringServer(t))
	ctx := t.Context()

	ps, err := ts.Prompts(ctx)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	assert.Equal(t, PromptInfo{Name: "review", Description: "Review a file", Arguments: []PromptArgument{{Name: "path", Required: true}}}, ps[0])

	msgs, err := ts.GetPrompt(ctx, "review", map[string]string{"path": "main.go"})
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "Review main.go.", msgs[1].Text())

	text, err := ts.PromptInstructions(ctx, "review", map[string]string{"path": "main.go"})
	require.NoError(t, err)
	assert.Equal(t, "You review code.\n\nReview main.go.", text)

	_, err = ts.GetPrompt(ctx, "review", nil)
	assert.ErrorContains(t, err, "missing arguments: path")
}

func TestToolsetWithoutResourcesSaysSo(t *testing.T) {
	srv, _ := newFixtureServer(t, nil)
	ts := memToolset(t, srv, WithResourceTools())
	_, err := ts.Resources(t.Context())
	assert.ErrorIs(t, err, ErrNotOffered)
	_, err = ts.Prompts(t.Context())
	assert.ErrorIs(t, err, ErrNotOffered)

	tools, err := ts.Tools(t.Context())
	require.NoError(t, err)
	for _, tl := range tools {
		assert.NotEqual(t, ReadResourceTool, tl.Definition().Name, "no resource tools for a server without resources")
	}
}

func TestResourceToolsLetAModelListAndRead(t *testing.T) {
	ts := memToolset(t, offeringServer(t), WithResourceTools())
	tools, err := ts.Tools(t.Context())
	require.NoError(t, err)
	byName := map[string]tool.Tool{}
	for _, tl := range tools {
		byName[tl.Definition().Name] = tl
	}
	require.Contains(t, byName, ListResourcesTool)
	require.Contains(t, byName, ReadResourceTool)
	assert.True(t, tool.MetadataOf(byName[ReadResourceTool]).ReadOnly)

	res := tool.Invoke(t.Context(), byName[ListResourcesTool], model.ToolCall{ID: "1", Name: ListResourcesTool, Arguments: json.RawMessage(`{}`)})
	require.False(t, res.IsError, res.Text())
	assert.Contains(t, res.Text(), "app://readme")
	assert.Contains(t, res.Text(), "app://users/{id}")

	res = tool.Invoke(t.Context(), byName[ReadResourceTool], model.ToolCall{ID: "2", Name: ReadResourceTool, Arguments: json.RawMessage(`{"uri":"app://readme"}`)})
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "# Hello", res.Text())

	res = tool.Invoke(t.Context(), byName[ReadResourceTool], model.ToolCall{ID: "3", Name: ReadResourceTool, Arguments: json.RawMessage(`{"uri":"app://nothing"}`)})
	assert.True(t, res.IsError)
}
