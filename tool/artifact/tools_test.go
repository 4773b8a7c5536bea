package artifact_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/artifact"
)

// toolsOf resolves set into its tools by name, and their names in order.
func toolsOf(t *testing.T, set tool.Toolset) (map[string]tool.Tool, []string) {
	t.Helper()
	list, err := set.Tools(context.Background())
	require.NoError(t, err)
	byName := map[string]tool.Tool{}
	var names []string
	for _, tl := range list {
		byName[tool.Name(tl)] = tl
		names = append(names, tool.Name(tl))
	}
	return byName, names
}

func call(ctx context.Context, t tool.Tool, args string) tool.Result {
	return tool.Invoke(ctx, t, model.ToolCall{ID: "c1", Name: tool.Name(t), Arguments: json.RawMessage(args)})
}

// adaInT1 is the context of a call made for Ada in thread t1, outside a
// graph run.
func adaInT1() context.Context {
	return artifact.WithThread(artifact.WithApp(artifact.WithUser(context.Background(), "ada"), "app"), "t1")
}

func TestToolsetShape(t *testing.T) {
	set, err := artifact.Tools(artifact.NewMemory())
	require.NoError(t, err)
	assert.Equal(t, artifact.DefaultToolsetName, set.Name())
	tools, names := toolsOf(t, set)
	assert.Equal(t, []string{artifact.ListName, artifact.LoadName, artifact.SaveName}, names)
	assert.Equal(t, tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}, tool.MetadataOf(tools[artifact.ListName]))
	assert.Equal(t, tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}, tool.MetadataOf(tools[artifact.LoadName]))
	assert.Equal(t, tool.Metadata{ConcurrencySafe: true}, tool.MetadataOf(tools[artifact.SaveName]))

	var schema map[string]any
	require.NoError(t, json.Unmarshal(tools[artifact.LoadName].Definition().InputSchema, &schema))
	assert.Equal(t, []any{"name"}, schema["required"])

	ro, err := artifact.Tools(artifact.NewMemory(), artifact.WithReadOnly(), artifact.WithToolsetName("files"))
	require.NoError(t, err)
	assert.Equal(t, "files", ro.Name())
	_, names = toolsOf(t, ro)
	assert.Equal(t, []string{artifact.ListName, artifact.LoadName}, names)

	_, err = artifact.Tools(nil, artifact.WithToolsetName(""), artifact.WithMaxLoadSize(0), artifact.WithMaxTextSize(-1), nil)
	assert.ErrorIs(t, err, tool.ErrInvalidTool)
	for _, want := range []string{"the store is nil", "WithToolsetName: the name is empty", "WithMaxLoadSize: 0 is not positive", "WithMaxTextSize: -1 is not positive"} {
		assert.ErrorContains(t, err, want)
	}
}

