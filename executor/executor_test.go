package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// TestResultsInCallOrder runs a batch in which calls succeed, fail, panic,
// name unknown tools and send invalid arguments, and checks that every call
// is answered, in order, with the right outcome.
func TestResultsInCallOrder(t *testing.T) {
	fail := newTool(t, "fail", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Result{}, errors.New("backend down")
	})
	boom := newTool(t, "boom", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		panic("kaboom")
	})
	strict := tool.MustFunc("strict", "needs a city", func(_ context.Context, in struct {
		City string `json:"city"`
	}) (string, error) {
		return in.City, nil
	}, tool.WithMetadata(safe))
	tools := executor.Tools(echo(t, "echo"), fail, boom, strict)
	batch := executor.Batch{Tools: tools, Calls: []model.ToolCall{
		call("a", "echo", `{"x":1}`),
		call("b", "fail", ""),
		call("c", "boom", ""),
		call("d", "ecko", ""),
		call("e", "strict", `{"town":"Oslo"}`),
		call("f", "echo", `{"x":2}`),
	}}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			res, err := k.make().Execute(context.Background(), batch)
			require.NoError(t, err)
			require.Len(t, res, len(batch.Calls))

			assert.Equal(t, tool.StatusSuccess, res[0].Status)
			assert.Equal(t, `echo:a:{"x":1}`, res[0].Text())

			assert.Equal(t, tool.StatusFailed, res[1].Status)
			assert.Equal(t, tool.CodeToolError, res[1].ErrorCode)
			assert.Contains(t, res[1].Text(), "backend down")

			assert.Equal(t, tool.CodePanic, res[2].ErrorCode)
			assert.ErrorIs(t, res[2].Err, tool.ErrPanic)
			assert.Contains(t, res[2].Details, "goroutine", "the stack is in Details")

			assert.Equal(t, tool.CodeUnknownTool, res[3].ErrorCode)
			assert.Contains(t, res[3].Text(), "echo", "suggests the nearest name")

			assert.Equal(t, tool.CodeInvalidArguments, res[4].ErrorCode)
			assert.Contains(t, res[4].Text(), "$.city")

			assert.Equal(t, `echo:f:{"x":2}`, res[5].Text())
		})
	}
}

func TestEmptyBatch(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			res, err := k.make().Execute(context.Background(), executor.Batch{})
			require.NoError(t, err)
			assert.NotNil(t, res)
			assert.Empty(t, res)
		})
	}
}

func TestNilToolsMakesEveryCallUnknown(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			res, err := k.make().Execute(context.Background(), executor.Batch{Calls: calls(3, "x")})
			require.NoError(t, err)
			require.Len(t, res, 3)
			for _, r := range res {
				assert.Equal(t, tool.CodeUnknownTool, r.ErrorCode)
				assert.ErrorIs(t, r.Err, tool.ErrUnknownTool)
			}
		})
	}
}

