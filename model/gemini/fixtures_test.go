package gemini_test

// Fixtures shaped like replies of the Gemini API (generateContent and
// streamGenerateContent?alt=sse).

const replyText = `{
  "candidates": [
    {
      "content": {
        "parts": [{"text": "Paris is sunny today, around 21°C."}],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 9,
    "candidatesTokenCount": 11,
    "totalTokenCount": 58,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 9}],
    "thoughtsTokenCount": 38
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "lW4xaPqtK8yJ1dkP3e6X0QQ"
}`

// replyCalls calls two functions, the first with the thought signature
// Gemini puts on the first call of a turn, and with a thought summary
// before them.
const replyCalls = `{
  "candidates": [
    {
      "content": {
        "parts": [
          {"text": "**Checking the weather**\n\nThe user wants Paris and Oslo.", "thought": true},
          {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "CiQBVKhc7ZfLq0sXk3mD2fQ="},
          {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {
    "promptTokenCount": 72,
    "candidatesTokenCount": 30,
    "totalTokenCount": 190,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 72}],
    "thoughtsTokenCount": 88
  },
  "modelVersion": "gemini-2.5-flash",
  "responseId": "m24xaK7hC5W-1dkPp4aZ8Qc"
}`

// replyImage is the reply of a model that draws.
const replyImage = `{
  "candidates": [
    {
      "content": {
        "parts": [
          {"text": "Here is a red square."},
          {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 1300, "totalTokenCount": 1307},
  "modelVersion": "gemini-2.5-flash-image"
}`

// replyCode ran code with the code execution tool.
const replyCode = `{
  "candidates": [
    {
      "content": {
        "parts": [
          {"executableCode": {"language": "PYTHON", "code": "print(2**10)"}},
          {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1024\n"}},
          {"text": "2^10 is 1024."}
        ],
        "role": "model"
      },
      "finishReason": "STOP",
      "index": 0
    }
  ],
  "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 40, "totalTokenCount": 60},
  "modelVersion": "gemini-2.5-flash"
}`

const replyBlocked = `{
  "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
  "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
  "modelVersion": "gemini-2.5-flash"
}`

// streamThinkingText streams a thought summary, then text whose last
// chunk carries the signature, then the finish reason with the usage.
var streamThinkingText = []string{
	`{"candidates": [{"content": {"parts": [{"text": "**Weighing the question**\n\nSky colour is Rayleigh scattering.", "thought": true}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"totalTokenCount": 60,"thoughtsTokenCount": 52},"modelVersion": "gemini-2.5-flash","responseId": "s24xaOLbAs"}`,
	`{"candidates": [{"content": {"parts": [{"text": "The sky is blue because"}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 5,"totalTokenCount": 65,"thoughtsTokenCount": 52},"modelVersion": "gemini-2.5-flash","responseId": "s24xaOLbAs"}`,
	`{"candidates": [{"content": {"parts": [{"text": " air scatters blue light most.","thoughtSignature": "Cp8BAVSoXO4="}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 12,"totalTokenCount": 72,"thoughtsTokenCount": 52},"modelVersion": "gemini-2.5-flash","responseId": "s24xaOLbAs"}`,
	`{"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 8,"candidatesTokenCount": 12,"totalTokenCount": 72,"thoughtsTokenCount": 52},"modelVersion": "gemini-2.5-flash","responseId": "s24xaOLbAs"}`,
}

// streamCalls streams two whole function calls in one chunk.
var streamCalls = []string{
	`{"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_weather","args": {"city": "Paris"}},"thoughtSignature": "CiQBVKhc7Q=="},{"functionCall": {"name": "get_time","args": {"timezone": "Europe/Paris"}}}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 50,"candidatesTokenCount": 20,"totalTokenCount": 70},"modelVersion": "gemini-2.5-flash","responseId": "t24xaO"}`,
}

const errorRateLimited = `{
  "error": {
    "code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
      {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests", "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
      {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"}
    ]
  }
}`

const errorOverloaded = `{
  "error": {
    "code": 503,
    "message": "The model is overloaded. Please try again later.",
    "status": "UNAVAILABLE"
  }
}`

const errorContextTooLong = `{
  "error": {
    "code": 400,
    "message": "The input token count (1205721) exceeds the maximum number of tokens allowed (1048576).",
    "status": "INVALID_ARGUMENT"
  }
}`

const errorInvalidArgument = `{
  "error": {
    "code": 400,
    "message": "* GenerateContentRequest.contents: contents is not specified\n",
    "status": "INVALID_ARGUMENT"
  }
}`

const errorUnauthenticated = `{
  "error": {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]
  }
}`

const errorInternal = `{
  "error": {
    "code": 500,
    "message": "An internal error has occurred. Please retry.",
    "status": "INTERNAL"
  }
}`
