package integration

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/tool"
)

// instantClock is a clock whose sleeps end at once.
type instantClock struct{}

func (instantClock) Now() time.Time { return time.Unix(1_700_000_000, 0) }

func (instantClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// sharedExecutor is one parallel executor, with the recommended middleware,
// for every agent of a team.
func sharedExecutor() executor.Executor {
	return executor.Parallel(nodes.StreamToolEvents(), executor.WithMiddleware(
		middleware.Cache(middleware.WithClock(instantClock{})),
		middleware.Retry(middleware.WithMaxAttempts(3), middleware.WithClock(instantClock{})),
		middleware.CircuitBreaker(middleware.WithConsecutiveFailures(2)),
		middleware.Timeout(time.Minute),
	))
}

// A worker's parallel calls go through cache, retry, breaker and timeout,
// inside a supervisor whose handoffs use the same executor: identical
// read-only calls run once (and not at all in the next turn), a transient
// failure is retried, a worker's pause for a human is neither retried nor
// counted by the breaker, and every call has one start and one end event.
func TestMiddlewareAroundWorkersAndTheirPauses(t *testing.T) {
	slow(t)
	eachStore(t, func(t *testing.T, saver state.Saver) {
		ctx := context.Background()
		lookups, flakyRuns, asks := newCounter(), newCounter(), newCounter()
		var failed atomic.Bool
		lookup := tool.MustFunc("lookup", "looks an invoice up", func(ctx context.Context, in struct {
			Invoice string `json:"invoice"`
		}) (string, error) {
			lookups.add(in.Invoice)
			return in.Invoice + " is due", nil
		}, tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
		flaky := tool.MustFunc("ledger", "reads the ledger", func(ctx context.Context, in struct {
			Invoice string `json:"invoice"`
		}) (string, error) {
			flakyRuns.add(in.Invoice)
			if failed.CompareAndSwap(false, true) {
				return "", middleware.Transient(errors.New("ledger busy"))
			}
			return in.Invoice + " unpaid", nil
		}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
		approve := tool.MustFunc("approve", "asks a human", func(ctx context.Context, in struct {
			Invoice string `json:"invoice"`
		}) (string, error) {
			asks.add(in.Invoice)
			ok, err := graph.Interrupt[bool](ctx, "approve "+in.Invoice+"?")
			if err != nil {
				return "", err
			}
			return "approved=" + map[bool]string{true: "yes", false: "no"}[ok], nil
		}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))

		exec := sharedExecutor()
		wm := reactive("clerk", func(msgs []model.Message) model.Message {
			last := msgs[len(msgs)-1]
			if last.Role == model.RoleTool {
				return model.Assistant("clerk: " + strings.Join(trailingToolTexts(msgs), "; "))
			}
			args := jsonArgs(map[string]string{"invoice": last.Text()})
			return model.Assistant("",
				scripted.Call("lookup", args), scripted.Call("lookup", args),
				scripted.Call("ledger", args), scripted.Call("approve", args))
		})
		clerk, err := agent.NewReAct(wm, agent.WithName("clerk"), agent.WithTools(lookup, flaky, approve), agent.WithExecutor(exec))
		require.NoError(t, err)
		sm := reactive("boss", func(msgs []model.Message) model.Message {
			last := msgs[len(msgs)-1]
			if last.Role == model.RoleTool {
				return model.Assistant("boss: " + last.Text())
			}
			return model.Assistant("", scripted.CallWithID("c"+itoa(userTurns(msgs)), "clerk", jsonArgs(map[string]string{"task": lastUser(msgs)})))
		})
		sup, err := agent.NewSupervisor(sm, []agent.Worker{{Name: "clerk", Description: "Checks invoices.", Agent: clerk}},
			agent.WithExecutor(exec), agent.WithCheckpointer(saver))
		require.NoError(t, err)

		evs, err := collect(sup.Stream(ctx, agent.Ask("INV-1"), graph.WithThread("mw"), graph.WithModes(graph.ModeEvents)))
		var ie *graph.InterruptError
		require.ErrorAs(t, err, &ie)
		require.Len(t, ie.Interrupts, 1)
		assert.Equal(t, []string{"clerk"}, ie.Interrupts[0].Path)
		assert.Equal(t, []string{"INV-1"}, lookups.drain(), "identical read-only calls run once")
		assert.Equal(t, []string{"INV-1", "INV-1"}, flakyRuns.drain(), "the transient failure is retried once")
		// The paused call waits alone in a new superstep, where it asks
		// again: two pauses, neither retried.
		assert.Equal(t, []string{"INV-1", "INV-1"}, asks.drain())
		starts, ends := map[string]int{}, map[string]int{}
		for _, ev := range evs {
			switch ev.Kind {
			case nodes.KindToolStart:
				starts[pathOf(ev)+":"+ev.Name]++
			case nodes.KindToolEnd:
				ends[pathOf(ev)+":"+ev.Name]++
			}
		}
		assert.Equal(t, starts, ends, "every call that starts ends")
		assert.Equal(t, map[string]int{"clerk:lookup": 2, "clerk:ledger": 1, "clerk:approve": 2, ":clerk": 1}, starts)

		out, err := sup.Resume(ctx, "mw", graph.WithResumeValue(true))
		require.NoError(t, err)
		assert.Equal(t, "boss: clerk: INV-1 is due; INV-1 is due; INV-1 unpaid; approved=yes", agent.FinalText(out.Messages))
		assert.Empty(t, lookups.drain(), "the clerk's finished calls are not run again")
		assert.Empty(t, flakyRuns.drain())
		assert.Equal(t, []string{"INV-1"}, asks.drain())

		// Next turn: the breaker counted neither the pauses nor the retried
		// failure, and the lookup is served from the cache.
		_, err = agent.Continue(ctx, sup, "mw", "INV-1")
		require.ErrorAs(t, err, &ie)
		assert.Empty(t, lookups.drain(), "served from the cache")
		assert.Equal(t, []string{"INV-1"}, flakyRuns.drain())
		assert.Equal(t, []string{"INV-1", "INV-1"}, asks.drain(), "the breaker lets the calls through")
		out, err = sup.Resume(ctx, "mw", graph.WithResumeValue(false))
		require.NoError(t, err)
		assert.Equal(t, "boss: clerk: INV-1 is due; INV-1 is due; INV-1 unpaid; approved=no", agent.FinalText(out.Messages))
	})
}
