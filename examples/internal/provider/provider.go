package provider

import (
	"fmt"
	"os"
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/model/gemini"
	"github.com/trellis-go/trellis/model/openai"
)

// The environment variables Lookup reads.
const (
	// EnvProvider names the provider: openai, anthropic or scripted. When
	// it is unset the provider is the first whose key or base URL is set.
	EnvProvider = "TRELLIS_PROVIDER"

	EnvOpenAIKey     = "OPENAI_API_KEY"
	EnvOpenAIBaseURL = "OPENAI_BASE_URL" // for compatible servers: Ollama, vLLM, LiteLLM...
	EnvOpenAIModel   = "OPENAI_MODEL"
	// EnvOpenAIAPI chooses OpenAI's API: "chat" (Chat Completions, the
	// default) or "responses" (the Responses API).
	EnvOpenAIAPI = "OPENAI_API"

	EnvAnthropicKey     = "ANTHROPIC_API_KEY"
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL"
	EnvAnthropicModel   = "ANTHROPIC_MODEL"

	EnvGeminiKey     = "GEMINI_API_KEY"
	EnvGeminiBaseURL = "GEMINI_BASE_URL" // for a proxy or a test server
	EnvGeminiModel   = "GEMINI_MODEL"
)

// The models used when OPENAI_MODEL or ANTHROPIC_MODEL is not set.
const (
	DefaultOpenAIModel    = "gpt-4o-mini"
	DefaultAnthropicModel = "claude-haiku-4-5"
	DefaultGeminiModel    = "gemini-2.5-flash"
)

// Offline describes the choice of no provider.
const Offline = "scripted (offline; set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY to use a real model)"

// FromEnv is Lookup on the process's environment.
func FromEnv() (model.Model, string, error) { return Lookup(os.Getenv) }

// Lookup returns the model the environment selects, and a description of
// it. The provider is the one TRELLIS_PROVIDER names, else OpenAI when
// OPENAI_API_KEY or OPENAI_BASE_URL is set, else Anthropic when
// ANTHROPIC_API_KEY or ANTHROPIC_BASE_URL is set, else Gemini when
// GEMINI_API_KEY or GEMINI_BASE_URL is set. The model is OPENAI_MODEL
// (default gpt-4o-mini), ANTHROPIC_MODEL (default claude-haiku-4-5) or
// GEMINI_MODEL (default gemini-2.5-flash). OPENAI_API=responses puts the
// OpenAI model on the Responses API.
//
// It returns a nil model, and no error, when no provider is selected or
// TRELLIS_PROVIDER is "scripted": the examples then run offline on their
// scripted models. It returns an error for an unknown provider name, for a
// provider chosen by name without a key or base URL, and for a base URL
// that is not an absolute http or https URL.
//
// Every value is read through getenv, so a test can pass its own
// environment; blank values count as unset.
func Lookup(getenv func(string) string) (model.Model, string, error) {
	get := func(key string) string { return strings.TrimSpace(getenv(key)) }
	name := strings.ToLower(get(EnvProvider))
	if name == "" {
		switch {
		case get(EnvOpenAIKey) != "" || get(EnvOpenAIBaseURL) != "":
			name = "openai"
		case get(EnvAnthropicKey) != "" || get(EnvAnthropicBaseURL) != "":
			name = "anthropic"
		case get(EnvGeminiKey) != "" || get(EnvGeminiBaseURL) != "":
			name = "gemini"
		default:
			name = "scripted"
		}
	}
	switch name {
	case "openai":
		return openAI(get)
	case "anthropic":
		return anthropicModel(get)
	case "gemini":
		return geminiModel(get)
	case "scripted", "offline":
		return nil, Offline, nil
	}
	return nil, "", fmt.Errorf("%s=%q: unknown provider; want openai, anthropic, gemini or scripted", EnvProvider, getenv(EnvProvider))
}

func openAI(get func(string) string) (model.Model, string, error) {
	key, base := get(EnvOpenAIKey), get(EnvOpenAIBaseURL)
	if key == "" && base == "" {
		return nil, "", fmt.Errorf("%s is not set: the OpenAI API needs a key (a compatible server that needs none, such as Ollama, needs %s instead)", EnvOpenAIKey, EnvOpenAIBaseURL)
	}
	name := or(get(EnvOpenAIModel), DefaultOpenAIModel)
	// The key is always passed, even empty, so that the client never falls
	// back on the process's environment behind getenv's back.
	opts := []openai.Option{openai.WithAPIKey(key)}
	describe := "openai " + name
	switch api := strings.ToLower(get(EnvOpenAIAPI)); api {
	case "", "chat":
	case "responses":
		opts = append(opts, openai.WithResponsesAPI())
		describe += " (Responses API)"
	default:
		return nil, "", fmt.Errorf("%s=%q: unknown API; want chat or responses", EnvOpenAIAPI, api)
	}
	if base != "" {
		opts = append(opts, openai.WithBaseURL(base))
		describe += " at " + base
	}
	m, err := openai.New(name, opts...)
	if err != nil {
		if base != "" {
			err = fmt.Errorf("%s: %w", EnvOpenAIBaseURL, err)
		}
		return nil, "", err
	}
	return m, describe, nil
}

func anthropicModel(get func(string) string) (model.Model, string, error) {
	key, base := get(EnvAnthropicKey), get(EnvAnthropicBaseURL)
	if key == "" && base == "" {
		return nil, "", fmt.Errorf("%s is not set: the Anthropic API needs a key", EnvAnthropicKey)
	}
	name := or(get(EnvAnthropicModel), DefaultAnthropicModel)
	opts := []anthropic.Option{anthropic.WithAPIKey(key)}
	describe := "anthropic " + name
	if base != "" {
		opts = append(opts, anthropic.WithBaseURL(base))
		describe += " at " + base
	}
	m, err := anthropic.New(name, opts...)
	if err != nil {
		if base != "" {
			err = fmt.Errorf("%s: %w", EnvAnthropicBaseURL, err)
		}
		return nil, "", err
	}
	return m, describe, nil
}

func geminiModel(get func(string) string) (model.Model, string, error) {
	key, base := get(EnvGeminiKey), get(EnvGeminiBaseURL)
	if key == "" && base == "" {
		return nil, "", fmt.Errorf("%s is not set: the Gemini API needs a key", EnvGeminiKey)
	}
	if key == "" {
		// The SDK refuses to start without a key, and a test server takes
		// any.
		key = "unused"
	}
	name := or(get(EnvGeminiModel), DefaultGeminiModel)
	opts := []gemini.Option{gemini.WithAPIKey(key)}
	describe := "gemini " + name
	if base != "" {
		opts = append(opts, gemini.WithBaseURL(base))
		describe += " at " + base
	}
	m, err := gemini.New(name, opts...)
	if err != nil {
		if base != "" {
			err = fmt.Errorf("%s: %w", EnvGeminiBaseURL, err)
		}
		return nil, "", err
	}
	return m, describe, nil
}

func or(v, fallback string) string {
	if v != "" {
		return v
	}
	return fallback
}
