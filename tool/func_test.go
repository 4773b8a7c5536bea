package tool

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

type searchArgs struct {
	Query string   `json:"query" jsonschema:"minLength=1"`
	Limit int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50"`
	Tags  []string `json:"tags,omitempty"`
}

func call(args string) model.ToolCall {
	return model.ToolCall{ID: "call_1", Name: "search", Arguments: json.RawMessage(args)}
}

func TestBodyNeverRunsWhenValidationFails(t *testing.T) {
	var runs atomic.Int32
	ft := MustFunc("search", "Search", func(_ context.Context, in searchArgs) (string, error) {
		runs.Add(1)
		return "ran", nil
	})
	bad := []string{
		`{"limit":5}`,                  // missing query
		`{"query":"","limit":5}`,       // too short
		`{"query":"x","limit":"many"}`, // not a number
		`{"query":"x","limit":500}`,    // too large
		`{"query":"x","bogus":true}`,   // unknown property
		`{"query":"x","tags":"a,b"}`,   // not an array
		`{"query":"x"`,                 // not JSON (repair off)
		`["query"]`,                    // not an object
	}
	for _, args := range bad {
		t.Run(args, func(t *testing.T) {
			r := Invoke(context.Background(), ft, call(args))
			assert.True(t, r.IsError)
			assert.Equal(t, StatusFailed, r.Status)
			assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
			assert.ErrorIs(t, r.Err, ErrInvalidArguments)
			var aerr *ArgumentError
			require.ErrorAs(t, r.Err, &aerr)
			assert.NotEmpty(t, aerr.Fields)
			assert.Equal(t, args, aerr.Received)
			assert.Contains(t, r.Text(), "arguments received: "+args)
			assert.Contains(t, r.Text(), "The tool did not run")
			assert.Same(t, aerr, r.Details)

			// Calling the tool directly runs the same checks.
			direct, err := ft.Call(context.Background(), "call_1", json.RawMessage(args))
			require.NoError(t, err)
			assert.Equal(t, CodeInvalidArguments, direct.ErrorCode)
		})
	}
	assert.Zero(t, runs.Load(), "the body never ran")
}

func TestFuncToolDecodesCoercedArguments(t *testing.T) {
	var got searchArgs
	ft := MustFunc("search", "Search", func(_ context.Context, in searchArgs) (string, error) {
		got = in
		return "ok", nil
	})
	r := Invoke(context.Background(), ft, call(`{"query":42,"limit":"7","tags":["a"]}`))
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, searchArgs{Query: "42", Limit: 7, Tags: []string{"a"}}, got)
	assert.Equal(t, StatusSuccess, r.Status)
}

