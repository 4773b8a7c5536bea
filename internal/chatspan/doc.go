// Package chatspan reports a model call to OpenTelemetry: a "chat {model}"
// client span with the GenAI semantic convention's attributes, and the
// GenAI client metrics (operation duration, token usage). The LLM node and
// the model-call middleware modelmw.Telemetry report calls with it, so
// both speak the same conventions.
package chatspan
