package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

type partOut struct {
	Twice int `json:"twice"`
}

func TestOnePartOut(t *testing.T) {
	assert.True(t, onePartOut[string]())
	assert.True(t, onePartOut[model.Part]())
	assert.True(t, onePartOut[json.RawMessage]())
	assert.True(t, onePartOut[partOut]())
	assert.True(t, onePartOut[[]int]())
	assert.False(t, onePartOut[Result]())
	assert.False(t, onePartOut[*Result]())
	assert.False(t, onePartOut[[]model.Part]())
	assert.False(t, onePartOut[any]())
	assert.False(t, onePartOut[fmt.Stringer]())
}

// label is a named string type: a typed tool's output of it is marshalled
// (a JSON string), not a text part.
type label string

// TestTypedToolsOfStringOutputAnswerAsTheirResultSays runs typed tools
// whose output is a string (which take the text path, see textCaller)
// and one whose output is a named string type (which does not), with and
// without an error, and compares each answer with the result toResult
// and callOutcome make of the output.
func TestTypedToolsOfStringOutputAnswerAsTheirResultSays(t *testing.T) {
	type in struct {
		Text string `json:"text"`
	}
	boom := errors.New("boom")
	text := MustFunc("text", "", func(_ context.Context, a in) (string, error) { return "got " + a.Text, nil })
	textErr := MustFunc("text_err", "", func(_ context.Context, a in) (string, error) { return "partial", boom })
	named := MustFunc("named", "", func(_ context.Context, a in) (label, error) { return label(a.Text), nil })
	require.True(t, text.toolProfile().tc != nil, "a string output takes the text path")
	require.Nil(t, named.toolProfile().tc, "a named string type does not")

	iv := NewInvoker()
	call := model.ToolCall{ID: "c1", Arguments: []byte(`{"text":"x"}`)}
	ctx := context.Background()

	call.Name = "text"
	got := iv.Invoke(ctx, text, call)
	assert.Equal(t, Text("got x"), got)

	call.Name = "text_err"
	got = iv.Invoke(ctx, textErr, call)
	assert.True(t, got.IsError)
	assert.ErrorIs(t, got.Err, boom)
	assert.Equal(t, StatusFailed, got.Status)

	call.Name = "named"
	got = iv.Invoke(ctx, named, call)
	assert.Equal(t, `"x"`, got.Text())
	assert.Equal(t, model.PartJSON, got.Content[0].Type)
}