func TestFuncToolOutputs(t *testing.T) {
	type out struct {
		Total int `json:"total"`
	}
	ctx := context.Background()
	cases := []struct {
		name string
		tool Tool
		want Result
	}{
		{"string", MustFunc("t", "", func(context.Context, searchArgs) (string, error) { return "hello", nil }),
			Result{Content: []model.Part{model.TextPart("hello")}, Status: StatusSuccess}},
		{"struct", MustFunc("t", "", func(context.Context, searchArgs) (out, error) { return out{Total: 3}, nil }),
			Result{Content: []model.Part{model.JSONPart(json.RawMessage(`{"total":3}`))}, Status: StatusSuccess}},
		{"part", MustFunc("t", "", func(context.Context, searchArgs) (model.Part, error) {
			return model.ImagePart("image/png", []byte{1, 2}), nil
		}), Result{Content: []model.Part{model.ImagePart("image/png", []byte{1, 2})}, Status: StatusSuccess}},
		{"parts", MustFunc("t", "", func(context.Context, searchArgs) ([]model.Part, error) {
			return []model.Part{model.TextPart("a"), model.TextPart("b")}, nil
		}), Result{Content: []model.Part{model.TextPart("a"), model.TextPart("b")}, Status: StatusSuccess}},
		{"result", MustFunc("t", "", func(context.Context, searchArgs) (Result, error) {
			return Result{Content: []model.Part{model.TextPart("done")}, Terminate: true, Actions: Actions{TransferTo: "billing"}}, nil
		}), Result{Content: []model.Part{model.TextPart("done")}, Terminate: true, Status: StatusSuccess, Actions: Actions{TransferTo: "billing"}}},
		{"raw JSON", MustFunc("t", "", func(context.Context, searchArgs) (json.RawMessage, error) { return json.RawMessage(`[1,2]`), nil }),
			Result{Content: []model.Part{model.JSONPart(json.RawMessage(`[1,2]`))}, Status: StatusSuccess}},
		{"nil any", MustFunc("t", "", func(context.Context, searchArgs) (any, error) { return nil, nil }),
			Result{Status: StatusSuccess}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Invoke(ctx, tc.tool, model.ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{"query":"q"}`)})
			assert.Equal(t, tc.want, r)
		})
	}

	bad := MustFunc("t", "", func(context.Context, searchArgs) (json.RawMessage, error) { return json.RawMessage(`{nope`), nil })
	r := Invoke(ctx, bad, model.ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{"query":"q"}`)})
	assert.True(t, r.IsError)
	unmarshalable := MustFunc("t", "", func(context.Context, searchArgs) (chan int, error) { return make(chan int), nil })
	r = Invoke(ctx, unmarshalable, model.ToolCall{ID: "c", Name: "t", Arguments: json.RawMessage(`{"query":"q"}`)})
	assert.True(t, r.IsError)
	assert.Contains(t, r.Text(), "marshal result")
}

func TestNewFuncWithSchema(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city"]}`)
	var seen map[string]any
	ft, err := NewFuncWithSchema("forecast", "Forecast", schema, func(_ context.Context, in map[string]any) (string, error) {
		seen = in
		return "sunny", nil
	})
	require.NoError(t, err)
	assert.JSONEq(t, string(schema), string(ft.Definition().InputSchema))
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "c", Name: "forecast", Arguments: json.RawMessage(`{"city":"Oslo","days":"3"}`)})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, map[string]any{"city": "Oslo", "days": float64(3)}, seen)

	r = Invoke(context.Background(), ft, model.ToolCall{ID: "c", Name: "forecast", Arguments: json.RawMessage(`{"days":0}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)

	_, err = NewFuncWithSchema("forecast", "", json.RawMessage(`{"type":"nope"}`), func(context.Context, map[string]any) (string, error) { return "", nil })
	assert.ErrorIs(t, err, ErrInvalidSchema)
	_, err = NewFuncWithSchema("forecast", "", nil, func(context.Context, map[string]any) (string, error) { return "", nil })
	assert.ErrorIs(t, err, ErrInvalidSchema)
}

func TestConstructorsRejectNilFunctions(t *testing.T) {
	_, err := NewFunc[searchArgs, string]("t", "", nil)
	assert.ErrorIs(t, err, ErrInvalidTool)
	_, err = NewStreamFunc[searchArgs, string]("t", "", nil)
	assert.ErrorIs(t, err, ErrInvalidTool)
	_, err = New(model.ToolDefinition{Name: "t"}, nil)
	assert.ErrorIs(t, err, ErrInvalidTool)
	assert.Panics(t, func() {
		MustFunc[searchArgs, string]("bad name", "", func(context.Context, searchArgs) (string, error) { return "", nil })
	})
}

func TestRawTool(t *testing.T) {
	var received []json.RawMessage
	rt, err := New(model.ToolDefinition{
		Name:         "echo",
		Description:  "Echo",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		OutputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, callID string, args json.RawMessage) (Result, error) {
		received = append(received, args)
		return Text(CallID(ctx) + ":" + callID), nil
	}, WithMetadata(Metadata{ReadOnly: true}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object"}`, string(rt.Definition().OutputSchema))
	assert.True(t, MetadataOf(rt).ReadOnly)

	iv := NewInvoker()
	exact := json.RawMessage(`{"n": 3}`)
	r := iv.Invoke(context.Background(), rt, model.ToolCall{ID: "c9", Name: "echo", Arguments: exact})
	assert.Equal(t, "c9:c9", r.Text())
	r = iv.Invoke(context.Background(), rt, model.ToolCall{ID: "c9", Name: "echo", Arguments: json.RawMessage(`{"n":"4"}`)})
	require.False(t, r.IsError)
	r = iv.Invoke(context.Background(), rt, model.ToolCall{ID: "c9", Name: "echo", Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	require.Len(t, received, 2)
	assert.Same(t, &exact[0], &received[0][0], "unchanged arguments are passed as received, not re-encoded")
	assert.JSONEq(t, `{"n":4}`, string(received[1]), "coerced arguments are re-encoded")

	noSchema, err := New(model.ToolDefinition{Name: "ping"}, func(context.Context, string, json.RawMessage) (Result, error) { return Text("pong"), nil })
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(noSchema.Definition().InputSchema))
	assert.Equal(t, "pong", Invoke(context.Background(), noSchema, model.ToolCall{ID: "1", Name: "ping"}).Text(), "empty arguments mean {}")
}

func TestDeclarationOnly(t *testing.T) {
	d, err := NewDeclaration(model.ToolDefinition{Name: "client_search", Description: "Runs in the browser",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)})
	require.NoError(t, err)
	assert.True(t, IsDeclarationOnly(d))
	assert.True(t, IsDeclarationOnly(Rename(d, "renamed")))
	r := Invoke(context.Background(), d, model.ToolCall{ID: "1", Name: "client_search", Arguments: json.RawMessage(`{"q":"x"}`)})
	assert.Equal(t, CodeDeclarationOnly, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrDeclarationOnly)
	direct, err := d.Call(context.Background(), "1", nil)
	require.NoError(t, err)
	assert.Equal(t, CodeDeclarationOnly, direct.ErrorCode)

	_, err = NewDeclaration(model.ToolDefinition{Name: "x", InputSchema: json.RawMessage(`{"type":1}`)})
	assert.ErrorIs(t, err, ErrInvalidSchema)
}

func TestToolReturnsError(t *testing.T) {
	boom := errors.New("backend unavailable")
	ft := MustFunc("search", "", func(context.Context, searchArgs) (string, error) { return "", boom })
	r := Invoke(context.Background(), ft, call(`{"query":"x"}`))
	assert.True(t, r.IsError)
	assert.Equal(t, StatusFailed, r.Status)
	assert.Equal(t, CodeToolError, r.ErrorCode)
	assert.ErrorIs(t, r.Err, boom)
	assert.Equal(t, `tool "search" failed: backend unavailable`, r.Text())
}
