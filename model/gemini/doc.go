// Package gemini connects Trellis to Google's Gemini models on the Gemini
// API, through the official SDK, google.golang.org/genai.
//
// New takes the model name and options; the API key comes from WithAPIKey
// or else from GEMINI_API_KEY (or GOOGLE_API_KEY):
//
//	m, err := gemini.New("gemini-2.5-flash", gemini.WithThinkingBudget(1024), gemini.WithThoughts())
//
// Requests map to generateContent: system messages to the system
// instruction; user messages (text, images inline or by URL); assistant
// messages (thoughts with their signatures, text, images, function calls);
// tool messages, each run of them one turn of function responses whose
// images go in the response's own parts, so the model sees them; function
// declarations with the tools' JSON Schema as it is; tool choice; a
// response JSON schema; and sampling settings. Thinking is set per model
// (WithThinkingBudget, WithThinkingLevel, WithThoughts); the thought
// summaries come back as reasoning parts, and the thought signatures
// Gemini puts on function calls and text are kept in the message's
// metadata (MetaCallSignature, MetaTextSignature) and sent back with it,
// as the API requires. Images the model draws (WithResponseModalities)
// come back as image parts; parts with no counterpart here (code the model
// ran and its result) as provider parts (PartMIMEType), sent back as they
// came. Function calls that come without an ID get one, which is not sent
// back.
//
// Every request goes through the model's stream limits: a server that
// sends nothing for model.DefaultStreamIdleTimeout, or whose event or
// reply passes its cap, fails the call with an error naming the limit
// (WithStreamLimits). One attempt of Generate is bounded by DefaultTimeout
// (WithTimeout). Transient failures (429, 408, 409, 5xx, connection
// errors, an error event before the reply began) are retried with backoff,
// honouring the RetryInfo the API sends; every failure of the API is a
// *model.ProviderError with the HTTP status, Google's status name as Type
// ("RESOURCE_EXHAUSTED", "UNAVAILABLE", "INVALID_ARGUMENT") and the
// message, and a request past the model's window has the Code
// "context_length_exceeded".
//
// NewEmbedder gives the Gemini API's embedding models as a model.Embedder
// (batchEmbedContents, DefaultEmbedBatch texts a request), with the same
// options, retries and error classes.
package gemini
