package modelmw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/trellis-go/trellis/model"
)

// ErrTripwire is matched by *TripwireError.
var ErrTripwire = errors.New("modelmw: guardrail tripped")

// Stage says which side of a model call a guardrail judges.
type Stage string

// The stages of a guardrail.
const (
	// StageInput: the user's input, before (or while) the model answers.
	StageInput Stage = "input"
	// StageOutput: the model's reply.
	StageOutput Stage = "output"
)

// TripwireError reports a guardrail that tripped: the run stops with it.
type TripwireError struct {
	// Guardrail is the name of the guardrail that tripped.
	Guardrail string
	// Stage is the side of the call it judged.
	Stage Stage
	// Reason is the guardrail's explanation.
	Reason string
}

// Error names the guardrail and its reason.
func (e *TripwireError) Error() string {
	return fmt.Sprintf("modelmw: %s guardrail %q tripped: %s", e.Stage, e.Guardrail, e.Reason)
}

// Is reports whether target is ErrTripwire.
func (e *TripwireError) Is(target error) bool { return target == ErrTripwire }

// Permanent reports true: sending the call again cannot help.
func (e *TripwireError) Permanent() bool { return true }

// Guardrail judges the input or the output of model calls.
type Guardrail struct {
	// Name names the guardrail in its TripwireError.
	Name string
	// Check judges msgs: for an input guardrail, the user's messages that
	// end the request (those since the model last spoke); for an output
	// guardrail, a one-message slice holding the reply (the reply so far,
	// for a Streaming one). It returns the reason it trips, or "" to let
	// the call go on; an error fails the call with that error.
	Check func(ctx context.Context, msgs []model.Message) (reason string, err error)
	// Streaming, for an output guardrail, checks a streamed reply at
	// every chunk, with the reply so far, so that it trips mid-stream and
	// the rest of the reply is never sent on; meant for checks cheap
	// enough to run per chunk. Otherwise a streamed reply is checked once
	// it ended, before its last chunk is passed on.
	Streaming bool
	// Parallel, for an input guardrail, runs the check beside the model
	// call instead of before it: the call starts at once, and its reply
	// (its first chunk, when it streams) is held until the check passed.
	// A check that trips cancels the call. It saves the check's time on
	// every call that passes, and spends the tokens of calls that do not.
	Parallel bool
}

// InputGuardrails returns a Middleware that checks the user's input with
// guards, in order, and stops the call with a *TripwireError when one
// trips. The input is the user's messages that end the request: a request
// that ends with tool results (a later call of the same turn) has none,
// and is not checked again.
func InputGuardrails(guards ...Guardrail) Middleware {
	var before, beside []Guardrail
	for _, g := range guards {
		if g.Check == nil {
			continue
		}
		if g.Parallel {
			beside = append(beside, g)
		} else {
			before = append(before, g)
		}
	}
	run := func(ctx context.Context, gs []Guardrail, input []model.Message) error {
		for _, g := range gs {
			reason, err := g.Check(ctx, input)
			if err != nil {
				return fmt.Errorf("modelmw: input guardrail %q: %w", g.Name, err)
			}
			if reason != "" {
				return &TripwireError{Guardrail: g.Name, Stage: StageInput, Reason: reason}
			}
		}
		return nil
	}
	// start runs the guardrails checked beside the call; the channel
	// delivers their verdict, and cancel stops the call when they trip.
	start := func(ctx context.Context, input []model.Message) (context.Context, <-chan error, context.CancelFunc) {
		ctx, cancel := context.WithCancelCause(ctx)
		done := make(chan error, 1)
		go func() {
			err := run(ctx, beside, input)
			if err != nil {
				cancel(err)
			}
			done <- err
		}()
		return ctx, done, func() { cancel(context.Canceled) }
	}
	return func(next model.Model) model.Model {
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				input := userInput(req.Messages)
				if len(input) == 0 {
					return next.Generate(ctx, req)
				}
				if err := run(ctx, before, input); err != nil {
					return nil, err
				}
				if len(beside) == 0 {
					return next.Generate(ctx, req)
				}
				cctx, verdict, cancel := start(ctx, input)
				defer cancel()
				resp, err := next.Generate(cctx, req)
				if verr := <-verdict; verr != nil {
					return nil, verr
				}
				return resp, err
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				input := userInput(req.Messages)
				if len(input) == 0 {
					return next.Stream(ctx, req)
				}
				if err := run(ctx, before, input); err != nil {
					return fail(err)
				}
				if len(beside) == 0 {
					return next.Stream(ctx, req)
				}
				return func(yield func(model.Chunk, error) bool) {
					cctx, verdict, cancel := start(ctx, input)
					defer cancel()
					passed := false
					for c, err := range next.Stream(cctx, req) {
						if !passed {
							if verr := <-verdict; verr != nil {
								yield(model.Chunk{}, verr)
								return
							}
							passed = true
						}
						if !yield(c, err) || err != nil {
							return
						}
					}
					if !passed {
						if verr := <-verdict; verr != nil {
							yield(model.Chunk{}, verr)
						}
					}
				}
			},
		}
	}
}

