package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestBeforeCallRewritesArguments(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			hooks := executor.Hooks{BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
				req.Call.Arguments = json.RawMessage(`{"rewritten":true}`)
				req.Call.ID = "hijacked" // ignored: the call keeps its ID
				req.Call.Name = "other"  // ignored too
				return nil, nil
			}}
			rec := &recorder{}
			calls := []model.ToolCall{call("c1", "echo", `{"x":1}`), call("c2", "echo", `{"x":2}`)}
			res, err := k.make(executor.WithHooks(hooks), executor.WithObserver(rec.observe)).Execute(context.Background(), executor.Batch{
				Calls: calls,
				Tools: executor.Tools(echo(t, "echo"), echo(t, "other")),
			})
			require.NoError(t, err)
			// The batch's calls are the caller's (a ToolsNode hands over its
			// conversation's): hooks rewrite the requests' copies only.
			assert.Equal(t, []model.ToolCall{call("c1", "echo", `{"x":1}`), call("c2", "echo", `{"x":2}`)}, calls)
			assert.Equal(t, `echo:c1:{"rewritten":true}`, res[0].Text())
			assert.Equal(t, `echo:c2:{"rewritten":true}`, res[1].Text())
			starts := rec.of(executor.ToolStart)
			require.Len(t, starts, 2)
			assert.Equal(t, "c1", starts[0].Call.ID)
			assert.JSONEq(t, `{"rewritten":true}`, string(starts[0].Call.Arguments), "events carry the final arguments")
		})
	}
}

// BeforeCall hooks, the middleware and the events see the arguments the
// tool runs with — repaired, prepared, coerced — and arguments a hook
// rewrites are prepared again before the next hook sees them.
func TestBeforeCallSeesTheArgumentsTheToolRunsWith(t *testing.T) {
	type in struct {
		Path  string `json:"path"`
		Depth int    `json:"depth,omitempty"`
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var (
				mu   sync.Mutex
				seen []string
				got  []in
			)
			tl := tool.MustFunc("ls", "", func(_ context.Context, a in) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, a)
				return "ok", nil
			}, tool.WithMetadata(safe), tool.WithPrepareArguments(func(m map[string]any) map[string]any {
				if p, ok := m["dir"]; ok {
					m["path"] = p
					delete(m, "dir")
				}
				return m
			}))
			first := executor.Hooks{BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
				seen = append(seen, string(req.Call.Arguments))
				if req.Call.ID == "c2" {
					req.Call.Arguments = json.RawMessage(`{dir: '/rewritten', depth: '2',}`)
				}
				return nil, nil
			}}
			second := executor.Hooks{BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
				seen = append(seen, string(req.Call.Arguments))
				return nil, nil
			}}
			var chain []string
			mw := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
				mu.Lock()
				chain = append(chain, string(req.Call.Arguments))
				mu.Unlock()
				return next.Handle(ctx, req)
			})
			rec := &recorder{}
			res, err := k.make(executor.WithJSONRepair(true), executor.WithHooks(first), executor.WithHooks(second),
				executor.WithMiddleware(mw), executor.WithObserver(rec.observe)).Execute(context.Background(), executor.Batch{
				Calls: []model.ToolCall{call("c1", "ls", "```json\n{'dir': '/srv', 'depth': '3'}\n```"), call("c2", "ls", `{"path":"/tmp"}`)},
				Tools: executor.Tools(tl),
			})
			require.NoError(t, err)
			require.False(t, res[0].IsError || res[1].IsError, res[0].Text(), res[1].Text())
			const c1, c2 = `{"depth":3,"path":"/srv"}`, `{"depth":2,"path":"/rewritten"}`
			assert.Equal(t, []string{c1, c1, `{"path":"/tmp"}`, c2}, seen)
			assert.ElementsMatch(t, []string{c1, c2}, chain)
			starts := rec.of(executor.ToolStart)
			require.Len(t, starts, 2)
			assert.Equal(t, c1, string(starts[0].Call.Arguments))
			assert.Equal(t, c2, string(starts[1].Call.Arguments))
			assert.ElementsMatch(t, []in{{Path: "/srv", Depth: 3}, {Path: "/rewritten", Depth: 2}}, got)
		})
	}
}

