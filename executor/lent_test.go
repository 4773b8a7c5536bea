package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/internal/callroom"
	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// chat is a state with a conversation, as a ToolsNode's.
type chat struct{ Messages []model.Message }

func (c *chat) ChatMessages() *[]model.Message { return &c.Messages }

// lending returns a context that lends storage, as a ToolsNode's does,
// and the storage.
func lending() (context.Context, *callroom.Room) {
	w := runctx.NewKind[chat, *chat, callroom.Room]().New(context.Background(), chat{})
	return w.Context(), &w.Extra
}

// TestLentStorageHoldsTheResults runs batches of one and of several calls
// through each executor, with and without middleware and an observer (each
// takes its own path), in a context that lends the executor storage, and
// checks that the results are those of a batch without it and that they
// land in the storage lent.
func TestLentStorageHoldsTheResults(t *testing.T) {
	tools := executor.Tools(echo(t, "echo"))
	pass := func(next executor.Handler) executor.Handler { return next }
	configs := []struct {
		name string
		opts []executor.Option
	}{
		{"plain", nil},
		{"middleware", []executor.Option{executor.WithMiddleware(pass)}},
		{"observer", []executor.Option{executor.WithObserver(func(context.Context, executor.Event) {})}},
	}
	for _, k := range kinds {
		for _, cfg := range configs {
			for _, n := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/%s/%d", k.name, cfg.name, n), func(t *testing.T) {
					e := k.make(cfg.opts...)
					b := executor.Batch{Calls: calls(n, "echo"), Tools: tools}
					want, err := e.Execute(context.Background(), b)
					require.NoError(t, err)

					ctx, room := lending()
					room.Lend(e)
					got, err := e.Execute(ctx, b)
					require.NoError(t, err)
					require.Len(t, got, n)
					require.NotNil(t, room.Taken(), "the executor takes the storage lent to it")
					assert.Same(t, &room.Taken()[0], &got[0], "the results are in the storage lent")
					assert.Equal(t, n, cap(got), "the results are clipped to the batch")
					for i := range n {
						assert.Equal(t, want[i].Text(), got[i].Text())
						assert.Equal(t, tool.StatusSuccess, got[i].Status)
					}
					room.Release()
				})
			}
		}
	}
}

// TestLentStorageIsTakenByItsExecutorOnly lends storage to one executor
// and runs the batch with others, and with the same one twice: only the
// first run of the executor it was lent to takes it. The executor inside a
// wrapper (a Guard) that storage is lent to gets none.
func TestLentStorageIsTakenByItsExecutorOnly(t *testing.T) {
	b := executor.Batch{Calls: calls(2, "echo"), Tools: executor.Tools(echo(t, "echo"))}
	inner := executor.Sequential()
	guarded := executor.Guard(inner)

	ctx, room := lending()
	room.Lend(guarded)
	got, err := guarded.Execute(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, `echo:c1:{"i":1}`, got[1].Text())
	assert.Nil(t, room.Taken(), "lent to the Guard, not to the executor inside it")
	_, err = executor.Parallel().Execute(ctx, b)
	require.NoError(t, err)
	assert.Nil(t, room.Taken(), "lent to another executor")

	ctx, room = lending()
	room.Lend(inner)
	first, err := inner.Execute(ctx, b)
	require.NoError(t, err)
	require.NotNil(t, room.Taken())
	assert.Same(t, &room.Taken()[0], &first[0])
	again, err := inner.Execute(ctx, b)
	require.NoError(t, err)
	assert.NotSame(t, &first[0], &again[0], "storage is lent once")
	room.Release()
}

// TestLentStorageIsLeftAloneAfterReturning cancels a parallel batch whose
// tool ignores its context: Execute answers the call as cancelled and
// returns, and the tool's late result, once it comes, is not written into
// the storage lent, which the lender may be using again by then (the race
// detector watches the storage too).
func TestLentStorageIsLeftAloneAfterReturning(t *testing.T) {
	release := make(chan struct{})
	finished := make(chan struct{})
	started := make(chan struct{}, 2)
	polite := newTool(t, "polite", safe, func(ctx context.Context, _ string, _ json.RawMessage) (tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return tool.Result{}, ctx.Err()
	})
	stubborn := newTool(t, "stubborn", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		defer close(finished)
		started <- struct{}{}
		<-release
		return tool.Text("too late"), nil
	})
	base := runtime.NumGoroutine()
	lctx, room := lending()
	ctx, cancel := context.WithCancel(lctx)
	go func() { <-started; <-started; cancel() }()
	e := executor.Parallel()
	room.Lend(e)
	got, err := e.Execute(ctx, executor.Batch{
		Calls: []model.ToolCall{call("a", "polite", ""), call("b", "stubborn", "")},
		Tools: executor.Tools(polite, stubborn),
	})
	require.NoError(t, err)
	dst := room.Taken()
	require.Same(t, &dst[0], &got[0])
	assert.Equal(t, tool.StatusCancelled, got[1].Status)

	dst[1] = tool.Text("the caller's again") // written while the tool still runs
	close(release)
	<-finished
	// The worker goroutine hands its result over after the tool returns:
	// wait until it has ended.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > base; time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the batch's goroutines did not end")
	}
	assert.Equal(t, "the caller's again", dst[1].Text(), "the late result is dropped")
	room.Release()
}

