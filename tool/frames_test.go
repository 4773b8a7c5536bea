package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

type partIn struct {
	N int `json:"n"`
}

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

// TestNewFramesGiveTypedToolsRoomForTheirParts runs a batch of calls of
// typed tools through frames from NewFrames: the results' parts share the
// frames' storage, each with no room to grow, and are the results the
// tools give without it.
func TestNewFramesGiveTypedToolsRoomForTheirParts(t *testing.T) {
	text := MustFunc("text", "", func(_ context.Context, in partIn) (string, error) { return fmt.Sprint("n=", in.N), nil })
	obj := MustFunc("obj", "", func(_ context.Context, in partIn) (partOut, error) { return partOut{Twice: 2 * in.N}, nil })
	result := MustFunc("result", "", func(_ context.Context, in partIn) (Result, error) { return Text("own"), nil })
	raw := MustFunc("raw", "", func(_ context.Context, in partIn) (json.RawMessage, error) { return json.RawMessage(`{"n":1}`), nil })
	for _, c := range []struct {
		tool  Tool
		slots bool
		want  func(i int) string
	}{
		{text, true, func(i int) string { return fmt.Sprint("n=", i) }},
		{Rename(text, "renamed"), true, func(i int) string { return fmt.Sprint("n=", i) }},
		{obj, true, func(i int) string { return fmt.Sprintf(`{"twice":%d}`, 2*i) }},
		{raw, true, func(int) string { return `{"n":1}` }},
		{result, false, func(int) string { return "own" }},
		{nil, false, nil},
	} {
		const n = 3
		frames := NewFrames(n, c.tool)
		require.Len(t, frames, n)
		if c.tool == nil {
			continue
		}
		var iv Invoker
		results := make([]Result, n)
		slots := make([]*model.Part, n)
		for i := range n {
			slots[i] = frames[i].cc.part
			assert.Equal(t, c.slots, slots[i] != nil, Name(c.tool))
			call := model.ToolCall{ID: fmt.Sprint("c", i), Name: Name(c.tool), Arguments: fmt.Appendf(nil, `{"n":%d}`, i)}
			results[i] = iv.InvokeFrame(context.Background(), &frames[i], c.tool, call)
		}
		for i, r := range results {
			require.Len(t, r.Content, 1, Name(c.tool))
			assert.Equal(t, c.want(i), r.Text(), Name(c.tool))
			assert.Equal(t, 1, cap(r.Content), "no room to grow")
			if c.slots {
				assert.Same(t, slots[i], &r.Content[0], "%s: the part is in the frame's room", Name(c.tool))
			}
		}
		// Appending to one result's content leaves the next one alone.
		grown := append(results[0].Content, model.TextPart("more"))
		assert.Equal(t, c.want(1), results[1].Text())
		assert.Len(t, grown, 2)
	}
}

// TestFrameServesOnePartOnce retries a call on a frame that served
// already: the retry gets a new frame and a part of its own.
func TestFrameServesOnePartOnce(t *testing.T) {
	text := MustFunc("text", "", func(_ context.Context, in partIn) (string, error) { return fmt.Sprint(in.N), nil })
	frames := NewFrames(2, text)
	var iv Invoker
	first := iv.InvokeFrame(context.Background(), &frames[0], text, model.ToolCall{ID: "a", Name: "text", Arguments: []byte(`{"n":1}`)})
	again := iv.InvokeFrame(context.Background(), &frames[0], text, model.ToolCall{ID: "a", Name: "text", Arguments: []byte(`{"n":2}`)})
	assert.Equal(t, "1", first.Text(), "the first answer is not overwritten")
	assert.Equal(t, "2", again.Text())
	assert.NotSame(t, &first.Content[0], &again.Content[0])
}
