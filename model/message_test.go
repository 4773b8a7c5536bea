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

func TestSettingsOverride(t *testing.T) {
	t1, t2 := 0.1, 0.9
	seed := int64(7)
	defaults := model.Settings{Temperature: &t1, MaxTokens: 100, Stop: []string{"x"}}
	got := defaults.Override(model.Settings{Temperature: &t2, Seed: &seed})
	assert.Equal(t, model.Settings{Temperature: &t2, MaxTokens: 100, Stop: []string{"x"}, Seed: &seed}, got)
	assert.Equal(t, 0.1, *defaults.Temperature, "the defaults are not modified")
	assert.Equal(t, defaults, defaults.Override(model.Settings{}))
}
