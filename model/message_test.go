package model_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trellis-go/trellis/model"
)

func TestMessageTextIncludesJSONParts(t *testing.T) {
	m := model.ToolMessage("c1", "add", false, model.JSONPart([]byte(`42`)))
	assert.Equal(t, "42", m.Text())
	m.Content = append(m.Content, model.ImagePart("image/png", []byte{1}), model.TextPart(" units"))
	assert.Equal(t, "42 units", m.Text())
	assert.Equal(t, "", model.Message{}.Text())
}
