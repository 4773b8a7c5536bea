// Package openai connects Trellis to the OpenAI Chat Completions API and to
// the many servers that speak it — Ollama, vLLM, LM Studio, llama.cpp's
// server, LiteLLM and others — through github.com/openai/openai-go.
//
// New takes the model name and options. The base URL and API key come from
// WithBaseURL and WithAPIKey, or else from the OPENAI_BASE_URL and
// OPENAI_API_KEY environment variables; an option always wins over the
// environment. An empty OPENAI_BASE_URL counts as unset, and a base URL
// that is not an absolute http or https URL makes New fail. Pointing the
// base URL at a compatible server is all it takes to use it:
//
//	m, err := openai.New("llama3.2", openai.WithBaseURL("http://localhost:11434/v1"))
//
// Requests map to chat completions: system, user (text and images), assistant
// (text and tool calls) and tool messages; function tools with their JSON
// Schema; tool choice; a response format with a JSON schema; and sampling
// settings. Stream reads server-sent events, asks for usage in the last
// chunk, and passes tool-call fragments on by index so that model.Collect
// reassembles parallel calls. A stream whose server sends nothing for
// model.DefaultStreamIdleTimeout (10 minutes: a reasoning model may think
// that long without a word), or whose event or whole reply passes its cap,
// fails with an error naming the limit (WithStreamLimits changes them).
//
// WithResponsesAPI puts a model on the Responses API instead: the whole
// conversation is sent as input items with nothing stored on the server;
// reasoning items come back as reasoning parts (their summaries) and
// provider parts (the items whole, encrypted content included,
// ItemMIMEType) that go back in the next request; built-in tools
// (WithBuiltinTools: web search, file search, ...) are offered as the
// API's own JSON and their calls come back as provider parts; a
// ResponseFormat is sent as text.format; tool results with images are sent
// as output lists of text and images.
//
// Transient failures (429, 408, 409, 5xx, connection errors) are retried
// with backoff, honouring Retry-After; other failures return at once as a
// *model.ProviderError carrying the HTTP status and OpenAI's message.
package openai
