// Package modelmw wraps model calls in middleware, the way package
// executor wraps tool calls: a Middleware takes the rest of the chain (a
// model.Model) and returns a model.Model, and Chain stacks them around a
// model. The result is a model.Model too, so any model, of any provider,
// can be wrapped, and anything that calls a model (the LLM node, an agent,
// a summarizer) takes the wrapped one unchanged.
//
// A middleware sees a call as a *model.Request and either a complete
// reply (Generate) or a stream of chunks (Stream). Streams pass through
// without being buffered unless a middleware needs the whole reply
// (After, Intercept, and the guardrails that judge the reply as a whole);
// the helpers Before, After, OnChunk and Intercept write the common shapes
// in a line each, and Funcs adapts a pair of functions to a model.Model
// for the rest.
//
// The standard middleware: Retry (backoff that honours Retry-After, with
// the model package's error classes), Fallback (another model on named
// error classes), RateLimit (requests and tokens per minute), Cache (exact
// match, off unless added), Log (slog) and Telemetry (OpenTelemetry chat
// spans and GenAI metrics). Usage is recorded into the Ledger a run's
// context carries (WithLedger) by every chain, and Budget stops a run
// before the call that would exceed its limit. Guard runs input and output
// guardrails, which stop a run with a *TripwireError; RedactPII rewrites
// what the model is sent. Trim keeps a conversation within a token limit
// without separating a tool call from its results; Summarize replaces its
// older turns with a summary that the LLM node stores in the thread.
package modelmw