// userInput returns the user messages that end msgs.
func userInput(msgs []model.Message) []model.Message {
	i := len(msgs)
	for i > 0 && msgs[i-1].Role == model.RoleUser {
		i--
	}
	return msgs[i:]
}

// OutputGuardrails returns a Middleware that checks every reply with
// guards, in order, and fails the call with a *TripwireError when one
// trips: the reply does not reach the conversation. A streamed reply
// passes through as it comes; Streaming guardrails check it at every
// chunk, the others once it ended, before its last chunk is passed on.
func OutputGuardrails(guards ...Guardrail) Middleware {
	var all, streaming []Guardrail
	for _, g := range guards {
		if g.Check == nil {
			continue
		}
		all = append(all, g)
		if g.Streaming {
			streaming = append(streaming, g)
		}
	}
	run := func(ctx context.Context, gs []Guardrail, reply model.Message) error {
		msgs := []model.Message{reply}
		for _, g := range gs {
			reason, err := g.Check(ctx, msgs)
			if err != nil {
				return fmt.Errorf("modelmw: output guardrail %q: %w", g.Name, err)
			}
			if reason != "" {
				return &TripwireError{Guardrail: g.Name, Stage: StageOutput, Reason: reason}
			}
		}
		return nil
	}
	return func(next model.Model) model.Model {
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				resp, err := next.Generate(ctx, req)
				if err != nil || resp == nil {
					return resp, err
				}
				if err := run(ctx, all, resp.Message); err != nil {
					return nil, err
				}
				return resp, nil
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					var acc model.Accumulator
					var held *model.Chunk // the last chunk, passed on after the final check
					for c, err := range next.Stream(ctx, req) {
						if err != nil {
							yield(model.Chunk{}, err)
							return
						}
						acc.Add(c)
						if len(streaming) > 0 {
							if err := run(ctx, streaming, acc.Response().Message); err != nil {
								yield(model.Chunk{}, err)
								return
							}
						}
						if held != nil && !yield(*held, nil) {
							return
						}
						held = &c
					}
					if err := run(ctx, all, acc.Response().Message); err != nil {
						yield(model.Chunk{}, err)
						return
					}
					if held != nil {
						yield(*held, nil)
					}
				}
			},
		}
	}
}

// GuardrailFunc returns a Guardrail named name whose check judges the
// text of the messages (see model.Message.Text), joined by newlines.
func GuardrailFunc(name string, check func(ctx context.Context, text string) (reason string, err error)) Guardrail {
	return Guardrail{Name: name, Check: func(ctx context.Context, msgs []model.Message) (string, error) {
		return check(ctx, joinText(msgs))
	}}
}

func joinText(msgs []model.Message) string {
	texts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if t := m.Text(); t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, "\n")
}

// verdict is the answer a model-based guardrail asks its model for.
type verdict struct {
	Tripped bool   `json:"tripped"`
	Reason  string `json:"reason"`
}

var verdictSchema = json.RawMessage(`{"type":"object","properties":{"tripped":{"type":"boolean"},"reason":{"type":"string"}},"required":["tripped","reason"],"additionalProperties":false}`)

// ModelGuardrail returns a Guardrail named name that asks m whether the
// text breaks policy, a description of what is not allowed. m answers
// with a JSON object {"tripped": bool, "reason": string} (the request asks
// for it with a response format); a reply that is not such an object
// fails the call. Give it a small, fast model, and mark it Parallel to
// judge input beside the main call.
func ModelGuardrail(name string, m model.Model, policy string) Guardrail {
	system := "You check text against a policy. The policy:\n" + policy +
		"\n\nAnswer only with a JSON object {\"tripped\": true|false, \"reason\": \"...\"}: tripped is true when the text breaks the policy, and reason says how (empty when it does not)."
	return GuardrailFunc(name, func(ctx context.Context, text string) (string, error) {
		resp, err := m.Generate(ctx, &model.Request{
			Messages:       []model.Message{model.System(system), model.User("The text to check:\n\n" + text)},
			ResponseFormat: &model.ResponseFormat{Name: "verdict", Schema: verdictSchema, Strict: true},
		})
		if err != nil {
			return "", err
		}
		raw := strings.TrimSpace(resp.Message.Text())
		raw = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(raw, "```json"), "```"), "```")
		var v verdict
		if err := json.Unmarshal([]byte(strings.TrimSpace(raw)), &v); err != nil {
			return "", fmt.Errorf("the guardrail's model did not answer with a verdict: %q: %w", resp.Message.Text(), err)
		}
		if !v.Tripped {
			return "", nil
		}
		if v.Reason == "" {
			v.Reason = "the model judged the text against the policy"
		}
		return v.Reason, nil
	})
}
