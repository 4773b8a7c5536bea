package modelmw

import (
	"context"
	"fmt"
	"iter"
	"time"

	"golang.org/x/time/rate"

	"github.com/trellis-go/trellis/model"
)

// RateLimits are the limits of RateLimit. A zero field sets no limit.
type RateLimits struct {
	// RequestsPerMinute caps the calls sent per minute.
	RequestsPerMinute int
	// TokensPerMinute caps the tokens per minute: before a call, its
	// prompt's tokens (by Counter) and its Settings.MaxTokens; after it,
	// what the provider reported beyond that.
	TokensPerMinute int
	// Counter counts a prompt's tokens; nil estimates them
	// (EstimateTokens).
	Counter TokenCounter
}

// RateLimit returns a Middleware that keeps the calls that pass it within
// limits, with token buckets (golang.org/x/time/rate) that refill at the
// limit's rate and hold a minute's worth: a call waits until its request
// and its tokens fit, or fails when its context ends first (at once, when
// its deadline comes before the wait would end). The buckets are shared
// by every chain built with the Middleware, so that one limit spans the
// agents that share a provider's account.
//
// A call that used more tokens than it reserved (a reply longer than it
// announced) takes the rest from the bucket after it, which delays the
// calls that follow; tokens reserved and not used are not given back.
func RateLimit(l RateLimits) Middleware {
	var requests, tokens *rate.Limiter
	if l.RequestsPerMinute > 0 {
		requests = rate.NewLimiter(rate.Limit(float64(l.RequestsPerMinute)/60), l.RequestsPerMinute)
	}
	if l.TokensPerMinute > 0 {
		tokens = rate.NewLimiter(rate.Limit(float64(l.TokensPerMinute)/60), l.TokensPerMinute)
	}
	// wait takes a request and the call's tokens; it returns the tokens it
	// took.
	wait := func(ctx context.Context, req *model.Request) (int, error) {
		if requests != nil {
			if err := requests.Wait(ctx); err != nil {
				return 0, fmt.Errorf("modelmw: waiting for the request rate limit: %w", err)
			}
		}
		if tokens == nil {
			return 0, nil
		}
		n := min(countOrEstimate(ctx, l.Counter, req)+max(req.Settings.MaxTokens, 0), l.TokensPerMinute)
		if err := tokens.WaitN(ctx, n); err != nil {
			return 0, fmt.Errorf("modelmw: waiting for the token rate limit (%d tokens): %w", n, err)
		}
		return n, nil
	}
	settle := func(took int, u model.Usage) {
		if tokens == nil {
			return
		}
		used := u.TotalTokens
		if used == 0 {
			used = u.InputTokens + u.OutputTokens
		}
		if extra := min(used-took, l.TokensPerMinute); extra > 0 {
			tokens.ReserveN(time.Now(), extra)
		}
	}
	return func(next model.Model) model.Model {
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				took, err := wait(ctx, req)
				if err != nil {
					return nil, err
				}
				resp, err := next.Generate(ctx, req)
				if resp != nil {
					settle(took, resp.Usage)
				}
				return resp, err
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					took, err := wait(ctx, req)
					if err != nil {
						yield(model.Chunk{}, err)
						return
					}
					var usage model.Usage
					defer func() { settle(took, usage) }()
					for c, err := range next.Stream(ctx, req) {
						if c.Usage != nil {
							usage = *c.Usage
						}
						if !yield(c, err) || err != nil {
							return
						}
					}
				}
			},
		}
	}
}
