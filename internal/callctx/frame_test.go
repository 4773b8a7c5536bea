package callctx_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// ops are package tool's operations on frames, as the executors reach
// them.
var ops = callctx.OpsOf[*tool.Invoker, tool.Tool, tool.Result, tool.InvokeOption]()

type partIn struct {
	N int `json:"n"`
}

type partOut struct {
	Twice int `json:"twice"`
}

// TestNewFramesGiveTypedToolsRoomForTheirParts runs a batch of calls of
// typed tools through frames from package tool's NewFrames: the results'
// parts share the frames' storage, each with no room to grow, and are the
// results the tools give without it.
func TestNewFramesGiveTypedToolsRoomForTheirParts(t *testing.T) {
	text := tool.MustFunc("text", "", func(_ context.Context, in partIn) (string, error) { return fmt.Sprint("n=", in.N), nil })
	obj := tool.MustFunc("obj", "", func(_ context.Context, in partIn) (partOut, error) { return partOut{Twice: 2 * in.N}, nil })
	result := tool.MustFunc("result", "", func(_ context.Context, in partIn) (tool.Result, error) { return tool.Text("own"), nil })
	raw := tool.MustFunc("raw", "", func(_ context.Context, in partIn) (json.RawMessage, error) { return json.RawMessage(`{"n":1}`), nil })
	for _, c := range []struct {
		tool  tool.Tool
		slots bool
		want  func(i int) string
	}{
		{text, true, func(i int) string { return fmt.Sprint("n=", i) }},
		{tool.Rename(text, "renamed"), true, func(i int) string { return fmt.Sprint("n=", i) }},
		{obj, true, func(i int) string { return fmt.Sprintf(`{"twice":%d}`, 2*i) }},
		{raw, true, func(int) string { return `{"n":1}` }},
		{result, false, func(int) string { return "own" }},
		{nil, false, nil},
	} {
		const n = 3
		frames := ops.NewFrames(n, c.tool)
		require.Len(t, frames, n)
		if c.tool == nil {
			continue
		}
		iv := tool.NewInvoker()
		results := make([]tool.Result, n)
		slots := make([]*model.Part, n)
		for i := range n {
			slots[i] = callctx.PartOf(&frames[i])
			assert.Equal(t, c.slots, slots[i] != nil, tool.Name(c.tool))
			call := model.ToolCall{ID: fmt.Sprint("c", i), Name: tool.Name(c.tool), Arguments: fmt.Appendf(nil, `{"n":%d}`, i)}
			results[i] = ops.Invoke(iv, context.Background(), &frames[i], c.tool, call)
		}
		for i, r := range results {
			require.Len(t, r.Content, 1, tool.Name(c.tool))
			assert.Equal(t, c.want(i), r.Text(), tool.Name(c.tool))
			assert.Equal(t, 1, cap(r.Content), "no room to grow")
			if c.slots {
				assert.Same(t, slots[i], &r.Content[0], "%s: the part is in the frame's room", tool.Name(c.tool))
			}
		}
		// Appending to one result's content leaves the next one alone.
		grown := append(results[0].Content, model.TextPart("more"))
		assert.Equal(t, c.want(1), results[1].Text())
		assert.Len(t, grown, 2)
	}
}

// TestAFrameServesOnePartOnce retries a call on a frame that served
// already: the retry gets a new frame and a part of its own.
func TestAFrameServesOnePartOnce(t *testing.T) {
	text := tool.MustFunc("text", "", func(_ context.Context, in partIn) (string, error) { return fmt.Sprint(in.N), nil })
	frames := ops.NewFrames(2, text)
	iv := tool.NewInvoker()
	first := ops.Invoke(iv, context.Background(), &frames[0], text, model.ToolCall{ID: "a", Name: "text", Arguments: []byte(`{"n":1}`)})
	again := ops.Invoke(iv, context.Background(), &frames[0], text, model.ToolCall{ID: "a", Name: "text", Arguments: []byte(`{"n":2}`)})
	assert.Equal(t, "1", first.Text(), "the first answer is not overwritten")
	assert.Equal(t, "2", again.Text())
	assert.NotSame(t, &first.Content[0], &again.Content[0])
}

// TestServeKeepsTheMarksOfAFrameThatServed checks what a retry on a used
// frame inherits: the permission and preparation marks, for the same tool
// and arguments only.
func TestServeKeepsTheMarksOfAFrameThatServed(t *testing.T) {
	type tl struct{ name string }
	a, b := &tl{"a"}, &tl{"b"}
	call := model.ToolCall{ID: "1", Name: "a", Arguments: json.RawMessage(`{"x":1}`)}

	var f callctx.Frame
	first := callctx.Serve(&f)
	assert.Same(t, &f, first, "an unused frame serves itself")
	f.MarkAuthorized(a, call)
	f.Context().MarkPrepared(a, call.Arguments)
	call.Arguments[5] = '9' // the marks hold copies
	call.Arguments = json.RawMessage(`{"x":1}`)

	retry := callctx.Serve(&f)
	assert.NotSame(t, &f, retry, "a used frame is replaced")
	assert.True(t, retry.Context().Authorized(a, &call))
	assert.True(t, retry.Context().Prepared(a, call.Arguments))
	assert.False(t, retry.Context().Authorized(b, &call), "another tool")
	other := call
	other.Arguments = json.RawMessage(`{"x":2}`)
	assert.False(t, retry.Context().Authorized(a, &other), "other arguments")
	assert.False(t, retry.Context().Prepared(a, other.Arguments))
	renamed := call
	renamed.Name = "b"
	assert.False(t, retry.Context().Authorized(a, &renamed), "another name")

	assert.NotNil(t, callctx.Serve(nil), "no frame gets a new one")
	var unmarked callctx.Frame
	callctx.Serve(&unmarked)
	assert.False(t, callctx.Serve(&unmarked).Context().Authorized(a, &call))
}

// TestAContextAnswersItsCallsKeys checks what a call's context answers:
// its own call, the innermost; a reporter only when it reports.
func TestAContextAnswersItsCallsKeys(t *testing.T) {
	assert.Nil(t, callctx.From(context.Background()))
	outer := callctx.New(context.Background(), "a")
	outer.Ext = &callctx.Ext{Reports: true}
	inner := callctx.New(outer, "b")
	assert.Equal(t, "b", callctx.From(inner).ID)
	assert.Equal(t, "a", callctx.From(outer).ID)
	assert.Same(t, outer, callctx.ReporterFrom(inner), "the innermost call that reports")
	assert.Nil(t, callctx.ReporterFrom(callctx.New(context.Background(), "c")))
	assert.Nil(t, callctx.TakePart(inner), "no room for a part")
}

// TestOpsOfOtherTypesPanics checks that asking for the operations with
// types package tool did not register them with fails loudly.
func TestOpsOfOtherTypesPanics(t *testing.T) {
	assert.Panics(t, func() { callctx.OpsOf[int, tool.Tool, tool.Result, tool.InvokeOption]() })
	assert.Panics(t, func() {
		callctx.Register(&callctx.Ops[*tool.Invoker, tool.Tool, tool.Result, tool.InvokeOption]{})
	}, "registered twice")
}