func TestToolsLoadShowsEachKind(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := adaInT1()
		s := mk()
		png := append(append([]byte{}, pngHeader...), 1, 2, 3)
		for _, a := range []struct {
			name, mediaType, data string
		}{
			{"report.md", "text/markdown; charset=utf-8", "# Sales\nUp 4%."},
			{"report.md", "text/markdown", "# Sales\nUp 5%."},
			{"chart.png", "image/png", string(png)},
			{"data.json", "application/json", `{"total": 42, "rows": [1, 2]}`},
			{"geo.json", "application/geo+json", `{"type":"Point"}`},
			{"broken.json", "application/json", `{"total": `},
			{"archive.zip", "application/zip", "PK\x03\x04\x00\x00secret bytes"},
			{"latin1.txt", "text/plain", "caf\xe9"},
			{"page.svg", "image/svg+xml", "<svg/>"},
		} {
			_, err := s.Save(ctx, artifact.ScopeFromContext(ctx), a.name, artifact.Artifact{Data: []byte(a.data), MediaType: a.mediaType})
			require.NoError(t, err)
		}
		set, err := artifact.Tools(s)
		require.NoError(t, err)
		tools, _ := toolsOf(t, set)
		load := tools[artifact.LoadName]

		res := call(ctx, load, `{"name":"report.md"}`)
		require.False(t, res.IsError, res.Text())
		require.Len(t, res.Content, 2)
		assert.Equal(t, "Artifact \"report.md\", version 2 of 2 (text/markdown, 14 bytes):\n", res.Content[0].Text)
		assert.Equal(t, model.TextPart("# Sales\nUp 5%."), res.Content[1])
		d, ok := res.Details.(artifact.LoadDetails)
		require.True(t, ok, "%T", res.Details)
		assert.Equal(t, "text", d.Shown)
		assert.Equal(t, 2, d.Info.Version)

		res = call(ctx, load, `{"name":"report.md","version":1}`)
		require.False(t, res.IsError, res.Text())
		assert.Contains(t, res.Text(), "version 1 of 2 (text/markdown; charset=utf-8, 14 bytes)")
		assert.Contains(t, res.Text(), "Up 4%.")

		res = call(ctx, load, `{"name":"chart.png"}`)
		require.False(t, res.IsError, res.Text())
		require.Len(t, res.Content, 2)
		assert.Equal(t, model.ImagePart("image/png", png), res.Content[1])
		assert.Equal(t, "image", res.Details.(artifact.LoadDetails).Shown)

		res = call(ctx, load, `{"name":"data.json"}`)
		require.Len(t, res.Content, 2)
		assert.Equal(t, model.PartJSON, res.Content[1].Type)
		assert.JSONEq(t, `{"total": 42, "rows": [1, 2]}`, string(res.Content[1].JSON))
		res = call(ctx, load, `{"name":"geo.json"}`)
		assert.Equal(t, model.PartJSON, res.Content[1].Type)

		// JSON that does not parse is shown as text, not as a JSON part
		// the provider would refuse.
		res = call(ctx, load, `{"name":"broken.json"}`)
		require.Len(t, res.Content, 2)
		assert.Equal(t, model.TextPart(`{"total": `), res.Content[1])

		for _, c := range []struct{ name, says string }{
			{"archive.zip", "application/zip, 18 bytes): binary data, which cannot be shown here."},
			{"latin1.txt", "text that is not valid UTF-8"},
		} {
			res = call(ctx, load, `{"name":"`+c.name+`"}`)
			require.False(t, res.IsError, res.Text())
			require.Len(t, res.Content, 1)
			assert.Contains(t, res.Text(), c.says)
			assert.NotContains(t, res.Text(), "secret bytes")
			assert.Equal(t, "description", res.Details.(artifact.LoadDetails).Shown)
		}
		res = call(ctx, load, `{"name":"page.svg"}`)
		assert.Equal(t, model.TextPart("<svg/>"), res.Content[1])
	})
}

