package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"reflect"

	"github.com/trellis-go/trellis/tool/internal/arguments"
)

// StreamFuncTool is a typed tool whose function yields its output in
// pieces. Each piece is converted to content as NewFunc converts a
// function's output. Invoke forwards every piece as a progress update and
// merges the pieces into the final result (see Streamer).
type StreamFuncTool[In, Out any] struct {
	core
	plan *arguments.Plan
	fn   func(context.Context, In) iter.Seq2[Out, error]
}

// NewStreamFunc builds a streaming typed tool. In follows the same rules as
// for NewFunc.
func NewStreamFunc[In, Out any](name, description string, fn func(context.Context, In) iter.Seq2[Out, error], opts ...Option) (*StreamFuncTool[In, Out], error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: tool %q has a nil function", ErrInvalidTool, name)
	}
	schema, err := arguments.DeriveObject(reflect.TypeFor[In]())
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	c, err := newCore(name, description, schema, opts)
	if err != nil {
		return nil, err
	}
	t := &StreamFuncTool[In, Out]{core: c, plan: c.argumentPlan(reflect.TypeFor[In]()), fn: fn}
	t.bind(t)
	return t, nil
}

// MustStreamFunc is like NewStreamFunc but panics on error.
func MustStreamFunc[In, Out any](name, description string, fn func(context.Context, In) iter.Seq2[Out, error], opts ...Option) *StreamFuncTool[In, Out] {
	t, err := NewStreamFunc(name, description, fn, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

// Stream validates and decodes args and yields the function's pieces as
// results. Invalid arguments yield one error result and the function does
// not run.
func (t *StreamFuncTool[In, Out]) Stream(ctx context.Context, callID string, args json.RawMessage) iter.Seq2[Result, error] {
	if in, ok := arguments.Fast[In](t.plan, args); ok {
		return t.streamDecoded(ctx, callID, in)
	}
	a, aerr := runArguments(t.def.Name, args, t.schema, t.cfg.prepare, false, true)
	if aerr != nil {
		return func(yield func(Result, error) bool) { yield(argumentResult(aerr), nil) }
	}
	return t.streamParsed(ctx, callID, a.Value, args)
}

func (t *StreamFuncTool[In, Out]) streamFast(ctx context.Context, callID string, args json.RawMessage) (iter.Seq2[Result, error], bool) {
	in, ok := arguments.Fast[In](t.plan, args)
	if !ok {
		return nil, false
	}
	return t.streamDecoded(ctx, callID, in), true
}

func (t *StreamFuncTool[In, Out]) self() Tool { return t }

func (t *StreamFuncTool[In, Out]) streamParsed(ctx context.Context, callID string, args any, received json.RawMessage) iter.Seq2[Result, error] {
	return func(yield func(Result, error) bool) {
		in, err := arguments.Value[In](t.plan, args)
		if err != nil {
			yield(argumentResult(argumentError(t.def.Name, received, err)), nil)
			return
		}
		t.run(ctx, callID, in, yield)
	}
}

// streamDecoded runs the function with arguments that passed the pipeline.
func (t *StreamFuncTool[In, Out]) streamDecoded(ctx context.Context, callID string, in In) iter.Seq2[Result, error] {
	return func(yield func(Result, error) bool) { t.run(ctx, callID, in, yield) }
}

// run yields the function's pieces as results.
func (t *StreamFuncTool[In, Out]) run(ctx context.Context, callID string, in In, yield func(Result, error) bool) {
	if CallID(ctx) != callID {
		ctx = WithCallID(ctx, callID)
	}
	for out, err := range t.fn(ctx, in) {
		if err != nil {
			yield(returnedResult(out), err)
			return
		}
		if !yield(toResult(out), nil) {
			return
		}
	}
}

// Call runs the stream to its end and returns the merged result.
func (t *StreamFuncTool[In, Out]) Call(ctx context.Context, callID string, args json.RawMessage) (Result, error) {
	var acc Result
	for piece, err := range t.Stream(ctx, callID, args) {
		if err != nil {
			return acc, err
		}
		acc.merge(piece)
	}
	return acc, nil
}
