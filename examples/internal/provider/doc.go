// Package provider picks the model the examples run on: a real provider
// when the environment selects one (OPENAI_API_KEY, OPENAI_BASE_URL,
// ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, or TRELLIS_PROVIDER by name), else
// none, and the examples run offline on their scripted models.
package provider