// TestParallelIO100 checks that 100 calls of a tool that sleeps 10 ms all
// run at once: each call waits until all 100 have started, which only
// happens if the executor runs them in one round.
func TestParallelIO100(t *testing.T) {
	const n = 100
	var (
		started = make(chan struct{})
		count   int
		mu      sync.Mutex
		f       inflight
	)
	sleeper := newTool(t, "sleep", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		f.enter()
		defer f.leave()
		mu.Lock()
		count++
		if count == n {
			close(started)
		}
		mu.Unlock()
		select {
		case <-started:
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
		return tool.Text("slept"), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := executor.Parallel().Execute(ctx, executor.Batch{Calls: calls(n, "sleep"), Tools: executor.Tools(sleeper)})
	require.NoError(t, err)
	require.Len(t, res, n)
	for i, r := range res {
		require.Equal(t, tool.StatusSuccess, r.Status, "call %d: %s", i, r.Text())
	}
	assert.EqualValues(t, n, f.peak.Load(), "all calls were in flight at once")
}

// gate is a tool body that blocks until released and counts how many calls
// are in it.
type gate struct {
	f       inflight
	release chan struct{}
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) body(ctx context.Context, id string, _ json.RawMessage) (tool.Result, error) {
	g.f.enter()
	defer g.f.leave()
	select {
	case <-g.release:
		return tool.Text(id), nil
	case <-ctx.Done():
		return tool.Result{}, ctx.Err()
	}
}

func TestParallelMaxConcurrency(t *testing.T) {
	g := newGate()
	tl := newTool(t, "work", safe, g.body)
	ex := executor.Parallel(executor.WithMaxConcurrency(3))
	done := make(chan []tool.Result)
	go func() {
		res, _ := ex.Execute(context.Background(), executor.Batch{Calls: calls(20, "work"), Tools: executor.Tools(tl)})
		done <- res
	}()
	require.Eventually(t, func() bool { return g.f.now.Load() == 3 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond) // give a fourth call the chance to start, wrongly
	assert.EqualValues(t, 3, g.f.now.Load())
	close(g.release)
	res := <-done
	require.Len(t, res, 20)
	for i, r := range res {
		assert.Equal(t, fmt.Sprintf("c%d", i), r.Text())
	}
	assert.EqualValues(t, 3, g.f.peak.Load())
}

// TestParallelGroupLimit checks a group's cap, and that calls of other
// tools are not held back by a full group.
func TestParallelGroupLimit(t *testing.T) {
	g := newGate()
	api := newTool(t, "api", tool.Metadata{ConcurrencySafe: true, ConcurrencyGroup: "api"}, g.body)
	var others inflight
	otherDone := make(chan struct{}, 10)
	other := newTool(t, "other", safe, func(_ context.Context, id string, _ json.RawMessage) (tool.Result, error) {
		others.enter()
		defer others.leave()
		otherDone <- struct{}{}
		return tool.Text(id), nil
	})
	var cs []model.ToolCall
	for i := range 12 {
		name := "api"
		if i%2 == 1 {
			name = "other"
		}
		cs = append(cs, call(fmt.Sprintf("c%d", i), name, ""))
	}
	ex := executor.Parallel(executor.WithGroupLimit("api", 2), executor.WithGroupLimit("unused", 1))
	done := make(chan []tool.Result)
	go func() {
		res, _ := ex.Execute(context.Background(), executor.Batch{Calls: cs, Tools: executor.Tools(api, other)})
		done <- res
	}()
	// All six calls of "other" finish while the api group is full.
	for range 6 {
		select {
		case <-otherDone:
		case <-time.After(5 * time.Second):
			t.Fatal("calls of another tool were held back by a full group")
		}
	}
	require.Eventually(t, func() bool { return g.f.now.Load() == 2 }, 5*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	assert.EqualValues(t, 2, g.f.now.Load())
	close(g.release)
	res := <-done
	require.Len(t, res, 12)
	for i, r := range res {
		assert.Equal(t, fmt.Sprintf("c%d", i), r.Text())
	}
	assert.EqualValues(t, 2, g.f.peak.Load())
}

// TestParallelForcedSequential checks the tools that make a batch run
// sequentially, with and without an observer (which makes the executor
// build Requests).
func TestParallelForcedSequential(t *testing.T) {
	for _, observed := range []bool{false, true} {
		t.Run(fmt.Sprint("observed=", observed), func(t *testing.T) { testParallelForcedSequential(t, observed) })
	}
}

func testParallelForcedSequential(t *testing.T, observed bool) {
	cases := []struct {
		name       string
		meta       tool.Metadata
		opts       []executor.ParallelOption
		concurrent bool
	}{
		{"concurrency safe", safe, nil, true},
		{"sequential", tool.Metadata{ConcurrencySafe: true, Sequential: true}, nil, false},
		{"not concurrency safe", tool.Metadata{}, nil, false},
		{"check off", tool.Metadata{}, []executor.ParallelOption{executor.WithConcurrencySafeCheck(false)}, true},
		{"check off, sequential", tool.Metadata{Sequential: true}, []executor.ParallelOption{executor.WithConcurrencySafeCheck(false)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var f inflight
			both := make(chan struct{})
			var once sync.Once
			slow := newTool(t, "slow", safe, func(ctx context.Context, id string, _ json.RawMessage) (tool.Result, error) {
				f.enter()
				defer f.leave()
				if f.now.Load() == 2 {
					once.Do(func() { close(both) })
				}
				select { // wait briefly for company
				case <-both:
				case <-time.After(30 * time.Millisecond):
				case <-ctx.Done():
				}
				return tool.Text(id), nil
			})
			special := newTool(t, "special", tc.meta, func(ctx context.Context, id string, a json.RawMessage) (tool.Result, error) {
				return slow.Call(ctx, id, a)
			})
			batch := executor.Batch{Calls: []model.ToolCall{call("a", "slow", ""), call("b", "special", "")}, Tools: executor.Tools(slow, special)}
			opts := tc.opts
			var mu sync.Mutex
			var events []string
			if observed {
				opts = append(slices.Clip(opts), executor.WithObserver(func(_ context.Context, ev executor.Event) {
					mu.Lock()
					defer mu.Unlock()
					events = append(events, string(ev.Kind)+":"+ev.Call.ID)
				}))
			}
			res, err := executor.Parallel(opts...).Execute(context.Background(), batch)
			require.NoError(t, err)
			assert.Equal(t, "a", res[0].Text())
			assert.Equal(t, "b", res[1].Text())
			if observed && !tc.concurrent {
				assert.Equal(t, []string{"tool_start:a", "tool_end:a", "tool_start:b", "tool_end:b"}, events)
			}
			if tc.concurrent {
				assert.EqualValues(t, 2, f.peak.Load())
			} else {
				assert.EqualValues(t, 1, f.peak.Load())
			}
		})
	}
}

// TestParallelResultsInCallOrder makes calls finish in reverse order.
func TestParallelResultsInCallOrder(t *testing.T) {
	const n = 8
	finished := make([]chan struct{}, n+1)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	close(finished[n])
	var order []int
	var mu sync.Mutex
	tl := newTool(t, "rev", safe, func(ctx context.Context, id string, args json.RawMessage) (tool.Result, error) {
		var in struct{ I int }
		_ = json.Unmarshal(args, &in)
		select { // call i finishes after call i+1
		case <-finished[in.I+1]:
		case <-ctx.Done():
			return tool.Result{}, ctx.Err()
		}
		mu.Lock()
		order = append(order, in.I)
		mu.Unlock()
		close(finished[in.I])
		return tool.Text(id), nil
	})
	rec := &recorder{}
	var after []int
	hooks := executor.Hooks{AfterCall: func(_ context.Context, req *executor.Request, _ *tool.Result) error {
		after = append(after, req.Index)
		return nil
	}}
	res, err := executor.Parallel(executor.WithObserver(rec.observe), executor.WithHooks(hooks)).
		Execute(context.Background(), executor.Batch{Calls: calls(n, "rev"), Tools: executor.Tools(tl)})
	require.NoError(t, err)
	for i, r := range res {
		assert.Equal(t, fmt.Sprintf("c%d", i), r.Text())
	}
	assert.Equal(t, []int{7, 6, 5, 4, 3, 2, 1, 0}, order, "the tools finished in reverse")
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, after, "AfterCall ran in call order")
	var ends []int
	for _, ev := range rec.of(executor.ToolEnd) {
		ends = append(ends, ev.Index)
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, ends, "ToolEnd in call order")
}

func TestCancelledContextAnswersEveryCall(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name+"/before", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			rec := &recorder{}
			res, err := k.make(executor.WithObserver(rec.observe)).Execute(ctx, executor.Batch{Calls: calls(5, "echo"), Tools: executor.Tools(echo(t, "echo"))})
			require.NoError(t, err)
			require.Len(t, res, 5)
			for _, r := range res {
				assert.Equal(t, tool.StatusCancelled, r.Status)
				assert.ErrorIs(t, r.Err, context.Canceled)
			}
			assert.Len(t, rec.of(executor.ToolStart), 5)
			assert.Len(t, rec.of(executor.ToolEnd), 5)
		})
		t.Run(k.name+"/during", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{}, 10)
			blocker := newTool(t, "block", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
				started <- struct{}{}
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			})
			go func() { <-started; cancel() }()
			res, err := k.make().Execute(ctx, executor.Batch{Calls: calls(4, "block"), Tools: executor.Tools(blocker)})
			require.NoError(t, err)
			require.Len(t, res, 4)
			for _, r := range res {
				assert.Equal(t, tool.StatusCancelled, r.Status, r.Text())
			}
		})
	}
}

