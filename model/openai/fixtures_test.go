package openai_test

// Fixtures shaped like replies of the Chat Completions API.

const completionText = `{
  "id": "chatcmpl-BcXkq2m7YqQ1hJ0v3n8rT5sW2pLfA",
  "object": "chat.completion",
  "created": 1748530000,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "Paris is sunny today, around 21°C.",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 118,
    "completion_tokens": 12,
    "total_tokens": 130,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_34a54ae93c"
}`

const completionToolCalls = `{
  "id": "chatcmpl-BcXm1aZ9c0Qe7LwV2xk4Jt8uR3yHd",
  "object": "chat.completion",
  "created": 1748530042,
  "model": "gpt-4o-mini-2024-07-18",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {
            "id": "call_8Qm2vXb1Yk3LsT0pRz7Wn4Jd",
            "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}
          },
          {
            "id": "call_2Hf9cKd5Nw1QaP6mEo3Ls8Vb",
            "type": "function",
            "function": {"name": "get_time", "arguments": "{\"timezone\":\"Europe/Paris\"}"}
          }
        ],
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {
    "prompt_tokens": 96,
    "completion_tokens": 51,
    "total_tokens": 147,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_34a54ae93c"
}`

// Ollama's OpenAI-compatible endpoint: no usage details, no service tier.
const completionOllama = `{
  "id": "chatcmpl-512",
  "object": "chat.completion",
  "created": 1748530100,
  "model": "llama3.2",
  "system_fingerprint": "fp_ollama",
  "choices": [
    {"index": 0, "message": {"role": "assistant", "content": "Hello from Ollama."}, "finish_reason": "stop"}
  ],
  "usage": {"prompt_tokens": 26, "completion_tokens": 5, "total_tokens": 31}
}`

const chunkPrefix = `{"id":"chatcmpl-BcXp7","object":"chat.completion.chunk","created":1748530200,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c",`

// streamText is a streamed text reply with usage in a final chunk of its own.
var streamText = []string{
	chunkPrefix + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"content":"Paris"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"content":" is"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"content":" sunny."},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}`,
	chunkPrefix + `"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
}

// streamParallelCalls streams three tool calls whose fragments interleave by
// index, after a little text.
var streamParallelCalls = []string{
	chunkPrefix + `"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"content":"Checking."},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_Paris","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_Oslo","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\": "}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"call_Time","type":"function","function":{"name":"get_time","arguments":"{}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\": \"Paris\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"Oslo\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	chunkPrefix + `"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`,
	chunkPrefix + `"choices":[],"usage":{"prompt_tokens":80,"completion_tokens":40,"total_tokens":120}}`,
}

const errorInvalidRequest = `{
  "error": {
    "message": "Invalid 'messages[1].content': string too long. Expected a string with maximum length 1048576, but got a string with length 2000000 instead.",
    "type": "invalid_request_error",
    "param": "messages[1].content",
    "code": "string_above_max_length"
  }
}`

const errorUnauthorized = `{
  "error": {
    "message": "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
    "type": "invalid_request_error",
    "param": null,
    "code": "invalid_api_key"
  }
}`

const errorRateLimited = `{
  "error": {
    "message": "Rate limit reached for gpt-4o-mini in organization org-abc on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.",
    "type": "requests",
    "param": null,
    "code": "rate_limit_exceeded"
  }
}`

const errorServer = `{
  "error": {
    "message": "The server had an error while processing your request. Sorry about that!",
    "type": "server_error",
    "param": null,
    "code": null
  }
}`
