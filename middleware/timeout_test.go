package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestTimeoutAnswersAndLeaksNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	slow := newCounted(t, "slow", readOnly, blockUntilDone)
	h := handler(middleware.Timeout(10 * time.Millisecond))
	r := h.Handle(context.Background(), req(slow, "call-7", ""))
	assert.Equal(t, tool.StatusTimeout, r.Status)
	assert.Equal(t, tool.CodeTimeout, r.ErrorCode)
	assert.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	assert.Contains(t, r.Text(), `tool "slow" timed out after 10ms`)
}

// TestTimeoutDoesNotWaitForAToolIgnoringItsContext checks that the call is
// answered on time and that the abandoned goroutine ends once the tool
// returns.
func TestTimeoutDoesNotWaitForAToolIgnoringItsContext(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	release := make(chan struct{})
	stubborn := newCounted(t, "stubborn", readOnly, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		<-release
		return tool.Text("late"), nil
	})
	h := handler(middleware.Timeout(10 * time.Millisecond))
	r := h.Handle(context.Background(), req(stubborn, "1", ""))
	assert.Equal(t, tool.StatusTimeout, r.Status)
	close(release) // the abandoned goroutine returns; VerifyNone sees it gone
}

func TestTimeoutPerTool(t *testing.T) {
	// A call that is to time out runs until its context ends, so that no
	// load can make it finish first; one that is not runs past the 5 ms
	// default, then finishes. Either gives up after a deadline, and the
	// status then tells the timeout did not come, or came.
	slow := func(timesOut bool) *counted {
		return newCounted(t, "slow", readOnly, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
			var done <-chan time.Time
			if !timesOut {
				done = time.After(30 * time.Millisecond)
			}
			select {
			case <-done:
				return tool.Text("finished"), nil
			case <-time.After(10 * time.Second):
				return tool.Text("never cut"), nil
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
		})
	}
	cases := []struct {
		name string
		mw   executor.Middleware
		want tool.Status
	}{
		{"default applies", middleware.Timeout(5 * time.Millisecond), tool.StatusTimeout},
		{"override allows more", middleware.Timeout(5*time.Millisecond, middleware.WithToolTimeout("slow", time.Minute)), tool.StatusSuccess},
		{"override disables", middleware.Timeout(5*time.Millisecond, middleware.WithToolTimeout("slow", 0)), tool.StatusSuccess},
		{"no default", middleware.Timeout(0), tool.StatusSuccess},
		{"override tightens", middleware.Timeout(0, middleware.WithToolTimeout("slow", 5*time.Millisecond)), tool.StatusTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := handler(tc.mw).Handle(context.Background(), req(slow(tc.want == tool.StatusTimeout), "1", ""))
			assert.Equal(t, tc.want, r.Status, r.Text())
		})
	}
}

func TestTimeoutCallerCancelled(t *testing.T) {
	slow := newCounted(t, "slow", readOnly, blockUntilDone)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	r := handler(middleware.Timeout(time.Minute)).Handle(ctx, req(slow, "1", ""))
	assert.Equal(t, tool.StatusCancelled, r.Status)
	assert.ErrorIs(t, r.Err, context.Canceled)
}

func TestTimeoutFastCallUnchanged(t *testing.T) {
	fast := newCounted(t, "fast", readOnly, ok("quick"))
	r := handler(middleware.Timeout(time.Minute)).Handle(context.Background(), req(fast, "1", ""))
	assert.Equal(t, "quick", r.Text())
	assert.Equal(t, tool.StatusSuccess, r.Status)
}

func TestTimeoutRecoversPanicsOnItsGoroutine(t *testing.T) {
	boom := executor.Intercept(func(context.Context, *executor.Request, executor.Handler) tool.Result { panic("inner bug") })
	r := handler(middleware.Timeout(time.Minute), boom).Handle(context.Background(), req(nil, "1", ""))
	assert.Equal(t, tool.CodePanic, r.ErrorCode)
	assert.Contains(t, r.Details, "goroutine")
}

func TestTimeoutThroughExecutorKeepsCallID(t *testing.T) {
	slow := newCounted(t, "slow", readOnly, blockUntilDone)
	var ends []executor.Event
	ex := executor.Parallel(
		executor.WithMiddleware(middleware.Timeout(10*time.Millisecond)),
		executor.WithObserver(func(_ context.Context, ev executor.Event) {
			if ev.Kind == executor.ToolEnd {
				ends = append(ends, ev)
			}
		}),
	)
	res, err := ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "a", Name: "slow"}, {ID: "b", Name: "slow"}},
		Tools: executor.Tools(slow),
	})
	require.NoError(t, err)
	require.Len(t, ends, 2)
	for i, id := range []string{"a", "b"} {
		assert.Equal(t, tool.StatusTimeout, res[i].Status)
		assert.Equal(t, id, ends[i].Call.ID)
	}
}

// TestTimeoutKeepsATimeoutItDidNotCause checks that a call that timed out
// inside the chain (a tool's own deadline, an inner attempt timeout) before
// Timeout's deadline is answered with that timeout, which names what timed
// out, not with one that blames Timeout's own limit.
func TestTimeoutKeepsATimeoutItDidNotCause(t *testing.T) {
	upstream := errors.New(`upstream "geo" did not answer within 5s`)
	inner := executor.Intercept(func(context.Context, *executor.Request, executor.Handler) tool.Result {
		r := tool.ErrorResult(tool.CodeTimeout, fmt.Errorf("%w: %w", upstream, context.DeadlineExceeded))
		r.Status = tool.StatusTimeout
		return r
	})
	fast := newCounted(t, "fast", readOnly, ok("unused"))
	r := handler(middleware.Timeout(time.Hour), inner).Handle(context.Background(), req(fast, "1", ""))
	assert.Equal(t, tool.StatusTimeout, r.Status)
	assert.ErrorIs(t, r.Err, upstream)
	assert.Contains(t, r.Text(), "within 5s")
	assert.NotContains(t, r.Text(), "1h0m0s")
}
