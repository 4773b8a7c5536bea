package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// indexTool reports one update that names the call's "i" argument and
// answers with it.
func indexTool(t *testing.T) tool.Tool {
	return newTool(t, "index", safe, func(ctx context.Context, _ string, args json.RawMessage) (tool.Result, error) {
		var in struct{ I int }
		if err := json.Unmarshal(args, &in); err != nil {
			return tool.Result{}, err
		}
		tool.ReportProgress(ctx, tool.Update{Message: fmt.Sprint(in.I)})
		return tool.Text(fmt.Sprint(in.I)), nil
	})
}

// checkUpdates checks that each of the n calls got exactly one update, the
// one its own tool reported, under its own index and between its ToolStart
// and ToolEnd, with the ID the tool saw (idPrefix and the call's ID), and
// that the observer was never called concurrently.
func checkUpdates(t *testing.T, rec *recorder, n int, idPrefix string) {
	t.Helper()
	assert.False(t, rec.overlap, "the observer is never called concurrently")
	started, ended := make([]bool, n), make([]bool, n)
	got := make([]int, n)
	for _, ev := range rec.all() {
		switch ev.Kind {
		case executor.ToolStart:
			started[ev.Index] = true
		case executor.ToolEnd:
			ended[ev.Index] = true
		case executor.ToolUpdate:
			got[ev.Index]++
			assert.Equal(t, fmt.Sprint(ev.Index), ev.Update.Message, "the update of call %d went to call %d", ev.Index, ev.Index)
			assert.True(t, started[ev.Index] && !ended[ev.Index], "the update of call %d comes between its start and end", ev.Index)
			assert.Equal(t, idPrefix+ev.Call.ID, ev.Update.CallID)
		}
	}
	for i, k := range got {
		assert.Equal(t, 1, k, "updates of call %d", i)
	}
}

// TestUpdatesRouted checks that every progress update reaches the observer
// under the call that reported it: with unique IDs (few calls and many),
// with IDs that repeat (some providers send none), and when middleware
// hands the rest of the chain a copy of the request under another ID.
func TestUpdatesRouted(t *testing.T) {
	renamed := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		r := *req
		r.Call.ID = "other-" + r.Call.ID
		return next.Handle(ctx, &r)
	})
	batch := func(n int, id func(i int) string) []model.ToolCall {
		cs := make([]model.ToolCall, n)
		for i := range cs {
			cs[i] = call(id(i), "index", fmt.Sprintf(`{"i":%d}`, i))
		}
		return cs
	}
	unique := func(i int) string { return fmt.Sprintf("c%d", i) }
	cases := []struct {
		name  string
		calls []model.ToolCall
		mw    executor.Middleware
		seen  string // what the tool's call ID starts with
	}{
		{"unique", batch(5, unique), nil, ""},
		{"unique-many", batch(40, unique), nil, ""},
		{"empty-ids", batch(5, func(int) string { return "" }), nil, ""},
		{"repeated-ids-many", batch(40, func(i int) string { return fmt.Sprintf("c%d", i%7) }), nil, ""},
		{"renamed-by-middleware", batch(5, unique), renamed, "other-"},
		{"renamed-by-middleware-many", batch(40, unique), renamed, "other-"},
	}
	for _, k := range kinds {
		for _, tc := range cases {
			t.Run(k.name+"/"+tc.name, func(t *testing.T) {
				rec := &recorder{}
				res, err := k.make(executor.WithObserver(rec.observe), executor.WithMiddleware(tc.mw)).
					Execute(context.Background(), executor.Batch{Calls: tc.calls, Tools: executor.Tools(indexTool(t))})
				require.NoError(t, err)
				require.Len(t, res, len(tc.calls))
				for i, r := range res {
					assert.Equal(t, fmt.Sprint(i), r.Text())
				}
				checkUpdates(t, rec, len(tc.calls), tc.seen)
			})
		}
	}
}

// TestUpdatesOfAbandonedCallsAreDropped checks that a call whose body is
// left running (here by a middleware that stops waiting for it) cannot
// emit updates once it is answered, even when a later call has the same
// ID.
func TestUpdatesOfAbandonedCallsAreDropped(t *testing.T) {
	for _, k := range kinds {
		for _, ids := range []string{"unique", "same"} {
			t.Run(k.name+"/"+ids, func(t *testing.T) {
				entered, release, reported := make(chan struct{}), make(chan struct{}), make(chan bool, 1)
				slow := newTool(t, "slow", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
					close(entered)
					<-release
					reported <- tool.ReportProgress(ctx, tool.Update{Message: "late"})
					return tool.Text("late"), nil
				})
				// giveUp answers the slow call at once and leaves its body
				// running, as a timeout does.
				giveUp := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
					if req.Call.Name != "slow" {
						return next.Handle(ctx, req)
					}
					go next.Handle(ctx, req)
					<-entered
					return tool.Errorf("gave up")
				})
				second := "b"
				if ids == "same" {
					second = "a"
				}
				rec := &recorder{}
				batch := []model.ToolCall{call("a", "slow", ""), call(second, "index", `{"i":1}`)}
				res, err := k.make(executor.WithObserver(rec.observe), executor.WithMiddleware(giveUp)).Execute(context.Background(), executor.Batch{
					Calls: batch, Tools: executor.Tools(slow, indexTool(t)),
				})
				require.NoError(t, err)
				assert.Equal(t, "gave up", res[0].Text())
				assert.Equal(t, "1", res[1].Text())
				close(release)
				// The batch's calls are the caller's again: the late update
				// must not read them (the race detector would see it).
				batch[0].ID, batch[1].ID = "reused", "reused"
				assert.True(t, <-reported, "the abandoned body still runs; its reporter is open until it returns")
				for _, ev := range rec.of(executor.ToolUpdate) {
					assert.Equal(t, 1, ev.Index, "only call 1 reported while it ran")
				}
				assert.Len(t, rec.of(executor.ToolUpdate), 1)
			})
		}
	}
}

