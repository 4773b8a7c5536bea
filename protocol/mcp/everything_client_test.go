package mcp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

// The reference server's requests to its client (elicitation, sampling,
// roots) and what it offers besides tools (resources, prompts), over stdio
// on protocol 2025-11-25.

func TestEverythingElicitationPausesAGraphRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MCP reference server; skipped under -short")
	}
	bin := everything(t)
	ctx := ctxT(t, 60*time.Second)
	// The reference server speaks 2025-11-25 and does not echo the call's
	// token: its question reaches the run only on a toolset that serves
	// one user.
	ts, err := New(Config{Name: "everything", Command: bin, Args: []string{"stdio"}}, WithSingleUser())
	require.NoError(t, err)
	defer ts.Close()
	g := callGraph(t, find(t, mustTools(t, ctx, ts), "trigger-elicitation-request"))

	_, err = g.Invoke(ctx, callState{}, graph.WithThread("e"))
	ie, ok := errors.AsType[*graph.InterruptError](err)
	require.True(t, ok, "want an interrupt, got %v", err)
	q := ie.Interrupts[0].Payload.(Elicitation)
	assert.Equal(t, "everything", q.Server)
	assert.Equal(t, "trigger-elicitation-request", q.Tool)
	assert.Contains(t, q.Message, "Please provide inputs")
	assert.Contains(t, string(q.Schema), `"firstLine"`)

	out, err := g.Resume(ctx, "e", graph.WithResumeValue(tool.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace"}}))
	require.NoError(t, err)
	assert.Contains(t, out.Out, "- Name: Ada Lovelace")
	assert.Contains(t, out.Out, "It was a dark and stormy night.", "the schema's defaults are applied")
}

// Without WithSingleUser, the reference server's question (it echoes no
// call token) reaches no run: the toolset's handler answers it, and with
// no handler of the application's the tool reports the refusal.
func TestEverythingElicitationReachesNoRunOfASharedToolset(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MCP reference server; skipped under -short")
	}
	bin := everything(t)
	ctx := ctxT(t, 60*time.Second)
	ts, err := New(Config{Name: "everything", Command: bin, Args: []string{"stdio"}})
	require.NoError(t, err)
	defer ts.Close()
	g := callGraph(t, find(t, mustTools(t, ctx, ts), "trigger-elicitation-request"))
	_, err = g.Invoke(ctx, callState{}, graph.WithThread("e"))
	_, paused := errors.AsType[*graph.InterruptError](err)
	assert.False(t, paused, "a shared toolset's run is not paused by a request it cannot tie to its call")
}

func TestEverythingSamplingWithAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MCP reference server; skipped under -short")
	}
	bin := everything(t)
	ctx := ctxT(t, 60*time.Second)
	m := scripted.New(scripted.Reply("a haiku about Go"))
	allow := func(context.Context, tool.SamplingRequest) SamplingDecision { return SamplingAllow }
	ts, err := New(Config{Name: "everything", Command: bin, Args: []string{"stdio"}}, WithSampling(SampleWith(m, allow)))
	require.NoError(t, err)
	defer ts.Close()
	r := call(ctx, find(t, mustTools(t, ctx, ts), "trigger-sampling-request"), `{"prompt":"write a haiku","maxTokens":42}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "a haiku about Go")
	reqs := m.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, model.RoleSystem, reqs[0].Messages[0].Role)
	assert.Contains(t, reqs[0].Messages[1].Text(), "write a haiku")
	assert.Equal(t, 42, reqs[0].Settings.MaxTokens)
	require.NotNil(t, reqs[0].Settings.Temperature)
	assert.Equal(t, 0.7, *reqs[0].Settings.Temperature, "the server's temperature")
}

func TestEverythingRootsResourcesAndPrompts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the MCP reference server; skipped under -short")
	}
	bin := everything(t)
	ctx := ctxT(t, 60*time.Second)
	ts, err := New(Config{Name: "everything", Command: bin, Args: []string{"stdio"},
		Roots: []Root{{URI: "file:///srv/project", Name: "project"}}}, WithResourceTools())
	require.NoError(t, err)
	defer ts.Close()
	tools := mustTools(t, ctx, ts)

	r := call(ctx, find(t, tools, "get-roots-list"), `{}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "file:///srv/project")

	rs, err := ts.Resources(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, rs)
	var doc ResourceInfo
	for _, res := range rs {
		if strings.HasPrefix(res.URI, "demo://resource/static/document/") {
			doc = res
			break
		}
	}
	require.NotEmpty(t, doc.URI, "a static document among %v", rs)
	parts, err := ts.ReadResource(ctx, doc.URI)
	require.NoError(t, err)
	require.NotEmpty(t, parts)
	assert.Equal(t, model.PartResource, parts[0].Type)
	assert.Equal(t, doc.URI, parts[0].URL)
	assert.NotEmpty(t, parts[0].Text)

	tmpls, err := ts.ResourceTemplates(ctx)
	require.NoError(t, err)
	var uris []string
	for _, tm := range tmpls {
		uris = append(uris, tm.URITemplate)
	}
	assert.Contains(t, uris, "demo://resource/dynamic/text/{resourceId}")
	parts, err = ts.ReadResource(ctx, "demo://resource/dynamic/text/3")
	require.NoError(t, err)
	require.Len(t, parts, 1)
	assert.Equal(t, "demo://resource/dynamic/text/3", parts[0].URL)

	// The model reads the same through the resource tools.
	r = call(ctx, find(t, tools, ReadResourceTool), `{"uri":"demo://resource/dynamic/text/3"}`)
	require.False(t, r.IsError, r.Text())
	assert.NotEmpty(t, r.Text())

	ps, err := ts.Prompts(ctx)
	require.NoError(t, err)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	assert.Subset(t, names, []string{"simple-prompt", "args-prompt"})
	text, err := ts.PromptInstructions(ctx, "args-prompt", map[string]string{"city": "Lyon"})
	require.NoError(t, err)
	assert.Equal(t, "What's weather in Lyon?", text)
}

func mustTools(t *testing.T, ctx context.Context, ts *Toolset) []tool.Tool {
	t.Helper()
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	return tools
}