// TestParallelDoesNotWaitForHelpersIgnoringCancellation checks that a
// tool that ignores its context does not hold Execute once the context
// ends, when a helper goroutine runs it. (The goroutine that calls Execute
// runs the first call itself; here that one honours its context.)
func TestParallelDoesNotWaitForHelpersIgnoringCancellation(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // lets the abandoned goroutine end before goleak checks
	started := make(chan struct{}, 2)
	polite := newTool(t, "polite", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	stubborn := newTool(t, "stubborn", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		started <- struct{}{}
		<-release
		return tool.Text("too late"), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; <-started; cancel() }()
	res, err := executor.Parallel().Execute(ctx, executor.Batch{
		Calls: []model.ToolCall{call("a", "polite", ""), call("b", "stubborn", "")},
		Tools: executor.Tools(polite, stubborn),
	})
	require.NoError(t, err)
	for _, r := range res {
		assert.Equal(t, tool.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
	}
}

// TestDeadlineAnswersRunningCallsWithTimeout runs in a synctest bubble,
// where the deadline passes only once every goroutine waits: both calls
// are running by then.
func TestDeadlineAnswersRunningCallsWithTimeout(t *testing.T) {
	synctest.Test(t, testDeadlineAnswersRunningCallsWithTimeout)
}

func testDeadlineAnswersRunningCallsWithTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	polite := newTool(t, "polite", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	stubborn := newTool(t, "stubborn", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		<-release
		return tool.Text("too late"), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	res, err := executor.Parallel().Execute(ctx, executor.Batch{
		Calls: []model.ToolCall{call("a", "polite", ""), call("b", "stubborn", "")},
		Tools: executor.Tools(polite, stubborn),
	})
	require.NoError(t, err)
	for _, r := range res {
		assert.Equal(t, tool.StatusTimeout, r.Status)
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	}
}

func TestFailFast(t *testing.T) {
	// Without an observer, middleware or hooks, the sequential executor
	// runs the calls without Requests: both ways are checked.
	for _, observed := range []bool{false, true} {
		for _, k := range kinds {
			t.Run(fmt.Sprintf("%s/observed=%v", k.name, observed), func(t *testing.T) {
				testFailFast(t, k, observed)
			})
		}
	}
}

func testFailFast(t *testing.T, k kind, observed bool) {
	fail := newTool(t, "fail", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Result{}, errors.New("disk full")
	})
	waiter := newTool(t, "wait", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		<-ctx.Done() // runs until the batch is stopped
		return tool.Result{}, ctx.Err()
	})
	batch := executor.Batch{
		Calls: []model.ToolCall{call("w", "wait", ""), call("f", "fail", ""), call("x", "wait", "")},
		Tools: executor.Tools(fail, waiter),
	}
	if k.name == "sequential" { // the first waiter would wait forever in line
		batch.Calls = batch.Calls[1:]
	}
	opts := []executor.Option{executor.WithFailFast()}
	rec := &recorder{}
	if observed {
		opts = append(opts, executor.WithObserver(rec.observe))
	}
	res, err := k.make(opts...).Execute(context.Background(), batch)
	require.Error(t, err)
	assert.ErrorIs(t, err, executor.ErrFailFast)
	assert.ErrorIs(t, err, executor.ErrStopped)
	var se *executor.StopError
	require.ErrorAs(t, err, &se)
	assert.True(t, se.FailFast)
	assert.Equal(t, "f", se.Call.ID)
	assert.Contains(t, err.Error(), "disk full")
	require.Len(t, res, len(batch.Calls))
	for i, r := range res {
		if batch.Calls[i].ID == "f" {
			assert.Equal(t, tool.StatusFailed, r.Status)
		} else {
			assert.Equal(t, tool.StatusCancelled, r.Status, "call %s", batch.Calls[i].ID)
		}
	}
	if observed {
		assert.Len(t, rec.of(executor.ToolEnd), len(batch.Calls))
	}
}

func TestContinueOnErrorIsTheDefault(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			fail := newTool(t, "fail", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
				return tool.Result{}, errors.New("nope")
			})
			res, err := k.make().Execute(context.Background(), executor.Batch{
				Calls: []model.ToolCall{call("f", "fail", ""), call("x", "echo", "")},
				Tools: executor.Tools(fail, echo(t, "echo")),
			})
			require.NoError(t, err)
			assert.True(t, res[0].IsError)
			assert.Equal(t, tool.StatusSuccess, res[1].Status)
		})
	}
}