// TestParallelEndsAsResultsComeIn checks that the parallel executor emits
// a call's ToolEnd while later calls still run, with and without AfterCall
// hooks: call 1 waits for the observer to see call 0 end.
func TestParallelEndsAsResultsComeIn(t *testing.T) {
	for _, withHooks := range []bool{false, true} {
		t.Run(fmt.Sprintf("hooks=%v", withHooks), func(t *testing.T) {
			ended0 := make(chan struct{})
			rec := &recorder{}
			observe := func(ctx context.Context, ev executor.Event) {
				rec.observe(ctx, ev)
				if ev.Kind == executor.ToolEnd && ev.Index == 0 {
					close(ended0)
				}
			}
			tl := newTool(t, "t", safe, func(ctx context.Context, id string, _ json.RawMessage) (tool.Result, error) {
				if id == "c1" {
					select {
					case <-ended0:
					case <-time.After(5 * time.Second):
						return tool.Result{}, errors.New("call 0 did not end while call 1 ran")
					}
				}
				return tool.Text(id), nil
			})
			opts := []executor.ParallelOption{executor.WithObserver(observe)}
			if withHooks {
				opts = append(opts, executor.WithHooks(executor.Hooks{AfterCall: func(context.Context, *executor.Request, *tool.Result) error { return nil }}))
			}
			res, err := executor.Parallel(opts...).Execute(context.Background(), executor.Batch{Calls: calls(2, "t"), Tools: executor.Tools(tl)})
			require.NoError(t, err)
			assert.Equal(t, "c0", res[0].Text())
			assert.Equal(t, "c1", res[1].Text(), "call 1 saw call 0 end")
		})
	}
}

// TestParallelEventsMatchResults runs batches through the parallel
// executor in each of its ways of handing results over (no observer; an
// observer; an observer and AfterCall hooks) and checks, when calls
// succeed, when one fails under WithFailFast, and when the context is
// cancelled while calls run, that every call gets one ToolStart and one
// ToolEnd in call order, and that each ToolEnd carries the call's result.
func TestParallelEventsMatchResults(t *testing.T) {
	const n = 12
	type mode struct {
		name             string
		observe, afterOK bool
	}
	modes := []mode{{"collected", false, false}, {"observed", true, false}, {"observed+hooks", true, true}}
	scenarios := []string{"ok", "fail-fast", "cancel"}
	for _, m := range modes {
		for _, sc := range scenarios {
			t.Run(m.name+"/"+sc, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				started := make(chan struct{}, n)
				tl := newTool(t, "t", safe, func(ctx context.Context, id string, args json.RawMessage) (tool.Result, error) {
					var in struct{ I int }
					_ = json.Unmarshal(args, &in)
					switch {
					case sc == "fail-fast" && in.I == 5:
						return tool.Result{}, errors.New("broken")
					case sc != "ok" && in.I%3 == 0:
						started <- struct{}{}
						<-ctx.Done() // runs until the batch is stopped or cancelled
						return tool.Result{}, ctx.Err()
					}
					return tool.Text(id), nil
				})
				if sc == "cancel" {
					go func() {
						for range 2 {
							<-started
						}
						cancel()
					}()
				}
				rec := &recorder{}
				opts := []executor.ParallelOption{}
				if m.observe {
					opts = append(opts, executor.WithObserver(rec.observe))
				}
				var after []int
				if m.afterOK {
					opts = append(opts, executor.WithHooks(executor.Hooks{AfterCall: func(_ context.Context, req *executor.Request, _ *tool.Result) error {
						after = append(after, req.Index)
						return nil
					}}))
				}
				if sc == "fail-fast" {
					opts = append(opts, executor.WithFailFast())
				}
				res, err := executor.Parallel(opts...).Execute(ctx, executor.Batch{Calls: calls(n, "t"), Tools: executor.Tools(tl)})
				require.Len(t, res, n)
				switch sc {
				case "fail-fast":
					require.ErrorIs(t, err, executor.ErrFailFast)
					assert.Contains(t, res[5].Text(), "broken")
				default:
					require.NoError(t, err)
				}
				for i, r := range res {
					switch {
					case sc == "ok" || (i%3 != 0 && i != 5 && r.Status == tool.StatusSuccess):
						assert.Equal(t, fmt.Sprintf("c%d", i), r.Text())
					case i%3 == 0:
						assert.Equal(t, tool.StatusCancelled, r.Status, "call %d", i)
					}
				}
				if m.afterOK { // every call was let through before the bodies ran
					want := make([]int, n)
					for i := range want {
						want[i] = i
					}
					assert.Equal(t, want, after, "AfterCall hooks in call order")
				}
				if !m.observe {
					return
				}
				assert.False(t, rec.overlap, "the observer is never called concurrently")
				var starts, ends []int
				for _, ev := range rec.all() {
					switch ev.Kind {
					case executor.ToolStart:
						starts = append(starts, ev.Index)
					case executor.ToolEnd:
						ends = append(ends, ev.Index)
						assert.Equal(t, res[ev.Index].Status, ev.Result.Status, "call %d", ev.Index)
						assert.Equal(t, res[ev.Index].Text(), ev.Result.Text(), "call %d", ev.Index)
					}
				}
				inOrder := make([]int, n)
				for i := range inOrder {
					inOrder[i] = i
				}
				assert.Equal(t, inOrder, starts)
				assert.Equal(t, inOrder, ends)
			})
		}
	}
}
