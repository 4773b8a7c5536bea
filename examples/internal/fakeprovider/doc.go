// Package fakeprovider runs stand-ins for the OpenAI Chat Completions API and
// the Anthropic Messages API on 127.0.0.1, for the examples' tests: they
// decode each request into a Request, ask a Policy what to answer, and reply
// in the provider's own wire format (non-streaming JSON). The examples then
// run through model/openai or model/anthropic exactly as they would against
// the real services.
package fakeprovider
