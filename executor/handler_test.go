package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// tag returns a middleware that records its name on the way in and out.
func tag(name string, trace *[]string) executor.Middleware {
	return executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		*trace = append(*trace, "in:"+name)
		r := next.Handle(ctx, req)
		*trace = append(*trace, "out:"+name)
		return r
	})
}

func TestChainFirstIsOutermost(t *testing.T) {
	var trace []string
	h := executor.Chain(executor.HandlerFunc(func(context.Context, *executor.Request) tool.Result {
		trace = append(trace, "handler")
		return tool.Text("ok")
	}), tag("a", &trace), nil, tag("b", &trace), tag("c", &trace))
	r := h.Handle(context.Background(), &executor.Request{Call: call("1", "x", "")})
	assert.Equal(t, "ok", r.Text())
	assert.Equal(t, []string{"in:a", "in:b", "in:c", "handler", "out:c", "out:b", "out:a"}, trace)
}

func TestChainWithoutMiddlewareIsTheHandler(t *testing.T) {
	h := executor.HandlerFunc(func(context.Context, *executor.Request) tool.Result { return tool.Text("bare") })
	assert.Equal(t, "bare", executor.Chain(h).Handle(context.Background(), &executor.Request{}).Text())
}

func TestWithMiddlewareOrderAcrossOptions(t *testing.T) {
	var trace []string
	ex := executor.Sequential(
		executor.WithMiddleware(tag("a", &trace), tag("b", &trace)),
		executor.WithMiddleware(tag("c", &trace)),
	)
	_, err := ex.Execute(context.Background(), executor.Batch{Calls: calls(1, "echo"), Tools: executor.Tools(echo(t, "echo"))})
	require.NoError(t, err)
	assert.Equal(t, []string{"in:a", "in:b", "in:c", "out:c", "out:b", "out:a"}, trace)
}

func TestMiddlewareSeesRequest(t *testing.T) {
	e := echo(t, "echo")
	var seen []executor.Request
	spy := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		seen = append(seen, *req)
		return next.Handle(ctx, req)
	})
	_, err := executor.Sequential(executor.WithMiddleware(spy)).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{call("a", "echo", ""), call("b", "nope", "")}, Tools: executor.Tools(e),
	})
	require.NoError(t, err)
	require.Len(t, seen, 2)
	assert.Equal(t, "a", seen[0].Call.ID)
	assert.Same(t, e, seen[0].Tool)
	assert.Equal(t, 0, seen[0].Index)
	assert.Equal(t, "echo", seen[0].ToolName())
	assert.Nil(t, seen[1].Tool, "an unknown tool reaches the middleware as nil")
	assert.Equal(t, 1, seen[1].Index)
	assert.Equal(t, []string{"echo"}, seen[1].Tools.Names())
}

func TestMiddlewareCanRewriteACopy(t *testing.T) {
	upper := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		r := *req
		r.Call.Arguments = json.RawMessage(`{"changed":1}`)
		return next.Handle(ctx, &r)
	})
	res, err := executor.Sequential(executor.WithMiddleware(upper)).Execute(context.Background(), executor.Batch{
		Calls: calls(1, "echo"), Tools: executor.Tools(echo(t, "echo")),
	})
	require.NoError(t, err)
	assert.Equal(t, `echo:c0:{"changed":1}`, res[0].Text())
}

func TestRecover(t *testing.T) {
	h := executor.Recover(executor.HandlerFunc(func(context.Context, *executor.Request) tool.Result { panic("bad") }))
	r := h.Handle(context.Background(), &executor.Request{Call: call("1", "t", "")})
	assert.Equal(t, tool.CodePanic, r.ErrorCode)
	assert.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, tool.ErrPanic)
	assert.Contains(t, r.Details, "goroutine")

	ok := executor.Recover(executor.HandlerFunc(func(context.Context, *executor.Request) tool.Result { return tool.Text("fine") }))
	assert.Equal(t, "fine", ok.Handle(context.Background(), &executor.Request{}).Text())
}

