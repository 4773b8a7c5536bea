package toolsearch

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

func TestParseSelection(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`{"tools": ["a", "b"]}`, []string{"a", "b"}},
		{`{"tools": []}`, []string{}},
		{`{"tools": null}`, []string{}},
		{`{"tools": "a"}`, []string{"a"}},
		{`{"Tools": ["a"]}`, []string{"a"}},
		{`{"tools": ["a"], "reason": ["x"]}`, []string{"a"}},
		{`{"names": ["b", "a"], "why": "fits"}`, []string{"b", "a"}},
		{`[" a ", "b", "a", "", 3, null, "b"]`, []string{"a", "b"}},
		{`[{"name": "a"}, {"tool": "b"}, {"tool_name": "c"}, {"other": "d"}]`, []string{"a", "b", "c"}},
		{"```json\n{\"tools\": [\"a\"]}\n```", []string{"a"}},
		{"Sure! The tools are: [\"a\", \"b\"]. Hope that helps.", []string{"a", "b"}},
		{`{'tools': ['a', 'b',],}`, []string{"a", "b"}},
		{`{"tools": ["a", "b`, []string{"a", "b"}},
	} {
		got, err := parseSelection(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.want, got, c.in)
	}
	for _, in := range []string{
		"", "  ", "use a", `"a"`, `42`, `{"a": "x"}`, `{"a": [], "b": []}`, `[1, 2]`, `{"tools": 3}`, `{"tools": [{}]}`,
	} {
		_, err := parseSelection(in)
		require.ErrorIs(t, err, ErrUnusableAnswer, "%q", in)
	}
}

func FuzzParseSelection(f *testing.F) {
	for _, seed := range []string{
		`{"tools": ["a", "b"]}`, `{"tools": []}`, `["a", {"name": "b"}]`, "```json\n{\"tools\": [\"a\"]}\n```",
		`{tools: ['a',]}`, `{"tools": ["a", "b`, `{"x": [1], "y": ["a"]}`, `prose [ "a" ] prose`, `[[["a"]]]`, `{"tools": {"a": 1}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseSelection(in)
		if err != nil {
			if !errors.Is(err, ErrUnusableAnswer) {
				t.Fatalf("error %v does not wrap ErrUnusableAnswer", err)
			}
			if got != nil {
				t.Fatalf("names %q with error %v", got, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, n := range got {
			if n == "" || n != strings.TrimSpace(n) {
				t.Fatalf("name %q is empty or untrimmed", n)
			}
			if seen[n] {
				t.Fatalf("duplicate name %q in %q", n, got)
			}
			seen[n] = true
		}
		// The answer the prompt asks for reads back as the names it holds.
		raw, err := json.Marshal(map[string][]string{"tools": got})
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseSelection(string(raw))
		if err != nil || len(back) != len(got) {
			t.Fatalf("%s reads back as %q, %v", raw, back, err)
		}
		for i := range got {
			if back[i] != got[i] {
				t.Fatalf("%s reads back as %q", raw, back)
			}
		}
	})
}

func TestLRUForgetsTheLeastRecentlyUsed(t *testing.T) {
	c := newLRU(2)
	c.put("a", []string{"x"})
	c.put("b", []string{"y"})
	_, ok := c.get("a") // a is now the most recent
	require.True(t, ok)
	c.put("c", []string{"z"})
	assert.Equal(t, 2, c.len())
	_, ok = c.get("b")
	assert.False(t, ok, "b was the least recently used")
	got, ok := c.get("a")
	assert.True(t, ok)
	assert.Equal(t, []string{"x"}, got)
	c.put("a", []string{"w"})
	got, _ = c.get("a")
	assert.Equal(t, []string{"w"}, got)
	assert.Equal(t, 2, c.len())
}

func TestCacheKeyIsUnambiguous(t *testing.T) {
	assert.NotEqual(t, cacheKey("ab", "c"), cacheKey("a", "bc"))
	assert.Equal(t, cacheKey("ab", "c"), cacheKey("ab", "c"))
}

func TestLongTextsAreCut(t *testing.T) {
	long := strings.Repeat("word ", 2000)
	p := userPrompt(turn{request: long}, []model.ToolDefinition{{Name: "a", Description: long}}, 3)
	assert.Less(t, len(p), maxRequestBytes+maxDescriptionBytes+500)
	assert.Equal(t, 2, strings.Count(p, cutMark), "the request and the description are cut")
	assert.Contains(t, p, "- a: word word ")
}