func TestToolsLoadLimits(t *testing.T) {
	ctx := adaInT1()
	s := artifact.NewMemory()
	scope := artifact.ScopeFromContext(ctx)
	text := strings.Repeat("é", 30) // 60 bytes
	_, err := s.Save(ctx, scope, "long.txt", artifact.Artifact{Data: []byte(text), MediaType: "text/plain"})
	require.NoError(t, err)
	_, err = s.Save(ctx, scope, "long.json", artifact.Artifact{Data: []byte(`["` + strings.Repeat("a", 60) + `"]`), MediaType: "application/json"})
	require.NoError(t, err)
	_, err = s.Save(ctx, scope, "big.png", artifact.Artifact{Data: append(append([]byte{}, pngHeader...), make([]byte, 100)...), MediaType: "image/png"})
	require.NoError(t, err)

	set, err := artifact.Tools(s, artifact.WithMaxTextSize(25), artifact.WithMaxLoadSize(50))
	require.NoError(t, err)
	tools, _ := toolsOf(t, set)
	load := tools[artifact.LoadName]

	res := call(ctx, load, `{"name":"long.txt"}`)
	require.Len(t, res.Content, 3)
	assert.Equal(t, strings.Repeat("é", 12), res.Content[1].Text, "cut at 25 bytes, on a character boundary")
	assert.Equal(t, "\n[artifact cut: showing the first 24 of 60 bytes]", res.Content[2].Text)
	assert.True(t, res.Details.(artifact.LoadDetails).Truncated)

	res = call(ctx, load, `{"name":"long.json"}`)
	require.Len(t, res.Content, 3)
	assert.Equal(t, model.PartText, res.Content[1].Type, "cut JSON is text")
	assert.Equal(t, `["`+strings.Repeat("a", 23), res.Content[1].Text)

	res = call(ctx, load, `{"name":"big.png"}`)
	require.Len(t, res.Content, 1)
	assert.Contains(t, res.Text(), "an image too large to show (the limit is 50 bytes)")

	// The smaller of the two limits cuts text.
	set, err = artifact.Tools(s, artifact.WithMaxLoadSize(10))
	require.NoError(t, err)
	tools, _ = toolsOf(t, set)
	res = call(ctx, tools[artifact.LoadName], `{"name":"long.txt"}`)
	assert.Equal(t, strings.Repeat("é", 5), res.Content[1].Text)

	set, err = artifact.Tools(s, artifact.WithoutImages())
	require.NoError(t, err)
	tools, _ = toolsOf(t, set)
	res = call(ctx, tools[artifact.LoadName], `{"name":"big.png"}`)
	require.Len(t, res.Content, 1)
	assert.Contains(t, res.Text(), "an image, which cannot be shown here")
}

func TestToolsListAndSave(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := adaInT1()
		s := mk()
		set, err := artifact.Tools(s)
		require.NoError(t, err)
		tools, _ := toolsOf(t, set)

		list := func(ctx context.Context) artifact.ListResult {
			t.Helper()
			res := call(ctx, tools[artifact.ListName], `{}`)
			require.False(t, res.IsError, res.Text())
			require.Len(t, res.Content, 1)
			var out artifact.ListResult
			require.NoError(t, json.Unmarshal(res.Content[0].JSON, &out))
			return out
		}
		assert.Equal(t, artifact.ListResult{Artifacts: []artifact.Listed{}}, list(ctx))
		assert.JSONEq(t, `{"artifacts":[]}`, call(ctx, tools[artifact.ListName], `{}`).Text())

		res := call(ctx, tools[artifact.SaveName], `{"name":"summary.md","content":"# Summary","media_type":"text/markdown"}`)
		require.False(t, res.IsError, res.Text())
		assert.JSONEq(t, `{"name":"summary.md","version":1,"size":9,"media_type":"text/markdown"}`, res.Text())
		res = call(ctx, tools[artifact.SaveName], `{"name":"summary.md","content":"# Summary, v2"}`)
		var saved artifact.SaveResult
		require.NoError(t, json.Unmarshal(res.Content[0].JSON, &saved))
		assert.Equal(t, 2, saved.Version)
		// From the system's table of extensions or from the content:
		// text either way.
		assert.True(t, strings.HasPrefix(saved.MediaType, "text/"), saved.MediaType)
		res = call(ctx, tools[artifact.SaveName], `{"name":"notes","content":"plain words"}`)
		assert.JSONEq(t, `{"name":"notes","version":1,"size":11,"media_type":"text/plain; charset=utf-8"}`, res.Text())
		require.NoError(t, s.Delete(ctx, artifact.ScopeFromContext(ctx), "notes"))
		res = call(ctx, tools[artifact.SaveName], `{"name":"user:prefs.json","content":"{}"}`)
		assert.JSONEq(t, `{"name":"user:prefs.json","version":1,"size":2,"media_type":"application/json"}`, res.Text())

		got := list(ctx)
		require.Len(t, got.Artifacts, 2)
		assert.Equal(t, "summary.md", got.Artifacts[0].Name)
		assert.Equal(t, 2, got.Artifacts[0].Version)
		assert.Equal(t, int64(13), got.Artifacts[0].Size)
		assert.NotEmpty(t, got.Artifacts[0].Saved)
		assert.Equal(t, "user:prefs.json", got.Artifacts[1].Name)

		// Another thread of Ada's sees her user artifact alone; Bob sees
		// nothing.
		t2 := artifact.WithThread(ctx, "t2")
		got = list(t2)
		require.Len(t, got.Artifacts, 1)
		assert.Equal(t, "user:prefs.json", got.Artifacts[0].Name)
		bob := artifact.WithUser(ctx, "bob")
		assert.Empty(t, list(bob).Artifacts)
		res = call(bob, tools[artifact.LoadName], `{"name":"summary.md"}`)
		assert.True(t, res.IsError)

		// What the store holds is in Ada's thread.
		a, err := s.Load(context.Background(), artifact.Scope{App: "app", User: "ada", Thread: "t1"}, "summary.md", 2)
		require.NoError(t, err)
		assert.Equal(t, "# Summary, v2", string(a.Data))
	})
}