func TestTerminal(t *testing.T) {
	h := executor.Terminal(nil)
	r := h.Handle(context.Background(), &executor.Request{Call: call("1", "echo", `{"a":1}`), Tool: echo(t, "echo")})
	assert.Equal(t, `echo:1:{"a":1}`, r.Text())

	r = h.Handle(context.Background(), &executor.Request{Call: call("2", "ech", "")})
	assert.Equal(t, tool.CodeUnknownTool, r.ErrorCode)

	r = h.Handle(context.Background(), &executor.Request{Call: call("3", "ech", ""), Tools: executor.Tools(echo(t, "echo"))})
	assert.Equal(t, tool.CodeUnknownTool, r.ErrorCode)
	var ue *tool.UnknownToolError
	require.ErrorAs(t, r.Err, &ue)
	assert.Equal(t, []string{"echo"}, ue.Suggestions)
}

func TestDecorateFirstIsOutermost(t *testing.T) {
	var trace []string
	deco := func(name string) executor.Decorator {
		return func(next executor.Executor) executor.Executor {
			return executor.ExecutorFunc(func(ctx context.Context, b executor.Batch) ([]tool.Result, error) {
				trace = append(trace, name)
				return next.Execute(ctx, b)
			})
		}
	}
	ex := executor.Decorate(executor.Sequential(), deco("outer"), nil, deco("inner"))
	res, err := ex.Execute(context.Background(), executor.Batch{Calls: calls(1, "echo"), Tools: executor.Tools(echo(t, "echo"))})
	require.NoError(t, err)
	assert.Len(t, res, 1)
	assert.Equal(t, []string{"outer", "inner"}, trace)
}

func TestGuard(t *testing.T) {
	batch := executor.Batch{Calls: calls(3, "x")}
	cases := []struct {
		name  string
		inner executor.ExecutorFunc
		check func(t *testing.T, res []tool.Result, err error)
	}{
		{"short", func(context.Context, executor.Batch) ([]tool.Result, error) {
			return []tool.Result{tool.Text("one")}, nil
		}, func(t *testing.T, res []tool.Result, err error) {
			require.NoError(t, err)
			require.Len(t, res, 3)
			assert.Equal(t, "one", res[0].Text())
			for _, r := range res[1:] {
				assert.Equal(t, executor.CodeMissingResult, r.ErrorCode)
				assert.ErrorIs(t, r.Err, executor.ErrMissingResult)
			}
		}},
		{"long", func(context.Context, executor.Batch) ([]tool.Result, error) {
			return make([]tool.Result, 5), errors.New("kept")
		}, func(t *testing.T, res []tool.Result, err error) {
			assert.EqualError(t, err, "kept")
			assert.Len(t, res, 3)
		}},
		{"nil", func(context.Context, executor.Batch) ([]tool.Result, error) {
			return nil, nil
		}, func(t *testing.T, res []tool.Result, err error) {
			require.NoError(t, err)
			assert.Len(t, res, 3)
		}},
		{"panic", func(context.Context, executor.Batch) ([]tool.Result, error) {
			panic("executor bug")
		}, func(t *testing.T, res []tool.Result, err error) {
			require.NoError(t, err)
			require.Len(t, res, 3)
			for _, r := range res {
				assert.Equal(t, tool.CodePanic, r.ErrorCode)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := executor.Guard(tc.inner).Execute(context.Background(), batch)
			tc.check(t, res, err)
		})
	}
}

func TestStopErrorMessages(t *testing.T) {
	c := call("id7", "search", "")
	hook := &executor.StopError{Index: 2, Call: c, Err: errors.New("no")}
	assert.Equal(t, `executor: stopped at call 2 (id7, tool "search"): no`, hook.Error())
	ff := &executor.StopError{Index: 0, Call: c, FailFast: true, Err: errors.New("boom")}
	assert.Equal(t, `executor: call 0 (id7, tool "search") failed, batch stopped: boom`, ff.Error())
	assert.ErrorIs(t, ff, executor.ErrFailFast)
	assert.NotErrorIs(t, hook, executor.ErrFailFast)
}

func TestChainRefusesAMiddlewareThatReturnsNil(t *testing.T) {
	pass := executor.Middleware(func(next executor.Handler) executor.Handler { return next })
	broken := executor.Middleware(func(executor.Handler) executor.Handler { return nil })
	h := executor.HandlerFunc(func(context.Context, *executor.Request) tool.Result { return tool.Text("ok") })
	assert.PanicsWithValue(t, "executor: middleware 2 of 3 returned a nil Handler", func() {
		executor.Chain(h, pass, broken, pass)
	})
	assert.PanicsWithValue(t, "executor: Intercept with a nil function", func() { executor.Intercept(nil) })
	assert.NotPanics(t, func() { executor.Chain(h, nil, pass, nil) }, "nil middlewares are skipped")
}
