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
