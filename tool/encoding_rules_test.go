package tool

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

type quotedPtr struct {
	N *int `json:"n,string"`
}

// encoding/json applies ",string" to a pointer to a number as well, and so
// does the decoder.
func TestQuotedPointerFieldDecodes(t *testing.T) {
	var std quotedPtr
	require.NoError(t, json.Unmarshal([]byte(`{"n":"42"}`), &std))
	require.Equal(t, 42, *std.N)

	ft := MustFunc("q", "", func(_ context.Context, in quotedPtr) (string, error) {
		if in.N == nil {
			return "nil", nil
		}
		return strconv.Itoa(*in.N), nil
	})
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "1", Name: "q", Arguments: json.RawMessage(`{"n":"42"}`)})
	assert.False(t, r.IsError, r.Text())
	assert.Equal(t, "42", r.Text())
}

type idInt struct {
	ID int
}
type idStr struct {
	ID string
}

// Two embedded structs give "ID" at the same depth, both untagged:
// encoding/json and the decoder drop the ambiguous name, and so does the
// derived schema.
type ambiguousID struct {
	idInt
	idStr
	X string `json:"x"`
}

func TestSchemaLeavesOutAmbiguousEmbeddedFields(t *testing.T) {
	ft := MustFunc("amb", "", func(_ context.Context, in ambiguousID) (string, error) { return in.X, nil })
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "1", Name: "amb", Arguments: json.RawMessage(`{"x":"a"}`)})
	assert.False(t, r.IsError, r.Text())
	assert.NotContains(t, string(ft.Definition().InputSchema), `"ID"`, "the schema declares a property no field receives")
}

type tagList []string

// An unexported embedded non-struct type is not a JSON field: the derived
// schema leaves it out, as encoding/json and the decoder do.
type embeddedSlice struct {
	tagList
	X string `json:"x"`
}

func TestSchemaLeavesOutUnexportedEmbeddedNonStructs(t *testing.T) {
	ft := MustFunc("emb", "", func(_ context.Context, in embeddedSlice) (string, error) { return in.X, nil })
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "1", Name: "emb", Arguments: json.RawMessage(`{"x":"a"}`)})
	assert.False(t, r.IsError, r.Text())
	assert.NotContains(t, string(ft.Definition().InputSchema), "tagList")
}

type quotedPtrs struct {
	N *int    `json:"n,string"`
	S *string `json:"s,string,omitempty"`
	B *bool   `json:"b,string,omitempty"`
}

func TestQuotedPointerFieldsDecodeLikeEncodingJSON(t *testing.T) {
	ft := MustFunc("q", "", func(_ context.Context, in quotedPtrs) (quotedPtrs, error) { return in, nil })
	for _, args := range []string{`{"n":"42"}`, `{"n":"42","s":"\"abc\"","b":"true"}`, `{"n":"null"}`, `{"n":null}`, `{}`} {
		var want quotedPtrs
		require.NoError(t, json.Unmarshal([]byte(args), &want), args)
		r := Invoke(context.Background(), ft, model.ToolCall{ID: "1", Name: "q", Arguments: json.RawMessage(args)})
		require.False(t, r.IsError, "%s: %s", args, r.Text())
		wantJSON, _ := json.Marshal(want)
		assert.JSONEq(t, string(wantJSON), r.Text(), args)
	}
}
