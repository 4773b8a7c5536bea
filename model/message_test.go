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

func TestAudioAndResourcePartsTextFallback(t *testing.T) {
	text := model.TextResourcePart("test://n", "text/plain", "note")
	blob := model.BlobResourcePart("test://z", "application/zip", []byte("PK"))
	audio := model.AudioPart("audio/wav", []byte("RIFF"))
	if got := text.TextFallback(); got != "note" {
		t.Errorf("text resource fallback = %q, want its text", got)
	}
	if got := blob.TextFallback(); got != "[resource test://z (application/zip, 2 bytes)]" {
		t.Errorf("blob resource fallback = %q", got)
	}
	if got := audio.TextFallback(); got != "[audio (audio/wav, 4 bytes)]" {
		t.Errorf("audio fallback = %q", got)
	}
	m := model.Message{Role: model.RoleTool, Content: []model.Part{model.TextPart("a "), text, blob, audio}}
	if got := m.Text(); got != "a note" {
		t.Errorf("Text() = %q, want the text and the text resource only", got)
	}
}
