package modelmw

import (
	"context"
	"errors"
	"iter"
	"slices"

	"github.com/trellis-go/trellis/model"
)

// Retry returns a Middleware that sends a call again when it fails with a
// transient error, by policy: the model package's retry policy, the one
// providers follow themselves (exponential backoff with jitter, the wait
// a provider asks for with Retry-After when it asks for one, and no retry
// when it asks for longer than policy.MaxDelay). What is transient is what
// model.IsTransient says: rate limits, overload, server and network
// failures (model.ErrRateLimited, model.ErrOverloaded, model.ErrServer);
// a context too long, a bad request or refused credentials fail at once.
//
// A stream is retried only until its first chunk went to the consumer:
// after that, an error ends the call, since the consumer has seen part of
// a reply that a second attempt would not continue.
//
// Providers retry on their own (openai.WithRetry, anthropic.WithRetry);
// give them a policy without retries when they sit in a chain with this
// middleware, or the attempts multiply.
func Retry(policy model.Retry) Middleware {
	return func(next model.Model) model.Model {
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				var resp *model.Response
				err := policy.Do(ctx, func(ctx context.Context) error {
					var err error
					resp, err = next.Generate(ctx, req)
					return err
				})
				if err != nil {
					return nil, err
				}
				return resp, nil
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					stopped := false
					err := policy.Do(ctx, func(ctx context.Context) error {
						sent := false
						for c, err := range next.Stream(ctx, req) {
							if err != nil {
								if sent {
									return &afterFirstChunk{err: err}
								}
								return err
							}
							sent = true
							if !yield(c, nil) {
								stopped = true
								return nil
							}
						}
						return nil
					})
					if err == nil || stopped {
						return
					}
					if a, ok := err.(*afterFirstChunk); ok {
						err = a.err
					}
					yield(model.Chunk{}, err)
				}
			},
		}
	}
}

// afterFirstChunk hides the error of a stream that already sent chunks
// from the retry policy, which would retry it: it does not unwrap.
type afterFirstChunk struct{ err error }

func (e *afterFirstChunk) Error() string { return e.err.Error() }

// defaultFallbackOn are the error classes Fallback falls back on when it
// is given none: overload, rate limits, and server or network failures.
var defaultFallbackOn = []error{model.ErrOverloaded, model.ErrRateLimited, model.ErrServer}

// DefaultFallbackOn returns the error classes Fallback falls back on when
// it is given none: model.ErrOverloaded, model.ErrRateLimited and
// model.ErrServer.
func DefaultFallbackOn() []error { return slices.Clone(defaultFallbackOn) }

// Fallback returns a Middleware that, when the rest of the chain fails
// with an error matching one of on (errors.Is: the model package's error
// classes, such as model.ErrOverloaded or model.ErrContextTooLong, or any
// error of the caller's), sends the call to the models of models in turn
// until one answers or fails otherwise. An empty on means
// DefaultFallbackOn. The request goes to a fallback model with its Model
// field cleared, since a name meant for the first model means nothing to
// another provider; wrap a fallback model in a Chain of its own to give it
// retries or limits.
//
// A stream falls back only until its first chunk went to the consumer.
// When every model failed, the error of the last one is returned, joined
// with the first's.
func Fallback(models []model.Model, on ...error) Middleware {
	models = slices.Clone(models)
	if len(on) == 0 {
		on = defaultFallbackOn
	}
	on = slices.Clone(on)
	matches := func(err error) bool {
		for _, target := range on {
			if errors.Is(err, target) {
				return true
			}
		}
		return false
	}
	return func(next model.Model) model.Model {
		all := append([]model.Model{next}, models...)
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				var first error
				for i, m := range all {
					r := req
					if i > 0 {
						r = withoutModel(req)
					}
					resp, err := m.Generate(ctx, r)
					if err == nil {
						return resp, nil
					}
					if i == 0 {
						first = err
					}
					if !matches(err) || ctx.Err() != nil || i == len(all)-1 {
						return nil, joinFirst(err, first, i)
					}
				}
				return nil, first
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					var first error
					for i, m := range all {
						r := req
						if i > 0 {
							r = withoutModel(req)
						}
						sent := false
						var failed error
						for c, err := range m.Stream(ctx, r) {
							if err != nil {
								failed = err
								break
							}
							sent = true
							if !yield(c, nil) {
								return
							}
						}
						if failed == nil {
							return
						}
						if i == 0 {
							first = failed
						}
						if sent || !matches(failed) || ctx.Err() != nil || i == len(all)-1 {
							yield(model.Chunk{}, joinFirst(failed, first, i))
							return
						}
					}
				}
			},
		}
	}
}

// withoutModel returns req with its Model cleared.
func withoutModel(req *model.Request) *model.Request {
	if req.Model == "" {
		return req
	}
	r := *req
	r.Model = ""
	return &r
}

// joinFirst returns the error of attempt i, joined with the first
// attempt's when they differ.
func joinFirst(err, first error, i int) error {
	if i == 0 || first == nil {
		return err
	}
	return errors.Join(err, first)
}
