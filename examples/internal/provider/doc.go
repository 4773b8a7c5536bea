// Package provider picks the model the examples run on: a real provider
// when the environment selects one (OPENAI_API_KEY, OPENAI_BASE_URL,
// ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, GEMINI_API_KEY, GEMINI_BASE_URL,
// or TRELLIS_PROVIDER by name; OPENAI_API=responses for OpenAI's Responses
// API), else none, and the examples run offline on their scripted models.
package provider
