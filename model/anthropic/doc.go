// Package anthropic connects Trellis to Claude models through the Anthropic
// Messages API, using github.com/anthropics/anthropic-sdk-go.
//
// New takes the model name and options. The base URL and API key come from
// WithBaseURL and WithAPIKey, or else from the ANTHROPIC_BASE_URL and
// ANTHROPIC_API_KEY environment variables; an option always wins over the
// environment. An empty ANTHROPIC_BASE_URL counts as unset, and a base URL
// that is not an absolute http or https URL makes New fail.
//
// The mapping follows the API's rules: system messages form the system
// prompt; tool messages become tool_result blocks of a user turn; messages
// of one role that end up next to each other share one turn, with the
// tool_result blocks first; assistant tool calls become tool_use blocks;
// images are sent as base64 or URL sources; text that is empty or only
// whitespace is left out; a tool choice of none is left out when the
// request has no tools; a request that sets temperature or top_p gets
// neither from the model's default settings; max_tokens, which the API
// requires, defaults to DefaultMaxTokens. Generate streams a request whose
// max_tokens is too large for a reply without streaming, and collects the
// stream into the reply.
//
// Stream reads the API's server-sent events (message_start,
// content_block_start, _delta and _stop, message_delta, message_stop, ping
// and error) and numbers tool calls 0, 1, 2... in the order their content
// blocks start. A stream whose server sends nothing for
// model.DefaultStreamIdleTimeout (10 minutes), or whose event or whole
// reply passes its cap, fails with an error naming the limit
// (WithStreamLimits changes them).
//
// WithThinking and WithAdaptiveThinking turn on extended thinking. Thinking
// blocks, whether asked for or a model's default, become reasoning parts
// (model.PartReasoning with the signature in Data, and
// model.PartRedactedReasoning), streamed as model.ReasoningDelta fragments;
// the signed ones are sent back with their assistant turn, first in it, as
// the API requires after thinking that led to tool calls.
//
// WithServerTools offers tools that Anthropic runs itself (web search, see
// WebSearch; web fetch; code execution) after the request's function tools.
// Their calls are never tool calls of the reply: the server_tool_use blocks
// and their results are kept as provider parts (model.PartProvider of
// ContentBlockMIMEType), whole in streams too (model.Chunk.Part), in their
// place among the other blocks (MetaBlocks), and sent back as they came.
// Text blocks keep their text but not their citations.
//
// Native structured output is sent when a request has a ResponseFormat, but
// Info reports it only when WithStructuredOutput declares that the model
// supports it; otherwise callers use a set-model-response tool.
//
// Transient failures (429, 408, 409, 5xx and 529 overloaded, connection
// errors, and a stream that fails with such an error, an overloaded_error
// event for instance, or is cut short before any text or tool call
// arrived) are retried with backoff, honouring Retry-After; other failures
// return at once as a *model.ProviderError carrying the HTTP status and
// Anthropic's message.
package anthropic