func TestBeforeCallBlocks(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var ran atomic.Int32
			counted := newTool(t, "danger", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
				ran.Add(1)
				return tool.Text("done"), nil
			})
			var afterSaw []string
			hooks := executor.Hooks{
				BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
					if req.Call.Name == "danger" {
						r := tool.Result{Content: []model.Part{model.TextPart("blocked by policy")}, IsError: true}
						return &r, nil
					}
					return nil, nil
				},
				AfterCall: func(_ context.Context, req *executor.Request, _ *tool.Result) error {
					afterSaw = append(afterSaw, req.Call.ID)
					return nil
				},
			}
			rec := &recorder{}
			res, err := k.make(executor.WithHooks(hooks), executor.WithObserver(rec.observe)).Execute(context.Background(), executor.Batch{
				Calls: []model.ToolCall{call("a", "danger", ""), call("b", "echo", "")},
				Tools: executor.Tools(counted, echo(t, "echo")),
			})
			require.NoError(t, err)
			assert.Zero(t, ran.Load(), "a blocked call does not run")
			assert.Equal(t, "blocked by policy", res[0].Text())
			assert.Equal(t, tool.StatusFailed, res[0].Status, "the blocking result is normalized")
			assert.Equal(t, tool.StatusSuccess, res[1].Status)
			assert.Equal(t, []string{"b"}, afterSaw, "AfterCall is skipped for a blocked call")
			ends := rec.of(executor.ToolEnd)
			require.Len(t, ends, 2)
			assert.Equal(t, "blocked by policy", ends[0].Result.Text())
		})
	}
}

func TestBeforeCallStopsTheRun(t *testing.T) {
	errNeedsHuman := errors.New("needs a human")
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var ran atomic.Int32
			counted := newTool(t, "work", safe, func(_ context.Context, id string, _ json.RawMessage) (tool.Result, error) {
				ran.Add(1)
				return tool.Text(id), nil
			})
			hooks := executor.Hooks{BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
				if req.Index == 1 {
					return nil, errNeedsHuman
				}
				return nil, nil
			}}
			rec := &recorder{}
			res, err := k.make(executor.WithHooks(hooks), executor.WithObserver(rec.observe)).Execute(context.Background(), executor.Batch{
				Calls: calls(4, "work"),
				Tools: executor.Tools(counted),
			})
			require.Error(t, err)
			assert.ErrorIs(t, err, errNeedsHuman)
			assert.ErrorIs(t, err, executor.ErrStopped)
			assert.NotErrorIs(t, err, executor.ErrFailFast)
			var se *executor.StopError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, 1, se.Index)
			assert.Equal(t, "c1", se.Call.ID)
			require.Len(t, res, 4)
			assert.LessOrEqual(t, ran.Load(), int32(1), "only the call before the stop may have run")
			for i := 1; i < 4; i++ {
				assert.Equal(t, tool.StatusCancelled, res[i].Status, "call %d", i)
			}
			assert.Len(t, rec.of(executor.ToolStart), 4)
			assert.Len(t, rec.of(executor.ToolEnd), 4)
		})
	}
}

func TestBeforeCallStopWithResult(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			hooks := executor.Hooks{BeforeCall: func(context.Context, *executor.Request) (*tool.Result, error) {
				r := tool.Text("handed to a human")
				return &r, errors.New("stop")
			}}
			res, err := k.make(executor.WithHooks(hooks)).Execute(context.Background(), executor.Batch{
				Calls: calls(2, "echo"), Tools: executor.Tools(echo(t, "echo")),
			})
			require.ErrorIs(t, err, executor.ErrStopped)
			assert.Equal(t, "handed to a human", res[0].Text())
			assert.Equal(t, tool.StatusCancelled, res[1].Status)
		})
	}
}

func TestAfterCallRewritesResult(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			hooks := executor.Hooks{AfterCall: func(_ context.Context, req *executor.Request, res *tool.Result) error {
				*res = tool.Text("redacted " + req.Call.ID)
				return nil
			}}
			rec := &recorder{}
			res, err := k.make(executor.WithHooks(hooks), executor.WithObserver(rec.observe)).Execute(context.Background(), executor.Batch{
				Calls: calls(3, "echo"), Tools: executor.Tools(echo(t, "echo")),
			})
			require.NoError(t, err)
			for i, r := range res {
				assert.Equal(t, "redacted "+calls(3, "")[i].ID, r.Text())
			}
			for _, ev := range rec.of(executor.ToolEnd) {
				assert.Equal(t, "redacted "+ev.Call.ID, ev.Result.Text(), "ToolEnd carries the rewritten result")
			}
		})
	}
}