func TestErrorPrefix(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			fail := newTool(t, "fail", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
				return tool.Result{}, errors.New("nope")
			})
			waiter := newTool(t, "wait", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
				<-ctx.Done()
				return tool.Result{}, ctx.Err()
			})
			res, err := k.make(executor.WithErrorPrefix("researcher"), executor.WithFailFast()).Execute(context.Background(), executor.Batch{
				Calls: []model.ToolCall{call("f", "fail", ""), call("x", "wait", "")},
				Tools: executor.Tools(fail, waiter),
			})
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "researcher: "), err.Error())
			assert.ErrorIs(t, err, executor.ErrFailFast)
			assert.True(t, strings.HasPrefix(res[0].Err.Error(), "researcher: "), res[0].Err.Error())
			assert.NotContains(t, res[0].Text(), "researcher", "the model's content is unchanged")
			assert.ErrorIs(t, res[1].Err, context.Canceled)
		})
	}
}

func TestToolsLookup(t *testing.T) {
	a, b := echo(t, "a"), echo(t, "b")
	dup := newTool(t, "a", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) { return tool.Text("dup"), nil })
	l := executor.Tools(a, nil, b, dup)
	got, ok := l.Lookup("a")
	require.True(t, ok)
	assert.Same(t, a, got, "the first of two tools with one name is used")
	_, ok = l.Lookup("c")
	assert.False(t, ok)
	assert.Equal(t, []string{"a", "b"}, l.Names())
}

