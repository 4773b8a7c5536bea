package model_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/trellis-go/trellis/model"
)

// An Accumulator rebuilds parallel tool calls whose fragments arrive
// interleaved.
func ExampleAccumulator() {
	chunks := []model.Chunk{
		{Text: "Checking "},
		{Text: "both."},
		{ToolCall: &model.ToolCallDelta{Index: 0, ID: "call_a", Name: "get_weather"}},
		{ToolCall: &model.ToolCallDelta{Index: 1, ID: "call_b", Name: "get_weather", Arguments: `{"city":`}},
		{ToolCall: &model.ToolCallDelta{Index: 0, Arguments: `{"city":"Paris"}`}},
		{ToolCall: &model.ToolCallDelta{Index: 1, Arguments: `"Oslo"}`}},
		{FinishReason: "tool_calls", Usage: &model.Usage{InputTokens: 40, OutputTokens: 22, TotalTokens: 62}},
	}
	var acc model.Accumulator
	for _, c := range chunks {
		acc.Add(c)
	}
	resp := acc.Response()
	fmt.Println(resp.Message.Text())
	for _, tc := range resp.Message.ToolCalls {
		fmt.Println(tc.ID, tc.Name, string(tc.Arguments))
	}
	fmt.Println(resp.FinishReason, resp.Usage.TotalTokens)
	// Output:
	// Checking both.
	// call_a get_weather {"city":"Paris"}
	// call_b get_weather {"city":"Oslo"}
	// tool_calls 62
}

// ResponseChunks lets a model that cannot stream implement Stream; Collect
// turns any stream back into a Response.
func ExampleCollect() {
	full := &model.Response{
		Message:      model.Assistant("Hello!"),
		FinishReason: "stop",
		Model:        "example-1",
	}
	resp, err := model.Collect(model.ResponseChunks(full))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(resp.Message.Text(), resp.FinishReason, resp.Model)
	// Output:
	// Hello! stop example-1
}

// A Retry tries transient failures again and gives up at once on the rest.
func ExampleRetry_Do() {
	attempts := 0
	policy := model.Retry{
		MaxRetries: 3,
		BaseDelay:  time.Millisecond,
		OnRetry: func(n int, wait time.Duration, err error) {
			fmt.Printf("retry %d after: %v\n", n, err)
		},
	}
	err := policy.Do(context.Background(), func(context.Context) error {
		attempts++
		if attempts < 3 {
			return &model.ProviderError{Provider: "example", StatusCode: http.StatusServiceUnavailable, Message: "try later"}
		}
		return nil
	})
	fmt.Println(attempts, err)

	err = policy.Do(context.Background(), func(context.Context) error {
		return &model.ProviderError{Provider: "example", StatusCode: http.StatusBadRequest, Type: "invalid_request_error", Message: "max_tokens: must be positive"}
	})
	var pe *model.ProviderError
	fmt.Println(errors.As(err, &pe), pe.StatusCode, err)
	// Output:
	// retry 1 after: example: 503 Service Unavailable: try later
	// retry 2 after: example: 503 Service Unavailable: try later
	// 3 <nil>
	// true 400 example: 400 Bad Request: invalid_request_error: max_tokens: must be positive
}

// RetryAfter reads the wait a provider asked for.
func ExampleRetryAfter() {
	h := http.Header{}
	h.Set("Retry-After", "20")
	d, ok := model.RetryAfter(h, time.Now())
	fmt.Println(d, ok)
	h.Set("Retry-After-Ms", "1500")
	d, ok = model.RetryAfter(h, time.Now())
	fmt.Println(d, ok)
	// Output:
	// 20s true
	// 1.5s true
}

// A reply's reasoning stands apart from its text.
func ExampleMessage_Reasoning() {
	var acc model.Accumulator
	for _, c := range []model.Chunk{
		{Reasoning: &model.ReasoningDelta{Text: "The user wants a greeting. "}},
		{Reasoning: &model.ReasoningDelta{Text: "Keep it short.", Data: "sig"}},
		{Text: "Hello!"},
	} {
		acc.Add(c)
	}
	msg := acc.Response().Message
	fmt.Println(msg.Text())
	fmt.Println(msg.Reasoning())
	fmt.Println(msg.Content[0].Type, string(msg.Content[0].Data))
	// Output:
	// Hello!
	// The user wants a greeting. Keep it short.
	// reasoning sig
}
