package tool

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

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
