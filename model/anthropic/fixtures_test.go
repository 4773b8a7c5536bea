package anthropic_test

// Fixtures shaped like replies of the Messages API.

const messageText = `{
  "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "text", "text": "Paris is sunny today, "},
    {"type": "text", "text": "around 21°C."}
  ],
  "stop_reason": "end_turn",
  "stop_sequence": null,
  "usage": {
    "input_tokens": 112,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 14,
    "service_tier": "standard"
  }
}`

const messageToolUse = `{
  "id": "msg_01Aq9w938a90dw8q",
  "type": "message",
  "role": "assistant",
  "model": "claude-sonnet-4-5-20250929",
  "content": [
    {"type": "thinking", "thinking": "Two cities, two calls.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
    {"type": "text", "text": "I'll check the weather in both cities."},
    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"city": "Paris", "unit": "celsius"}},
    {"type": "tool_use", "id": "toolu_01B7kq2mXw3Rz9Lp4Vn8Ty6", "name": "get_weather", "input": {"city": "Oslo"}}
  ],
  "stop_reason": "tool_use",
  "stop_sequence": null,
  "usage": {
    "input_tokens": 472,
    "cache_creation_input_tokens": 20,
    "cache_read_input_tokens": 100,
    "output_tokens": 120
  }
}`

var streamText = []event{
	{"message_start", `{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
	{"ping", `{"type": "ping"}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Paris"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" is sunny."}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

// streamToolUse has a thinking block, text, and three tool_use blocks whose
// input deltas interleave; the last call has no input deltas at all.
var streamToolUse = []event{
	{"message_start", `{"type":"message_start","message":{"id":"msg_01Rx","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":28,"output_tokens":2}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Both cities need a call."}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking both."}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":1}`},
	{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01Paris","name":"get_weather","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`},
	{"content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_02Oslo","name":"get_weather","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`},
	{"ping", `{"type": "ping"}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ris\"}"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":" \"Oslo\"}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":2}`},
	{"content_block_stop", `{"type":"content_block_stop","index":3}`},
	{"content_block_start", `{"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_03Time","name":"get_time","input":{}}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":4}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

const errorOverloadedEvent = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`

const errorInvalidRequest = `{"type":"error","error":{"type":"invalid_request_error","message":"messages.1.content.0: unexpected tool_use_id found in tool_result blocks: toolu_01. Each tool_result block must have a corresponding tool_use block in the previous message."},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`

const errorAuthentication = `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CSHoF2b7Qm"}`

const errorRateLimited = `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute."},"request_id":"req_011CSHoG"}`

const errorOverloaded = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011CSHoH"}`

const errorAPI = `{"type":"error","error":{"type":"api_error","message":"Internal server error"},"request_id":"req_011CSHoJ"}`