func TestToolsErrors(t *testing.T) {
	ctx := adaInT1()
	s := artifact.NewMemory(artifact.WithMaxSize(5))
	_, err := s.Save(ctx, artifact.ScopeFromContext(ctx), "a.txt", artifact.Artifact{Data: []byte("a")})
	require.NoError(t, err)
	set, err := artifact.Tools(s)
	require.NoError(t, err)
	tools, _ := toolsOf(t, set)
	for _, c := range []struct {
		tool, args, says string
	}{
		{artifact.LoadName, `{"name":"missing.txt"}`, `no artifact "missing.txt"; list_artifacts shows the artifacts there are`},
		{artifact.LoadName, `{"name":"a.txt","version":9}`, `artifact "a.txt" has no version 9 (the latest is 1)`},
		{artifact.LoadName, `{"name":"../etc/passwd"}`, "'/'"},
		{artifact.LoadName, `{"name":"a.txt","version":0}`, "version"},
		{artifact.SaveName, `{"name":"b.txt","content":"too long"}`, "limit of 5"},
		{artifact.SaveName, `{"name":"x/../../b.txt","content":"x"}`, "'/'"},
	} {
		res := call(ctx, tools[c.tool], c.args)
		assert.True(t, res.IsError, "%s %s", c.tool, c.args)
		assert.Contains(t, res.Text(), c.says, "%s %s", c.tool, c.args)
	}
}

func TestSaveFromTool(t *testing.T) {
	ctx := adaInT1()
	_, err := artifact.SaveFromTool(ctx, "x.txt", artifact.Artifact{})
	assert.ErrorIs(t, err, artifact.ErrNoStore)
	_, err = artifact.LoadFromTool(ctx, "x.txt", 0)
	assert.ErrorIs(t, err, artifact.ErrNoStore)
	assert.Nil(t, artifact.FromContext(ctx))

	s := artifact.NewMemory()
	ctx = artifact.WithStore(ctx, s)
	assert.Same(t, s, artifact.FromContext(ctx))
	v, err := artifact.SaveFromTool(ctx, "x.txt", artifact.Artifact{Data: []byte("hi")})
	require.NoError(t, err)
	assert.Equal(t, 1, v)
	a, err := s.Load(ctx, artifact.Scope{App: "app", User: "ada", Thread: "t1"}, "x.txt", 0)
	require.NoError(t, err)
	assert.Equal(t, "hi", string(a.Data))
	a, err = artifact.LoadFromTool(ctx, "x.txt", 1)
	require.NoError(t, err)
	assert.Equal(t, "hi", string(a.Data))

	assert.Equal(t, artifact.Scope{}, artifact.ScopeFromContext(context.Background()))
}

func TestScopeFor(t *testing.T) {
	s := artifact.Scope{App: "a", User: "u", Thread: "t"}
	assert.Equal(t, s, s.For("x.txt"))
	assert.Equal(t, artifact.Scope{App: "a", User: "u"}, s.For("user:x.txt"))
	assert.True(t, artifact.IsUserName("user:x"))
	assert.False(t, artifact.IsUserName("User:x"))
	assert.Equal(t, `app "a", user "u", thread "t"`, s.String())
	assert.Equal(t, `app "a", user "u"`, s.UserScope().String())
}
