package executor

import (
	"context"
	"errors"
	"testing"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// TestFailFastAnswersBeforeStopping checks that a call failing under
// WithFailFast has its result in before it stops the batch. Stopping the
// batch ends its context, and the goroutine that runs Execute answers every
// call not yet answered with a cancelled result as soon as it sees that
// context end; if the failing call's result came in only afterwards, the
// call that stopped the batch would be reported as cancelled.
func TestFailFastAnswersBeforeStopping(t *testing.T) {
	c := newCore(&config{failFast: true})
	c.handler = HandlerFunc(func(context.Context, *Request) tool.Result {
		return tool.ErrorResult(tool.CodeToolError, errors.New("disk full"))
	})
	for _, ends := range []int{endsCollected, endsByWorkers, endsStreamed} {
		parent := context.Background()
		ctx, cancel := context.WithCancelCause(parent)
		reqs, results := newRequests(2, batchRoom{})
		lookup(Batch{Calls: []model.ToolCall{{ID: "a", Name: "x"}, {ID: "b", Name: "x"}}}, reqs)
		pb := &pbatch{
			c: &c, parent: parent, ctx: ctx,
			reqs: reqs, slots: make([]slot, 2), results: results,
			ends: ends, allDone: make(chan struct{}), wake: make(chan struct{}, 2),
		}
		if ends == endsByWorkers {
			pb.w = new(watch)
			pb.w.init(parent, func(context.Context, Event) {}, []model.ToolCall{{ID: "a"}, {ID: "b"}}, reqs)
		}
		pb.slots[0].state, pb.slots[1].state = stDispatched, stDispatched
		pb.next = 1 // call 0 is not part of this test
		pb.pending.Store(1)
		var abandonedFirst bool
		pb.cancel = func(cause error) {
			// What Execute does once the batch's context ends.
			abandonedFirst = pb.slots[1].body.CompareAndSwap(bodyRunning, bodyAbandoned)
			cancel(cause)
		}
		pb.runBody(1)
		if abandonedFirst {
			t.Errorf("ends %d: the batch was stopped before the failing call was answered", ends)
		}
		if pb.stop == nil || pb.stop.Index != 1 || !pb.stop.FailFast {
			t.Errorf("ends %d: stop = %+v", ends, pb.stop)
		}
		cancel(nil)
	}
}
