package tool

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

func TestFastPathDeclinesToTheFullPipeline(t *testing.T) {
	var runs []searchArgs
	ft := MustFunc("search", "", func(_ context.Context, in searchArgs) (string, error) {
		runs = append(runs, in)
		return in.Query, nil
	})
	iv := NewInvoker()
	invoke := func(args string, opts ...InvokeOption) Result {
		return iv.Invoke(context.Background(), ft, model.ToolCall{ID: "c", Name: "search", Arguments: json.RawMessage(args)}, opts...)
	}

	r := invoke(`{"query":"fast","limit":5,"tags":["a"]}`)
	require.False(t, r.IsError, r.Text())
	r = invoke(`{"query":"coerced","limit":"5","tags":"[\"a\"]"}`)
	require.False(t, r.IsError, r.Text())
	r = invoke(`{'query': 'repaired', limit: 5,}`, WithJSONRepair(true))
	require.False(t, r.IsError, r.Text())
	r = invoke(`{"query":"valid JSON with repair on"}`, WithJSONRepair(true))
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, []searchArgs{
		{Query: "fast", Limit: 5, Tags: []string{"a"}},
		{Query: "coerced", Limit: 5, Tags: []string{"a"}},
		{Query: "repaired", Limit: 5},
		{Query: "valid JSON with repair on"},
	}, runs)

	runs = nil
	r = invoke(`{"limit":500,"tags":[1,{}],"color":"red"}`)
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	var aerr *ArgumentError
	require.ErrorAs(t, r.Err, &aerr)
	assert.Equal(t, []FieldError{
		{Path: "$", Message: "required property is missing"},
	}[0].Message, "required property is missing")
	paths := map[string]string{}
	for _, f := range aerr.Fields {
		paths[f.Path] = f.Message
	}
	assert.Contains(t, paths, "$.query")
	assert.Contains(t, paths, "$.limit")
	assert.Contains(t, paths, "$.tags[1]")
	assert.Contains(t, paths, "$.color")
	assert.Equal(t, `{"limit":500,"tags":[1,{}],"color":"red"}`, aerr.Received)
	assert.Contains(t, r.Text(), "The tool did not run.")
	assert.Empty(t, runs, "the body never runs on invalid arguments")

	// The tool's own Call takes the same paths.
	r, err := ft.Call(context.Background(), "c", json.RawMessage(`{"query":"direct"}`))
	require.NoError(t, err)
	assert.Equal(t, "direct", r.Text())
	r, err = ft.Call(context.Background(), "c", json.RawMessage(`{"query":"direct","limit":51}`))
	require.NoError(t, err)
	assert.Contains(t, r.Text(), "$.limit: must be <= 50, got 51")
}

func TestFastPathForRawAndStreamingTools(t *testing.T) {
	var got []string
	raw, err := New(model.ToolDefinition{Name: "raw", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":3}},"additionalProperties":false}`)},
		func(_ context.Context, _ string, args json.RawMessage) (Result, error) {
			got = append(got, string(args))
			return Text("ok"), nil
		})
	require.NoError(t, err)
	for _, args := range []string{`{ "n" : 2 }`, `{"n":"2"}`, ``, `{"n":4}`, `{"m":1}`} {
		Invoke(context.Background(), raw, model.ToolCall{ID: "c", Name: "raw", Arguments: json.RawMessage(args)})
	}
	assert.Equal(t, []string{`{ "n" : 2 }`, `{"n":2}`, `{}`}, got, "arguments pass as sent unless coercion changed them")

	st := MustStreamFunc("words", "", func(_ context.Context, in searchArgs) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			for _, w := range strings.Fields(in.Query) {
				if !yield(w, nil) {
					return
				}
			}
		}
	})
	r := Invoke(context.Background(), st, model.ToolCall{ID: "c", Name: "words", Arguments: json.RawMessage(`{"query":"a b"}`)})
	assert.Equal(t, "ab", r.Text())
	r = Invoke(context.Background(), Rename(st, "other"), model.ToolCall{ID: "c", Name: "other", Arguments: json.RawMessage(`{"query":"c d","limit":"2"}`)})
	assert.Equal(t, "cd", r.Text())
	r = Invoke(context.Background(), st, model.ToolCall{ID: "c", Name: "words", Arguments: json.RawMessage(`{"query":1,"limit":99}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), "$.limit: must be <= 50, got 99")
}