// AfterCall may rewrite the result, not the request: the call that ran is
// the one ToolEnd reports, and the one a StopError names.
func TestAfterCallChangesToTheRequestAreIgnored(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			stop := errors.New("stop here")
			hooks := executor.Hooks{AfterCall: func(_ context.Context, req *executor.Request, _ *tool.Result) error {
				id := req.Call.ID
				req.Call.ID, req.Call.Name, req.Index = "hijacked", "other", 99
				if id == "c1" {
					return stop
				}
				return nil
			}}
			rec := &recorder{}
			_, err := k.make(executor.WithHooks(hooks), executor.WithObserver(rec.observe)).Execute(context.Background(), executor.Batch{
				Calls: calls(2, "echo"), Tools: executor.Tools(echo(t, "echo")),
			})
			var se *executor.StopError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, 1, se.Index)
			assert.Equal(t, "c1", se.Call.ID)
			ends := rec.of(executor.ToolEnd)
			require.Len(t, ends, 2)
			for i, ev := range ends {
				assert.Equal(t, calls(2, "")[i].ID, ev.Call.ID)
				assert.Equal(t, "echo", ev.Call.Name)
				assert.Equal(t, i, ev.Index)
			}
		})
	}
}

func TestAfterCallStopsTheRun(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			waiter := newTool(t, "wait", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			})
			var afterCalls atomic.Int32
			hooks := executor.Hooks{AfterCall: func(_ context.Context, req *executor.Request, res *tool.Result) error {
				afterCalls.Add(1)
				if req.Call.Name == "echo" {
					return errors.New("enough")
				}
				return errors.New("ignored: the batch is already stopped")
			}}
			batch := executor.Batch{
				Calls: []model.ToolCall{call("a", "echo", ""), call("b", "wait", "")},
				Tools: executor.Tools(echo(t, "echo"), waiter),
			}
			res, err := k.make(executor.WithHooks(hooks)).Execute(context.Background(), batch)
			require.Error(t, err)
			assert.ErrorContains(t, err, "enough")
			assert.NotContains(t, err.Error(), "ignored")
			assert.Equal(t, tool.StatusSuccess, res[0].Status, "the result of the stopping call stays")
			assert.Equal(t, tool.StatusCancelled, res[1].Status)
			if k.name == "parallel" {
				assert.EqualValues(t, 2, afterCalls.Load(), "AfterCall runs for every call let through")
			}
		})
	}
}

func TestHooksRunSeriallyInCallOrder(t *testing.T) {
	var busy atomic.Bool
	var overlap atomic.Bool
	var before, after []int
	enter := func() {
		if !busy.CompareAndSwap(false, true) {
			overlap.Store(true)
		}
		time.Sleep(200 * time.Microsecond) // widen the window for overlap
	}
	hooks := executor.Hooks{
		BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
			enter()
			defer busy.Store(false)
			before = append(before, req.Index)
			return nil, nil
		},
		AfterCall: func(_ context.Context, req *executor.Request, _ *tool.Result) error {
			enter()
			defer busy.Store(false)
			after = append(after, req.Index)
			return nil
		},
	}
	second := executor.Hooks{BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
		before = append(before, 100+req.Index)
		return nil, nil
	}}
	ex := executor.Parallel(executor.WithHooks(hooks), executor.WithHooks(second))
	_, err := ex.Execute(context.Background(), executor.Batch{Calls: calls(16, "echo"), Tools: executor.Tools(echo(t, "echo"))})
	require.NoError(t, err)
	assert.False(t, overlap.Load(), "hooks never ran concurrently")
	var want []int
	for i := range 16 {
		want = append(want, i, 100+i)
	}
	assert.Equal(t, want, before, "BeforeCall hooks in call order, and in the order given")
	assert.Len(t, after, 16)
	for i, idx := range after {
		assert.Equal(t, i, idx)
	}
}

func TestHookPanicsBecomeResults(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			hooks := executor.Hooks{
				BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
					if req.Index == 0 {
						panic("before went wrong")
					}
					return nil, nil
				},
				AfterCall: func(_ context.Context, req *executor.Request, _ *tool.Result) error {
					if req.Index == 1 {
						panic("after went wrong")
					}
					return nil
				},
			}
			res, err := k.make(executor.WithHooks(hooks)).Execute(context.Background(), executor.Batch{
				Calls: calls(3, "echo"), Tools: executor.Tools(echo(t, "echo")),
			})
			require.NoError(t, err)
			for i, want := range []string{"before went wrong", "after went wrong"} {
				assert.Equal(t, tool.CodePanic, res[i].ErrorCode)
				assert.Contains(t, res[i].Text(), want)
				assert.Contains(t, res[i].Details, "goroutine")
				var pe *tool.PanicError
				require.ErrorAs(t, res[i].Err, &pe)
				assert.Equal(t, "echo", pe.Tool)
			}
			assert.Equal(t, tool.StatusSuccess, res[2].Status)
		})
	}
}
