package tokens_test

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/openai/tokens"
)

// A Counter gives modelmw's limits OpenAI's own count of a prompt.
func ExampleCounter() {
	counter, err := tokens.New("gpt-4o")
	if err != nil {
		panic(err)
	}
	n, _ := counter.CountTokens(context.Background(), &model.Request{Messages: []model.Message{
		model.System("You are terse."),
		model.User("Hello!"),
	}})
	fmt.Println(n)

	// The same counter, for the rate limiter's token bucket.
	_ = modelmw.RateLimit(modelmw.RateLimits{TokensPerMinute: 30_000, Counter: counter})
	// Output: 17
}

// A Counter makes Trim exact: the model is sent the longest end of the
// conversation that fits by OpenAI's count.
func ExampleCounter_trim() {
	counter, err := tokens.New("gpt-4o")
	if err != nil {
		panic(err)
	}
	req := &model.Request{Messages: []model.Message{
		model.System("You are terse."),
		model.User("Tell me about the history of Oslo, from its founding to today."),
		model.Assistant("Founded around 1040, Oslo became Norway's capital in 1299."),
		model.User("And its weather?"),
	}}
	trimmed, err := modelmw.TrimRequest(context.Background(), req, modelmw.TrimPolicy{MaxTokens: 30, Counter: counter})
	if err != nil {
		panic(err)
	}
	for _, m := range trimmed.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text())
	}
	n, _ := counter.CountTokens(context.Background(), trimmed)
	fmt.Println(n <= 30)
	// Output:
	// system: You are terse.
	// user: And its weather?
	// true
}