// TestLentStorageHoldsASingleCallsFrame runs a single call of a tool that
// allocates nothing, in storage lent for it: the batch allocates nothing
// either. Without storage lent, it allocates the call's frame and result.
func TestLentStorageHoldsASingleCallsFrame(t *testing.T) {
	quiet := newTool(t, "quiet", safe, func(context.Context, string, json.RawMessage) (tool.Result, error) {
		return tool.Result{}, nil
	})
	b := executor.Batch{Calls: []model.ToolCall{call("a", "quiet", `{}`)}, Tools: executor.Tools(quiet)}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			e := k.make()
			// Fresh storage for every run, made before the measured calls:
			// a frame serves one call only.
			ctxs := make([]context.Context, 100)
			rooms := make([]*callroom.Room, 100)
			for i := range ctxs {
				ctxs[i], rooms[i] = lending()
				rooms[i].Lend(e)
			}
			next := 0
			with := testing.AllocsPerRun(50, func() {
				res, err := e.Execute(ctxs[next], b)
				if err != nil || res[0].Status != tool.StatusSuccess {
					t.Fatalf("%v %+v", err, res)
				}
				rooms[next].Release()
				next++
			})
			without := testing.AllocsPerRun(50, func() {
				if _, err := e.Execute(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			})
			assert.Equal(t, 0.0, with, "the frame lent is the call's")
			assert.Equal(t, 1.0, without, "the call's frame and result")
		})
	}
}

// TestTypedToolsShareTheArgumentsOfLentBatchesOnly runs an echoing typed
// tool through each executor. Where storage is lent (the calls are a run
// state's) and nothing stands between the executor and the tool, the
// text it echoes shares the call's arguments; with middleware, or
// without storage lent, it is a copy. In parallel, the calls that run
// concurrently are told as well.
func TestTypedToolsShareTheArgumentsOfLentBatchesOnly(t *testing.T) {
	type args struct {
		Text string `json:"text"`
	}
	echoText := tool.MustFunc("echo", "Echoes.", func(_ context.Context, in args) (string, error) { return in.Text, nil },
		tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	wrap := func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result { return next.Handle(ctx, req) })
	}
	shares := func(text string, raw []byte) bool {
		off := uintptr(unsafe.Pointer(unsafe.StringData(text))) - uintptr(unsafe.Pointer(unsafe.SliceData(raw)))
		return off < uintptr(len(raw))
	}
	for _, k := range kinds {
		for _, n := range []int{1, 3} {
			for _, mw := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%d/middleware=%v", k.name, n, mw), func(t *testing.T) {
					var opts []executor.Option
					if mw {
						opts = append(opts, executor.WithMiddleware(wrap))
					}
					e := k.make(opts...)
					cs := make([]model.ToolCall, n)
					for i := range cs {
						cs[i] = model.ToolCall{ID: fmt.Sprint("c", i), Name: "echo", Arguments: []byte(fmt.Sprintf(`{"text":"echo %d"}`, i))}
					}
					b := executor.Batch{Calls: cs, Tools: executor.Tools(echoText)}
					for _, lent := range []bool{false, true} {
						ctx := context.Background()
						var room *callroom.Room
						if lent {
							ctx, room = lending()
							room.Lend(e)
						}
						res, err := e.Execute(ctx, b)
						require.NoError(t, err)
						for i := range res {
							require.Equal(t, fmt.Sprint("echo ", i), res[i].Text())
							assert.Equal(t, lent && !mw, shares(res[i].Content[0].Text, cs[i].Arguments), "call %d, lent %v", i, lent)
						}
						if room != nil {
							room.Release()
						}
					}
				})
			}
		}
	}
}

// TestLentPartHoldsASingleCallsResultPart lends a single call's frame room
// for its result part, as a ToolsNode does: a typed tool's one-part result
// is written there, with middleware or an observer in between as well,
// and the part lent is left alone when the executor does not take the
// storage.
func TestLentPartHoldsASingleCallsResultPart(t *testing.T) {
	type args struct {
		Text string `json:"text"`
	}
	echoText := tool.MustFunc("echo", "Echoes.", func(_ context.Context, in args) (string, error) { return in.Text, nil })
	pass := func(next executor.Handler) executor.Handler { return next }
	configs := map[string][]executor.Option{
		"plain":      nil,
		"middleware": {executor.WithMiddleware(pass)},
		"observer":   {executor.WithObserver(func(context.Context, executor.Event) {})},
	}
	b := executor.Batch{Calls: []model.ToolCall{{ID: "c1", Name: "echo", Arguments: []byte(`{"text":"hi"}`)}}, Tools: executor.Tools(echoText)}
	for _, k := range kinds {
		for name, opts := range configs {
			t.Run(k.name+"/"+name, func(t *testing.T) {
				e := k.make(opts...)
				ctx, room := lending()
				var part model.Part
				room.LendPart(&part)
				room.Lend(e)
				res, err := e.Execute(ctx, b)
				require.NoError(t, err)
				require.Len(t, res[0].Content, 1)
				assert.Same(t, &part, &res[0].Content[0], "the result's part is the one lent")
				assert.Equal(t, "hi", part.Text)
				room.Release()

				ctx, room = lending()
				var unused model.Part
				room.LendPart(&unused)
				room.Lend(executor.Guard(e)) // the executor inside takes nothing
				res, err = executor.Guard(e).Execute(ctx, b)
				require.NoError(t, err)
				assert.Equal(t, "hi", res[0].Text())
				assert.Equal(t, model.Part{}, unused, "a part lent with storage not taken stays unused")
			})
		}
	}
}
