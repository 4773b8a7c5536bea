package tool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

func TestDecodeGoValuesFromPrepareArguments(t *testing.T) {
	type point struct {
		X, Y int
	}
	type args struct {
		N     int               `json:"n"`
		F     float64           `json:"f"`
		U     uint              `json:"u"`
		Names []string          `json:"names"`
		P     point             `json:"p"`
		M     map[string]string `json:"m"`
	}
	var got args
	ft := MustFunc("prep", "", func(_ context.Context, in args) (string, error) { got = in; return "", nil },
		WithPrepareArguments(func(m map[string]any) map[string]any {
			m["n"] = int8(-3)
			m["f"] = float32(1.5)
			m["u"] = uint64(7)
			m["names"] = []string{"a", "b"}
			m["p"] = point{X: 1, Y: 2}
			m["m"] = map[string]string{"k": "v"}
			return m
		}))
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "1", Name: "prep", Arguments: json.RawMessage(`{}`)})
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, args{N: -3, F: 1.5, U: 7, Names: []string{"a", "b"}, P: point{1, 2}, M: map[string]string{"k": "v"}}, got)

	bad := MustFunc("prep", "", func(context.Context, args) (string, error) { return "", nil },
		WithPrepareArguments(func(m map[string]any) map[string]any { m["n"] = func() {}; return m }))
	r = Invoke(context.Background(), bad, model.ToolCall{ID: "1", Name: "prep", Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), "PrepareArguments produced a value that is not JSON")

	nilMap := MustFunc("prep", "", func(context.Context, struct{}) (string, error) { return "ok", nil },
		WithPrepareArguments(func(map[string]any) map[string]any { return nil }))
	r = Invoke(context.Background(), nilMap, model.ToolCall{ID: "1", Name: "prep", Arguments: json.RawMessage(`{"x":1}`)})
	assert.Equal(t, "ok", r.Text(), "a nil map from the hook means no arguments")
}