func TestToolListIsALookup(t *testing.T) {
	list, err := tool.Resolve(context.Background(), []tool.Toolset{tool.NewStatic("set", echo(t, "search"))})
	require.NoError(t, err)
	res, err := executor.Sequential().Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{call("1", "search", ""), call("2", "serch", "")},
		Tools: list,
	})
	require.NoError(t, err)
	assert.Equal(t, "search:1:{}", res[0].Text())
	assert.Equal(t, tool.CodeUnknownTool, res[1].ErrorCode)
	assert.Contains(t, res[1].Text(), "search")
}

// TestCallsThatNeverRanAreCancelled checks that the calls a capped parallel
// batch never started, because its context's deadline passed or because
// it was stopped, are answered as not run (cancelled), as the sequential
// executor answers them, while the call that was running when the deadline
// passed is answered with a timeout.
func TestCallsThatNeverRanAreCancelled(t *testing.T) {
	var ran atomic.Int32
	waiter := newTool(t, "wait", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		ran.Add(1)
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	fail := newTool(t, "fail", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Result{}, errors.New("disk full")
	})
	tools := executor.Tools(waiter, fail)
	t.Run("deadline", func(t *testing.T) {
		// In a synctest bubble the deadline passes only once every
		// goroutine waits: the first call is running by then.
		synctest.Test(t, func(t *testing.T) {
			ran.Store(0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			res, err := executor.Parallel(executor.WithMaxConcurrency(1)).Execute(ctx, executor.Batch{Calls: calls(3, "wait"), Tools: tools})
			require.NoError(t, err)
			require.Len(t, res, 3)
			assert.EqualValues(t, 1, ran.Load(), "one call ran")
			assert.Equal(t, tool.StatusTimeout, res[0].Status)
			for _, r := range res[1:] {
				assert.Equal(t, tool.StatusCancelled, r.Status, "a call that never ran is cancelled: %v", r.Err)
				assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
				assert.ErrorContains(t, r.Err, "was not run")
			}
		})
	})
	t.Run("fail fast", func(t *testing.T) {
		ran.Store(0)
		res, err := executor.Parallel(executor.WithMaxConcurrency(1), executor.WithFailFast()).Execute(context.Background(), executor.Batch{
			Calls: []model.ToolCall{call("f", "fail", ""), call("a", "wait", ""), call("b", "wait", "")},
			Tools: tools,
		})
		require.ErrorIs(t, err, executor.ErrFailFast)
		require.Len(t, res, 3)
		assert.Zero(t, ran.Load())
		assert.Equal(t, tool.StatusFailed, res[0].Status)
		for _, r := range res[1:] {
			assert.Equal(t, tool.StatusCancelled, r.Status)
			assert.ErrorIs(t, r.Err, context.Canceled)
			assert.ErrorContains(t, r.Err, "was not run: the batch was stopped")
			var se *executor.StopError
			assert.False(t, errors.As(r.Err, &se), "a call's result does not carry the batch's error: %v", r.Err)
		}
	})
}

// TestDeadlineWithCauseIsATimeout checks that a call still running when a
// deadline with a cause of its own passes is answered with a timeout that
// keeps the cause, whether the tool or the executor answers it, and that a
// call not run is answered cancelled with both. It runs in a synctest
// bubble, where the deadline passes only once every goroutine waits: both
// calls are running by then.
func TestDeadlineWithCauseIsATimeout(t *testing.T) {
	synctest.Test(t, testDeadlineWithCauseIsATimeout)
}

func testDeadlineWithCauseIsATimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	polite := newTool(t, "polite", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	stubborn := newTool(t, "stubborn", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		<-release
		return tool.Text("too late"), nil
	})
	errBudget := errors.New("turn budget spent")
	ctx, cancel := context.WithTimeoutCause(context.Background(), 10*time.Millisecond, errBudget)
	defer cancel()
	res, err := executor.Parallel().Execute(ctx, executor.Batch{
		Calls: []model.ToolCall{call("a", "polite", ""), call("b", "stubborn", "")},
		Tools: executor.Tools(polite, stubborn),
	})
	require.NoError(t, err)
	for _, r := range res {
		assert.Equal(t, tool.StatusTimeout, r.Status, "%v", r.Err)
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	}
	assert.ErrorIs(t, res[1].Err, errBudget, "the executor's answer keeps the cause")

	for _, k := range kinds {
		res, err := k.make().Execute(ctx, executor.Batch{Calls: calls(2, "polite"), Tools: executor.Tools(polite)})
		require.NoError(t, err)
		for _, r := range res {
			assert.Equal(t, tool.StatusCancelled, r.Status, k.name)
			assert.ErrorIs(t, r.Err, context.DeadlineExceeded, k.name)
			assert.ErrorIs(t, r.Err, errBudget, k.name)
		}
	}
}
