package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/memory"
)

// toolsOf resolves set into its tools by name, keeping their order in
// names.
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

func TestToolsetShape(t *testing.T) {
	s := newStore(t)
	set, err := memory.Tools(s)
	require.NoError(t, err)
	assert.Equal(t, memory.DefaultToolsetName, set.Name())
	tools, names := toolsOf(t, set)
	assert.Equal(t, []string{memory.AddName, memory.SearchName, memory.DeleteName}, names)
	assert.Equal(t, tool.Metadata{ConcurrencySafe: true}, tool.MetadataOf(tools[memory.AddName]))
	assert.Equal(t, tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}, tool.MetadataOf(tools[memory.SearchName]))
	assert.Equal(t, tool.Metadata{Destructive: true, ConcurrencySafe: true}, tool.MetadataOf(tools[memory.DeleteName]))
	assert.Equal(t, "Search memories", tool.TitleOf(tools[memory.SearchName]))
	assert.Contains(t, tools[memory.SearchName].Definition().Description, "by words, not meaning")

	var schema map[string]any
	require.NoError(t, json.Unmarshal(tools[memory.AddName].Definition().InputSchema, &schema))
	assert.Equal(t, []any{"text"}, schema["required"])
	assert.Contains(t, fmt.Sprint(schema["properties"]), "one fact, preference or decision")

	ro, err := memory.Tools(s, memory.WithReadOnly(), memory.WithToolsetName("recall"))
	require.NoError(t, err)
	assert.Equal(t, "recall", ro.Name())
	_, names = toolsOf(t, ro)
	assert.Equal(t, []string{memory.SearchName}, names)

	withEmbedder := newStore(t, memory.WithEmbedder(new(conceptEmbedder).embed))
	set, err = memory.Tools(withEmbedder)
	require.NoError(t, err)
	tools, _ = toolsOf(t, set)
	assert.Contains(t, tools[memory.SearchName].Definition().Description, "by meaning")

	_, err = memory.Tools(nil, memory.WithToolsetName(""), nil)
	assert.ErrorIs(t, err, tool.ErrInvalidTool)
	assert.ErrorContains(t, err, "the store is nil")
	assert.ErrorContains(t, err, "WithToolsetName: the name is empty")
}

func TestToolsEndToEnd(t *testing.T) {
	s := newStore(t, memory.WithMaxEntrySize(60))
	set, err := memory.Tools(s)
	require.NoError(t, err)
	tools, _ := toolsOf(t, set)
	ada := memory.WithScope(context.Background(), "ada")

	res := call(ada, tools[memory.AddName], `{"text":"Ada prefers window seats","topics":["travel"]}`)
	require.False(t, res.IsError, res.Text())
	var added memory.AddResult
	require.NoError(t, json.Unmarshal([]byte(res.Text()), &added))
	assert.True(t, strings.HasPrefix(added.ID, "mem-"))
	res = call(ada, tools[memory.AddName], `{"text":"Ada is allergic to peanuts"}`)
	require.False(t, res.IsError, res.Text())

	res = call(ada, tools[memory.SearchName], `{"query":"which seats does she like?"}`)
	require.False(t, res.IsError, res.Text())
	var found []memory.Found
	require.NoError(t, json.Unmarshal([]byte(res.Text()), &found))
	require.Len(t, found, 1)
	assert.Equal(t, added.ID, found[0].ID)
	assert.Equal(t, "Ada prefers window seats", found[0].Text)
	assert.Equal(t, []string{"travel"}, found[0].Topics)
	assert.NotEmpty(t, found[0].CreatedAt)
	assert.Positive(t, found[0].Score)
	assert.Contains(t, res.Text(), `"id":"`+added.ID+`"`, "the model sees the id")

	res = call(memory.WithScope(context.Background(), "bob"), tools[memory.SearchName], `{"query":"seats"}`)
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "[]", res.Text(), "another user's calls see none of it")
	res = call(memory.WithScope(context.Background(), "bob"), tools[memory.DeleteName], `{"id":"`+added.ID+`"}`)
	assert.True(t, res.IsError, "nor delete it")

	res = call(ada, tools[memory.SearchName], `{"query":"Ada","limit":1}`)
	require.NoError(t, json.Unmarshal([]byte(res.Text()), &found))
	assert.Len(t, found, 1)

	res = call(ada, tools[memory.DeleteName], `{"id":"`+added.ID+`"}`)
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "Deleted memory "+added.ID+".", res.Text())
	res = call(ada, tools[memory.SearchName], `{"query":"seats"}`)
	assert.Equal(t, "[]", res.Text())

	res = call(ada, tools[memory.DeleteName], `{"id":"`+added.ID+`"}`)
	assert.True(t, res.IsError)
	assert.Equal(t, tool.CodeToolError, res.ErrorCode)
	assert.ErrorIs(t, res.Err, memory.ErrNotFound)
	assert.Contains(t, res.Text(), `no entry has the id "`+added.ID+`"; memory_search shows the ids of the memories`)

	res = call(ada, tools[memory.AddName], `{"text":"`+strings.Repeat("long ", 20)+`"}`)
	assert.True(t, res.IsError)
	assert.ErrorIs(t, res.Err, memory.ErrTooLarge)
	assert.Contains(t, res.Text(), "more than the limit of 60 bytes")

	for _, args := range []string{`{}`, `{"text":""}`, `{"text":"x","extra":1}`} {
		res = call(ada, tools[memory.AddName], args)
		assert.True(t, res.IsError, args)
		assert.Equal(t, tool.CodeInvalidArguments, res.ErrorCode, args)
	}
	res = call(ada, tools[memory.SearchName], `{"query":"x","limit":51}`)
	assert.Equal(t, tool.CodeInvalidArguments, res.ErrorCode)

	list, err := s.List(ada, memory.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "Ada is allergic to peanuts", list[0].Text)
}

