package openai_test

// Fixtures shaped like replies of the Responses API.

// responseReasoningCall is a reasoning model's call of a function after
// it reasoned, with the reasoning's summary and encrypted content.
const responseReasoningCall = `{
  "id": "resp_68af3c1d2e8c8190a1b2c3d4e5f60718",
  "object": "response",
  "created_at": 1756314653,
  "status": "completed",
  "background": false,
  "error": null,
  "incomplete_details": null,
  "instructions": null,
  "max_output_tokens": null,
  "model": "o4-mini-2025-04-16",
  "output": [
    {
      "id": "rs_68af3c1e5b3c8190b7d1f0a9e2c4d6b8",
      "type": "reasoning",
      "encrypted_content": "gAAAAABor7Ie9xK2mQ==",
      "summary": [
        {"type": "summary_text", "text": "**Looking up the weather**\n\nThe user asks about Paris."},
        {"type": "summary_text", "text": "I will call get_weather."}
      ]
    },
    {
      "id": "fc_68af3c1f9a6c8190a4e2b1c3d5f7e9a0",
      "type": "function_call",
      "status": "completed",
      "arguments": "{\"city\":\"Paris\"}",
      "call_id": "call_Xq3v9TzL0bN4sR8mW2kY7pAe",
      "name": "get_weather"
    }
  ],
  "parallel_tool_calls": true,
  "previous_response_id": null,
  "reasoning": {"effort": "medium", "summary": "auto"},
  "store": false,
  "temperature": 1.0,
  "text": {"format": {"type": "text"}, "verbosity": "medium"},
  "tool_choice": "auto",
  "tools": [
    {"type": "function", "name": "get_weather", "description": null, "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": false}
  ],
  "top_p": 1.0,
  "truncation": "disabled",
  "usage": {
    "input_tokens": 61,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 214,
    "output_tokens_details": {"reasoning_tokens": 192},
    "total_tokens": 275
  },
  "user": null,
  "metadata": {}
}`

// responseWebSearch answers after a web search the API ran itself.
const responseWebSearch = `{
  "id": "resp_68af40aa1c2c81a0b3d4e5f6a7b8c9d0",
  "object": "response",
  "created_at": 1756315818,
  "status": "completed",
  "error": null,
  "incomplete_details": null,
  "model": "gpt-4.1-2025-04-14",
  "output": [
    {
      "id": "ws_68af40ab3e8881a08f7e6d5c4b3a2910",
      "type": "web_search_call",
      "status": "completed",
      "action": {"type": "search", "query": "weather Paris today"}
    },
    {
      "id": "msg_68af40ae0c7481a0a1b2c3d4e5f60718",
      "type": "message",
      "status": "completed",
      "content": [
        {
          "type": "output_text",
          "annotations": [
            {"type": "url_citation", "start_index": 30, "end_index": 60, "title": "Paris weather", "url": "https://weather.example/paris"}
          ],
          "logprobs": [],
          "text": "Paris is sunny today, 21°C. ([weather.example](https://weather.example/paris))"
        }
      ],
      "role": "assistant"
    }
  ],
  "store": false,
  "usage": {
    "input_tokens": 312,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 41,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 353
  }
}`

const responseIncomplete = `{
  "id": "resp_1", "object": "response", "created_at": 1756315818, "status": "incomplete",
  "incomplete_details": {"reason": "max_output_tokens"},
  "model": "gpt-4.1-2025-04-14",
  "output": [
    {"id": "msg_1", "type": "message", "status": "incomplete", "role": "assistant",
     "content": [{"type": "output_text", "annotations": [], "text": "Paris is"}]}
  ],
  "usage": {"input_tokens": 10, "output_tokens": 16, "total_tokens": 26, "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
}`

// The events of a streamed response: reasoning whose summary streams,
// then a function call whose arguments stream, then a message. Each is
// "event: <type>" and "data: <json>".
var responseStreamEvents = []string{
	`{"type":"response.created","sequence_number":0,"response":{"id":"resp_s1","object":"response","created_at":1756316000,"status":"in_progress","model":"o4-mini-2025-04-16","output":[],"usage":null}}`,
	`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_s1","object":"response","created_at":1756316000,"status":"in_progress","model":"o4-mini-2025-04-16","output":[],"usage":null}}`,
	`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_s1","type":"reasoning","summary":[]}}`,
	`{"type":"response.reasoning_summary_part.added","sequence_number":3,"item_id":"rs_s1","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`,
	`{"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_s1","output_index":0,"summary_index":0,"delta":"**Planning**"}`,
	`{"type":"response.reasoning_summary_text.delta","sequence_number":5,"item_id":"rs_s1","output_index":0,"summary_index":0,"delta":" the lookup."}`,
	`{"type":"response.reasoning_summary_text.delta","sequence_number":6,"item_id":"rs_s1","output_index":0,"summary_index":1,"delta":"Calling the tool."}`,
	`{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":{"id":"rs_s1","type":"reasoning","encrypted_content":"gAAAAABstream==","summary":[{"type":"summary_text","text":"**Planning** the lookup."},{"type":"summary_text","text":"Calling the tool."}]}}`,
	`{"type":"response.output_item.added","sequence_number":8,"output_index":1,"item":{"id":"fc_s1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_S1","name":"get_weather"}}`,
	`{"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_s1","output_index":1,"delta":"{\"city\":"}`,
	`{"type":"response.function_call_arguments.delta","sequence_number":10,"item_id":"fc_s1","output_index":1,"delta":"\"Paris\"}"}`,
	`{"type":"response.function_call_arguments.done","sequence_number":11,"item_id":"fc_s1","output_index":1,"arguments":"{\"city\":\"Paris\"}"}`,
	`{"type":"response.output_item.done","sequence_number":12,"output_index":1,"item":{"id":"fc_s1","type":"function_call","status":"completed","arguments":"{\"city\":\"Paris\"}","call_id":"call_S1","name":"get_weather"}}`,
	`{"type":"response.output_item.added","sequence_number":13,"output_index":2,"item":{"id":"msg_s1","type":"message","status":"in_progress","content":[],"role":"assistant"}}`,
	`{"type":"response.content_part.added","sequence_number":14,"item_id":"msg_s1","output_index":2,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}`,
	`{"type":"response.output_text.delta","sequence_number":15,"item_id":"msg_s1","output_index":2,"content_index":0,"delta":"Checking"}`,
	`{"type":"response.output_text.delta","sequence_number":16,"item_id":"msg_s1","output_index":2,"content_index":0,"delta":" Paris."}`,
	`{"type":"response.output_text.done","sequence_number":17,"item_id":"msg_s1","output_index":2,"content_index":0,"text":"Checking Paris."}`,
	`{"type":"response.output_item.done","sequence_number":18,"output_index":2,"item":{"id":"msg_s1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Checking Paris."}],"role":"assistant"}}`,
	`{"type":"response.completed","sequence_number":19,"response":{"id":"resp_s1","object":"response","created_at":1756316000,"status":"completed","model":"o4-mini-2025-04-16","output":[],"usage":{"input_tokens":50,"input_tokens_details":{"cached_tokens":0},"output_tokens":90,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":140}}}`,
}

// An error event, as the API sends when it fails after the stream began.
const responseErrorEvent = `{"type":"error","sequence_number":3,"code":"server_error","message":"The server had an error processing your request.","param":null}`

const responseFailedEvent = `{"type":"response.failed","sequence_number":4,"response":{"id":"resp_f","object":"response","created_at":1756316000,"status":"failed","model":"o4-mini-2025-04-16","output":[],"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for o4-mini."},"usage":null}}`
