package provider

import (
	"os"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/model/openai"
)

// FromEnv returns a model for the first provider whose key is set:
// OPENAI_API_KEY (with OPENAI_BASE_URL for compatible servers such as Ollama
// or vLLM, and OPENAI_MODEL, default gpt-4o-mini), then ANTHROPIC_API_KEY
// (with ANTHROPIC_MODEL, default claude-sonnet-4-5). It returns nil when no
// key is set, and a description of the choice.
func FromEnv() (model.Model, string, error) {
	if os.Getenv("OPENAI_API_KEY") != "" || os.Getenv("OPENAI_BASE_URL") != "" {
		name := env("OPENAI_MODEL", "gpt-4o-mini")
		m, err := openai.New(name)
		return m, "openai " + name, err
	}
	if os.Getenv("ANTHROPIC_API_KEY") != "" {
		name := env("ANTHROPIC_MODEL", "claude-sonnet-4-5")
		m, err := anthropic.New(name)
		return m, "anthropic " + name, err
	}
	return nil, "scripted (offline; set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real model)", nil
}

func env(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}