// An agent saves a memory in one run and finds it in the next, through
// its tools and through tool.SearchMemory, each user in their own scope.
func TestAgentRemembersAcrossRuns(t *testing.T) {
	s := newStore(t)
	set, err := memory.Tools(s)
	require.NoError(t, err)
	recall := tool.MustFunc("recall", "what is known about a subject",
		func(ctx context.Context, in struct {
			About string `json:"about"`
		}) (string, error) {
			docs, err := tool.SearchMemory(ctx, in.About, 1)
			if err != nil || len(docs) == 0 {
				return "nothing", err
			}
			return docs[0].Content, nil
		})
	run := func(ctx context.Context, steps ...scripted.Step) agent.State {
		t.Helper()
		g, err := agent.NewReAct(scripted.New(steps...), agent.WithToolsets(set), agent.WithTools(recall), agent.WithMemory(s))
		require.NoError(t, err)
		out, err := g.Invoke(ctx, agent.Ask("hello"))
		require.NoError(t, err)
		return out
	}
	ada := memory.WithScope(context.Background(), "ada")
	run(ada,
		scripted.CallTools(scripted.Call(memory.AddName, `{"text":"Ada's dog is called Pixel","topics":["pets"]}`)),
		scripted.Reply("I will remember that."))

	// The next run searches, then deletes what it found by its id.
	out := run(ada,
		scripted.CallTools(scripted.Call(memory.SearchName, `{"query":"dog name"}`), scripted.Call("recall", `{"about":"pets"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			var found []memory.Found
			last := req.Messages[len(req.Messages)-2] // memory_search's answer
			if err := json.Unmarshal([]byte(last.Text()), &found); err != nil || len(found) == 0 {
				return nil, fmt.Errorf("no memory found in %q", last.Text())
			}
			return &model.Response{Message: model.Assistant("", scripted.Call(memory.DeleteName, `{"id":"`+found[0].ID+`"}`))}, nil
		}),
		scripted.Reply("Forgotten."))
	msgs := out.Messages
	assert.Contains(t, msgs[2].Text(), "Ada's dog is called Pixel")
	assert.Equal(t, "Ada's dog is called Pixel", msgs[3].Text(), "tool.SearchMemory finds the store")
	assert.Contains(t, msgs[5].Text(), "Deleted memory mem-")

	bob := memory.WithScope(context.Background(), "bob")
	_, err = s.Add(bob, memory.Entry{Text: "Bob's dog is called Rex"})
	require.NoError(t, err)
	out = run(ada, scripted.CallTools(scripted.Call("recall", `{"about":"dog"}`)), scripted.Reply("ok"))
	assert.Equal(t, "nothing", out.Messages[2].Text(), "Ada's was deleted, and Bob's is not hers")
	out = run(bob, scripted.CallTools(scripted.Call("recall", `{"about":"dog"}`)), scripted.Reply("ok"))
	assert.Equal(t, "Bob's dog is called Rex", out.Messages[2].Text())
}
