// Package tokens counts the tokens of a request the way OpenAI's chat
// models count them, with the byte-pair encodings of
// github.com/tiktoken-go/tokenizer (o200k_base for the GPT-4o, GPT-4.1,
// GPT-5 and o-series models, cl100k_base for GPT-4 and GPT-3.5). The
// encodings are compiled into the program, so counting needs no network.
//
// It is a package of its own, apart from package openai, because the
// encodings add about 12 MB to a binary: a program that calls
// OpenAI's models without counting tokens locally does not carry them.
//
// A Counter is a modelmw.TokenCounter: give it to modelmw.RateLimit,
// modelmw.Budget or anything else that takes one.
//
// Text messages are counted exactly as the API counts them (3 tokens a
// message, 1 more for a name, 3 for the reply's start). Tool definitions
// are counted by the rule OpenAI published for functions, and tool calls
// of assistant messages by their name and arguments plus a few tokens
// each: those two are within a few tokens of the API's count, not exact.
// Images count modelmw.TokensPerImage each.
package tokens
