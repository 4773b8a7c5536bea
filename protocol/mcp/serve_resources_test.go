package mcp

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestServerServesResourcesTemplatesPromptsAndCompletions(t *testing.T) {
	srv, err := NewServer(t.Context(), tool.NewStatic("s"),
		WithResources(Resource{URI: "app://note", Name: "note", MIMEType: "text/plain",
			Read: func(context.Context, string) ([]model.Part, error) { return []model.Part{model.TextPart("hello")}, nil }}),
		WithResourceTemplates(ResourceTemplate{URITemplate: "app://users/{id}", Name: "user",
			Read: func(_ context.Context, uri string) ([]model.Part, error) {
				return []model.Part{model.TextPart("user " + uri)}, nil
			}}),
		WithPrompts(Prompt{Name: "greet", Description: "greets", Arguments: []PromptArgument{{Name: "who", Required: true}},
			Get: func(_ context.Context, a map[string]string) ([]model.Message, error) {
				return []model.Message{{Role: model.RoleUser, Content: []model.Part{model.TextPart("hi " + a["who"])}}}, nil
			}}),
		WithCompleter(func(_ context.Context, ref CompletionRef, arg, value string, _ map[string]string) ([]string, error) {
			return []string{ref.Prompt + "/" + arg + "/" + value}, nil
		}),
	)
	require.NoError(t, err)
	cs := connectClient(t, srv, nil)
	ctx := t.Context()

	rs, err := cs.ListResources(ctx, nil)
	require.NoError(t, err)
	require.Len(t, rs.Resources, 1)
	read, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://note"})
	require.NoError(t, err)
	assert.Equal(t, []*sdk.ResourceContents{{URI: "app://note", MIMEType: "text/plain", Text: "hello"}}, read.Contents)
	read, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "app://users/7"})
	require.NoError(t, err)
	assert.Equal(t, "user app://users/7", read.Contents[0].Text)
	require.NoError(t, cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "app://note"}))
	require.NoError(t, cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "app://note"}))

	p, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Ada"}})
	require.NoError(t, err)
	require.Len(t, p.Messages, 1)
	assert.Equal(t, "hi Ada", p.Messages[0].Content.(*sdk.TextContent).Text)
	_, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet"})
	assert.ErrorContains(t, err, "missing arguments: who")

	c, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: sdk.CompleteParamsArgument{Name: "who", Value: "A"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"greet/who/A"}, c.Completion.Values)
}

// ResourceUpdated reaches the clients subscribed to the resource, and only
// while they are.
func TestResourceUpdatedReachesSubscribedClients(t *testing.T) {
	read := func(context.Context, string) ([]model.Part, error) { return []model.Part{model.TextPart("v")}, nil }
	srv, err := NewServer(t.Context(), tool.NewStatic("s"),
		WithResources(Resource{URI: "app://a", Name: "a", Read: read}, Resource{URI: "app://b", Name: "b", Read: read}))
	require.NoError(t, err)
	updated := make(chan string, 4)
	cs := connectClient(t, srv, &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "app://a"}))
	require.NoError(t, srv.ResourceUpdated(ctx, "app://b")) // not subscribed
	require.NoError(t, srv.ResourceUpdated(ctx, "app://a"))
	select {
	case uri := <-updated:
		assert.Equal(t, "app://a", uri, "only the subscribed resource's change is sent")
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated")
	}
	require.NoError(t, cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "app://a"}))
	require.NoError(t, srv.ResourceUpdated(ctx, "app://a"))
	require.NoError(t, cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "app://b"}))
	require.NoError(t, srv.ResourceUpdated(ctx, "app://b"))
	select {
	case uri := <-updated:
		assert.Equal(t, "app://b", uri, "nothing after the unsubscription")
	case <-ctx.Done():
		t.Fatal("no notifications/resources/updated")
	}
}
