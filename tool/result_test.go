package tool

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

func TestResultHelpers(t *testing.T) {
	assert.Equal(t, Result{Content: []model.Part{model.TextPart("hi")}, Status: StatusSuccess}, Text("hi"))
	assert.Equal(t, Result{Content: []model.Part{model.JSONPart(json.RawMessage(`{"a":1}`))}, Status: StatusSuccess}, JSON(map[string]int{"a": 1}))

	bad := JSON(make(chan int))
	assert.True(t, bad.IsError)
	assert.Equal(t, CodeToolError, bad.ErrorCode)

	err := errors.New("nope")
	e := ErrorResult("quota", err)
	assert.Equal(t, Result{Content: []model.Part{model.TextPart("nope")}, IsError: true, Status: StatusFailed, ErrorCode: "quota", Err: err}, e)
	assert.Equal(t, "count 3 too high", Errorf("count %d too high", 3).Text())

	p := PendingResult("started")
	assert.True(t, p.Pending)
	assert.Equal(t, StatusPending, p.Status)

	mixed := Parts(model.TextPart("a="), model.JSONPart(json.RawMessage(`1`)), model.ImagePart("image/png", []byte{1}))
	assert.Equal(t, "a=1", mixed.Text())

	msg := mixed.Message("call_1", "calc")
	assert.Equal(t, model.RoleTool, msg.Role)
	assert.Equal(t, "call_1", msg.ToolCallID)
	assert.Equal(t, "calc", msg.ToolName)
	assert.Equal(t, mixed.Content, msg.Content)
	assert.True(t, e.Message("c", "t").IsError)
}

func TestResultNormalize(t *testing.T) {
	cases := []struct {
		in, want Result
	}{
		{Result{}, Result{Status: StatusSuccess}},
		{Result{IsError: true}, Result{IsError: true, Status: StatusFailed}},
		{Result{Pending: true}, Result{Pending: true, Status: StatusPending}},
		{Result{Status: StatusTimeout}, Result{Status: StatusTimeout, IsError: true}},
		{Result{Status: StatusDenied}, Result{Status: StatusDenied, IsError: true}},
		{Result{Status: StatusPending}, Result{Status: StatusPending, Pending: true}},
		{Result{Status: StatusSuccess, IsError: true}, Result{Status: StatusFailed, IsError: true}},
	}
	for _, tc := range cases {
		r := tc.in
		r.normalize()
		assert.Equal(t, tc.want, r)
	}
}

func TestAllTerminate(t *testing.T) {
	assert.False(t, AllTerminate(nil))
	assert.True(t, AllTerminate([]Result{{Terminate: true}, {Terminate: true}}))
	assert.False(t, AllTerminate([]Result{{Terminate: true}, {}}), "one tool cannot end a run that called others")
}

func TestTruncate(t *testing.T) {
	r := Parts(model.TextPart("hello "), model.JSONPart(json.RawMessage(`{"k":"value"}`)), model.ImagePart("image/png", make([]byte, 100)))
	assert.Equal(t, r, Truncate(r, 0))
	assert.Equal(t, r, Truncate(r, 1000))

	cut := Truncate(r, 10)
	require.Len(t, cut.Content, 3)
	assert.Equal(t, model.TextPart("hello "), cut.Content[0])
	assert.Equal(t, model.TextPart(`{"k"`), cut.Content[1], "a JSON part cut short becomes text")
	assert.Equal(t, "\n[result truncated: showing 10 of 119 bytes]", cut.Content[2].Text)

	img := Truncate(Parts(model.ImagePart("image/png", make([]byte, 100))), 50)
	require.Len(t, img.Content, 1, "an image that does not fit is dropped")
	assert.Equal(t, "\n[result truncated: showing 0 of 100 bytes]", img.Content[0].Text)
}

func TestResultJSONForm(t *testing.T) {
	r := Result{Content: []model.Part{model.TextPart("x")}, Status: StatusSuccess, Err: errors.New("hidden")}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"content":[{"type":"text","text":"x"}],"status":"success"}`, string(b))
	r.Actions = Actions{Escalate: true}
	b, err = json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"actions":{"escalate":true}`)
	assert.True(t, Actions{}.IsZero())
	assert.False(t, Actions{Update: 1}.IsZero())
}

func TestMergeRule(t *testing.T) {
	var acc Result
	acc.merge(Result{Content: []model.Part{model.TextPart("a")}, Details: 1, Status: StatusSuccess})
	acc.merge(Result{Content: []model.Part{model.TextPart("b"), model.JSONPart(json.RawMessage(`2`))}, Terminate: true, Actions: Actions{TransferTo: "x"}})
	acc.merge(Result{Content: []model.Part{model.TextPart("c")}, Details: 3, ErrorCode: "late", IsError: true})
	assert.Equal(t, []model.Part{model.TextPart("ab"), model.JSONPart(json.RawMessage(`2`)), model.TextPart("c")}, acc.Content)
	assert.Equal(t, 3, acc.Details)
	assert.True(t, acc.Terminate)
	assert.True(t, acc.IsError)
	assert.Equal(t, "late", acc.ErrorCode)
	assert.Equal(t, "x", acc.Actions.TransferTo)

	// Metadata adds up; a later piece's value wins.
	acc.merge(Result{Metadata: map[string]string{"a": "1", "b": "1"}})
	acc.merge(Result{Metadata: map[string]string{"b": "2"}})
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, acc.Metadata)
}

func TestResultMetadataReachesTheMessage(t *testing.T) {
	r := Text("ok")
	r.Metadata = map[string]string{"source": "cache"}
	m := r.Message("c1", "lookup")
	assert.Equal(t, map[string]string{"source": "cache"}, m.Metadata)
	m.Metadata["source"] = "changed"
	assert.Equal(t, "cache", r.Metadata["source"], "the message has a copy")
	assert.Nil(t, Text("ok").Message("c1", "lookup").Metadata)

	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"metadata":{"source":"cache"}`)
}
