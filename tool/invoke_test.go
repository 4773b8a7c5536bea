package tool

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/model"
)

func TestInvokeSetsCallIDAndRunState(t *testing.T) {
	type state struct{ User string }
	var gotID, gotUser string
	var hadState bool
	ft := MustFunc("search", "", func(ctx context.Context, _ searchArgs) (string, error) {
		gotID = CallID(ctx)
		var s state
		s, hadState = RunState[state](ctx)
		gotUser = s.User
		_, wrongType := RunState[int](ctx)
		assert.False(t, wrongType)
		return "", nil
	})
	ctx := WithRunState(context.Background(), state{User: "ada"})
	Invoke(ctx, ft, model.ToolCall{ID: "call_42", Name: "search", Arguments: json.RawMessage(`{"query":"x"}`)})
	assert.Equal(t, "call_42", gotID)
	assert.True(t, hadState)
	assert.Equal(t, "ada", gotUser)
	assert.Equal(t, "", CallID(context.Background()))
}

func TestProgressOnlyWhileTheCallRuns(t *testing.T) {
	var mu sync.Mutex
	var updates []Update
	sink := func(u Update) {
		mu.Lock()
		defer mu.Unlock()
		updates = append(updates, u)
	}
	release := make(chan struct{})
	lateDelivered := make(chan bool, 1)
	ft := MustFunc("search", "", func(ctx context.Context, _ searchArgs) (string, error) {
		assert.True(t, ReportProgress(ctx, Update{Message: "1 of 2"}))
		assert.True(t, ReportProgress(ctx, Update{Message: "2 of 2", Details: 2}))
		go func() {
			<-release
			lateDelivered <- ReportProgress(ctx, Update{Message: "too late"})
		}()
		return "done", nil
	})
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"query":"x"}`)}, WithProgress(sink))
	require.Equal(t, "done", r.Text())
	close(release)
	assert.False(t, <-lateDelivered, "an update after the call returned is dropped")

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []Update{
		{CallID: "c1", ToolName: "search", Message: "1 of 2"},
		{CallID: "c1", ToolName: "search", Message: "2 of 2", Details: 2},
	}, updates)
	assert.False(t, ReportProgress(context.Background(), Update{}), "nothing listens outside a call")
}

func TestStreamingToolForwardsAndMerges(t *testing.T) {
	st, err := NewStreamFunc("story", "Tells a story", func(ctx context.Context, in searchArgs) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			for _, w := range []string{"Once ", "upon ", in.Query} {
				if !yield(w, nil) {
					return
				}
			}
		}
	})
	require.NoError(t, err)
	var updates []string
	r := Invoke(context.Background(), st, model.ToolCall{ID: "s1", Name: "story", Arguments: json.RawMessage(`{"query":"a time"}`)},
		WithProgress(func(u Update) { updates = append(updates, u.Content[0].Text) }))
	assert.Equal(t, []string{"Once ", "upon ", "a time"}, updates)
	require.Len(t, r.Content, 1, "adjacent text pieces are joined")
	assert.Equal(t, "Once upon a time", r.Text())
	assert.Equal(t, StatusSuccess, r.Status)

	// Called without Invoke, the stream is merged too.
	direct, err := st.Call(context.Background(), "s2", json.RawMessage(`{"query":"end"}`))
	require.NoError(t, err)
	assert.Equal(t, "Once upon end", direct.Text())

	// Invalid arguments: the stream function never runs.
	r = Invoke(context.Background(), st, model.ToolCall{ID: "s3", Name: "story", Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
}

func TestStreamingToolError(t *testing.T) {
	boom := errors.New("disk full")
	st, err := NewStreamFunc("dump", "", func(ctx context.Context, _ searchArgs) iter.Seq2[model.Part, error] {
		return func(yield func(model.Part, error) bool) {
			if !yield(model.TextPart("partial "), nil) {
				return
			}
			yield(model.Part{}, boom)
		}
	})
	require.NoError(t, err)
	r := Invoke(context.Background(), st, model.ToolCall{ID: "s", Name: "dump", Arguments: json.RawMessage(`{"query":"x"}`)})
	assert.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, boom)
	assert.Equal(t, `partial tool "dump" failed: disk full`, r.Text())
}

func TestInvokeKeepsMetadataOfFailedCalls(t *testing.T) {
	boom := errors.New("quota exceeded")
	ft, err := NewFunc("meter", "", func(context.Context, searchArgs) (Result, error) {
		return Result{Metadata: map[string]string{"used": "7"}}, boom
	})
	require.NoError(t, err)
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "m", Name: "meter", Arguments: json.RawMessage(`{"query":"x"}`)})
	assert.True(t, r.IsError)
	assert.Equal(t, map[string]string{"used": "7"}, r.Metadata)

	st, err := NewStreamFunc("meter2", "", func(ctx context.Context, _ searchArgs) iter.Seq2[Result, error] {
		return func(yield func(Result, error) bool) {
			if !yield(Result{Content: []model.Part{model.TextPart("a")}, Metadata: map[string]string{"used": "1"}}, nil) {
				return
			}
			yield(Result{}, boom)
		}
	})
	require.NoError(t, err)
	r = Invoke(context.Background(), st, model.ToolCall{ID: "m", Name: "meter2", Arguments: json.RawMessage(`{"query":"x"}`)})
	assert.ErrorIs(t, r.Err, boom)
	assert.Equal(t, map[string]string{"used": "1"}, r.Metadata)

	// What a stream yields with its error counts too.
	st, err = NewStreamFunc("meter3", "", func(ctx context.Context, _ searchArgs) iter.Seq2[Result, error] {
		return func(yield func(Result, error) bool) {
			yield(Result{Details: "log", Metadata: map[string]string{"used": "2"}}, boom)
		}
	})
	require.NoError(t, err)
	r = Invoke(context.Background(), st, model.ToolCall{ID: "m", Name: "meter3", Arguments: json.RawMessage(`{"query":"x"}`)})
	assert.ErrorIs(t, r.Err, boom)
	assert.Equal(t, "log", r.Details)
	assert.Equal(t, map[string]string{"used": "2"}, r.Metadata)
}

func TestInvokeTimeoutAndCancellation(t *testing.T) {
	waiter := MustFunc("wait", "", func(ctx context.Context, _ searchArgs) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	args := json.RawMessage(`{"query":"x"}`)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r := Invoke(ctx, waiter, model.ToolCall{ID: "t", Name: "wait", Arguments: args})
	assert.Equal(t, StatusTimeout, r.Status)
	assert.Equal(t, CodeTimeout, r.ErrorCode)
	assert.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)

	ctx, cancel = context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	r = Invoke(ctx, waiter, model.ToolCall{ID: "t", Name: "wait", Arguments: args})
	assert.Equal(t, StatusCancelled, r.Status)
	assert.Equal(t, CodeCancelled, r.ErrorCode)

	// A context that is already done: the tool does not run.
	ran := false
	quick := MustFunc("quick", "", func(context.Context, searchArgs) (string, error) { ran = true; return "", nil })
	r = Invoke(ctx, quick, model.ToolCall{ID: "t", Name: "quick", Arguments: args})
	assert.Equal(t, StatusCancelled, r.Status)
	assert.False(t, ran)

	// A tool that ignores its deadline and fails afterwards still times out.
	ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	slow := MustFunc("slow", "", func(context.Context, searchArgs) (string, error) {
		time.Sleep(5 * time.Millisecond)
		return "", errors.New("upstream gave up")
	})
	r = Invoke(ctx, slow, model.ToolCall{ID: "t", Name: "slow", Arguments: args})
	assert.Equal(t, StatusTimeout, r.Status)

	// The same when the context's timer has not fired yet: the deadline
	// itself is what counts.
	late := lateContext{Context: context.Background(), deadline: time.Now().Add(3 * time.Millisecond)}
	r = Invoke(late, slow, model.ToolCall{ID: "t", Name: "slow", Arguments: args})
	assert.Equal(t, StatusTimeout, r.Status)
	assert.Equal(t, CodeTimeout, r.ErrorCode)
}

// lateContext has a deadline but never reports it passed, like a context
// whose timer has not fired yet.
type lateContext struct {
	context.Context
	deadline time.Time
}

func (c lateContext) Deadline() (time.Time, bool) { return c.deadline, true }

func TestInvokeRecoversPanics(t *testing.T) {
	ft := MustFunc("crash", "", func(context.Context, searchArgs) (string, error) {
		var m map[string]int
		m["boom"] = 1
		return "", nil
	})
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "p", Name: "crash", Arguments: json.RawMessage(`{"query":"x"}`)})
	assert.True(t, r.IsError)
	assert.Equal(t, StatusFailed, r.Status)
	assert.Equal(t, CodePanic, r.ErrorCode)
	var perr *PanicError
	require.ErrorAs(t, r.Err, &perr)
	assert.ErrorIs(t, r.Err, ErrPanic)
	assert.Equal(t, "crash", perr.Tool)
	stack, ok := r.Details.(string)
	require.True(t, ok)
	assert.Contains(t, stack, "TestInvokeRecoversPanics")
	assert.Contains(t, r.Text(), "assignment to entry in nil map")

	// Panics in PrepareArguments and in a stream are caught too.
	prep := MustFunc("prep", "", func(context.Context, searchArgs) (string, error) { return "", nil },
		WithPrepareArguments(func(map[string]any) map[string]any { panic("bad hook") }))
	r = Invoke(context.Background(), prep, model.ToolCall{ID: "p", Name: "prep", Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, CodePanic, r.ErrorCode)
	st, err := NewStreamFunc("st", "", func(context.Context, searchArgs) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) { panic("mid-stream") }
	})
	require.NoError(t, err)
	r = Invoke(context.Background(), st, model.ToolCall{ID: "p", Name: "st", Arguments: json.RawMessage(`{"query":"x"}`)})
	assert.Equal(t, CodePanic, r.ErrorCode)
}

func TestInvokeTruncatesToMaxResultSize(t *testing.T) {
	ft := MustFunc("big", "", func(context.Context, searchArgs) (string, error) {
		return strings.Repeat("é", 100), nil // 200 bytes
	}, WithMetadata(Metadata{MaxResultSize: 51}))
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "b", Name: "big", Arguments: json.RawMessage(`{"query":"x"}`)})
	require.Len(t, r.Content, 2)
	assert.Equal(t, strings.Repeat("é", 25), r.Content[0].Text, "cut at a UTF-8 boundary")
	assert.Equal(t, "\n[result truncated: showing 50 of 200 bytes]", r.Content[1].Text)
	assert.False(t, r.IsError)
}

func TestPipelineOrderAndOnce(t *testing.T) {
	var seen []map[string]any
	var got searchArgs
	ft := MustFunc("search", "", func(_ context.Context, in searchArgs) (string, error) {
		got = in
		return "ok", nil
	}, WithPrepareArguments(func(args map[string]any) map[string]any {
		copied := map[string]any{}
		for k, v := range args {
			copied[k] = v
		}
		seen = append(seen, copied)
		if _, ok := args["query"]; !ok {
			args["query"] = "default"
		}
		args["tags"] = []string{"added", "by", "hook"}
		return args
	}))
	// Repair runs first: the hook sees a parsed object. Coercion runs after
	// the hook: it still sees the string "5".
	r := Invoke(context.Background(), ft, call("```json\n{'limit': '5',}\n```"), WithJSONRepair(true))
	require.False(t, r.IsError, r.Text())
	require.Len(t, seen, 1, "the pipeline ran once")
	assert.Equal(t, map[string]any{"limit": "5"}, seen[0])
	assert.Equal(t, searchArgs{Query: "default", Limit: 5, Tags: []string{"added", "by", "hook"}}, got)

	// Without repair the same text is refused before the hook runs.
	seen = nil
	r = Invoke(context.Background(), ft, call("{'limit': '5',}"))
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), "not valid JSON")
	assert.Empty(t, seen)

	// Validation runs after the hook: a hook cannot sneak in a bad value.
	bad := MustFunc("search", "", func(context.Context, searchArgs) (string, error) { return "", nil },
		WithPrepareArguments(func(args map[string]any) map[string]any { args["limit"] = 1000; return args }))
	r = Invoke(context.Background(), bad, call(`{"query":"x"}`))
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), "$.limit: must be <= 50, got 1000")
}

// plainTool implements only Tool and ArgumentPreparer, as a tool from
// another package would.
type plainTool struct {
	schema   json.RawMessage
	defs     int
	received []json.RawMessage
	mu       sync.Mutex
}

func (p *plainTool) Definition() model.ToolDefinition {
	p.mu.Lock()
	p.defs++
	p.mu.Unlock()
	return model.ToolDefinition{Name: "plain", InputSchema: p.schema}
}

func (p *plainTool) Call(_ context.Context, _ string, args json.RawMessage) (Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.received = append(p.received, args)
	return Text(string(args)), nil
}

func (p *plainTool) PrepareArguments(args map[string]any) map[string]any {
	if v, ok := args["count"].(string); ok && v == "lots" {
		args["count"] = 100
	}
	return args
}

func TestInvokerWithForeignTools(t *testing.T) {
	pt := &plainTool{schema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer","maximum":100}},"additionalProperties":false}`)}
	iv := NewInvoker()
	for i := 0; i < 3; i++ {
		r := iv.Invoke(context.Background(), pt, model.ToolCall{ID: "f", Name: "plain", Arguments: json.RawMessage(`{"count":"7"}`)})
		require.False(t, r.IsError, r.Text())
		assert.JSONEq(t, `{"count":7}`, r.Text())
	}
	assert.Len(t, iv.schemas, 1, "the schema was compiled once")

	r := iv.Invoke(context.Background(), pt, model.ToolCall{ID: "f", Name: "plain", Arguments: json.RawMessage(`{"count":"lots"}`)})
	assert.JSONEq(t, `{"count":100}`, r.Text(), "the tool's own PrepareArguments ran")
	r = iv.Invoke(context.Background(), pt, model.ToolCall{ID: "f", Name: "plain", Arguments: json.RawMessage(`{"count":101}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Len(t, pt.received, 4, "the invalid call never reached the tool")

	broken := &plainTool{schema: json.RawMessage(`{"type":"wrong"}`)}
	r = iv.Invoke(context.Background(), broken, model.ToolCall{ID: "f", Name: "plain", Arguments: json.RawMessage(`{}`)})
	assert.Equal(t, CodeInvalidSchema, r.ErrorCode)
	assert.Empty(t, broken.received)

	// A free Invoke works too (it compiles the schema for the call).
	r = Invoke(context.Background(), pt, model.ToolCall{ID: "f", Name: "plain", Arguments: json.RawMessage(`{"count":1}`)})
	assert.False(t, r.IsError)
}

func TestInvokeNilTool(t *testing.T) {
	r := Invoke(context.Background(), nil, model.ToolCall{ID: "x", Name: "ghost"})
	assert.Equal(t, CodeUnknownTool, r.ErrorCode)
	assert.ErrorIs(t, r.Err, ErrUnknownTool)

	// A typed nil panics in Definition: the panic is caught too.
	var nilTool *FuncTool[searchArgs, string]
	r = Invoke(context.Background(), nilTool, model.ToolCall{ID: "x"})
	assert.Equal(t, CodePanic, r.ErrorCode)
}

func TestLongRunningTools(t *testing.T) {
	jobs := make(chan string, 1)
	ft := MustFunc("report", "Builds a report", func(ctx context.Context, _ searchArgs) (Result, error) {
		jobs <- CallID(ctx)
		return PendingResult("report generation started"), nil
	}, WithLongRunning())
	assert.True(t, IsLongRunning(ft))

	var pending Pending
	r := Invoke(context.Background(), ft, model.ToolCall{ID: "job_1", Name: "report", Arguments: json.RawMessage(`{"query":"q3"}`)}, WithPending(&pending))
	assert.True(t, r.Pending)
	assert.Equal(t, StatusPending, r.Status)
	assert.False(t, r.IsError)
	assert.Equal(t, "report generation started", r.Text())
	require.Len(t, pending.Calls(), 1)
	assert.Equal(t, "job_1", pending.Calls()[0].ID)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		id := <-jobs
		assert.NoError(t, pending.Complete(id, Text("report ready")))
	}()
	final, err := pending.Wait(context.Background(), "job_1")
	require.NoError(t, err)
	wg.Wait()
	assert.Equal(t, "report ready", final.Text())
	assert.Equal(t, StatusSuccess, final.Status)
	assert.Empty(t, pending.Calls())

	// A second pending result with the same call ID is refused.
	require.NoError(t, pending.Add(model.ToolCall{ID: "dup"}))
	jobs2 := MustFunc("report", "", func(context.Context, searchArgs) (Result, error) { return PendingResult(""), nil })
	r = Invoke(context.Background(), jobs2, model.ToolCall{ID: "dup", Name: "report", Arguments: json.RawMessage(`{"query":"q"}`)}, WithPending(&pending))
	assert.True(t, r.IsError)
	assert.ErrorIs(t, r.Err, ErrAlreadyPending)
}

// capped embeds a tool of this package and describes itself differently:
// Invoke must read the wrapper's own answers, not those the embedded tool
// found for itself when it was built.
type capped struct {
	*RawTool
	limit int
}

func (c capped) Metadata() Metadata { return Metadata{MaxResultSize: c.limit} }

func TestProfileServesOnlyTheToolItWasMadeFor(t *testing.T) {
	inner, err := New(model.ToolDefinition{Name: "long"}, func(context.Context, string, json.RawMessage) (Result, error) {
		return Text(strings.Repeat("x", 100)), nil
	})
	require.NoError(t, err)
	call := model.ToolCall{ID: "c1", Name: "long", Arguments: json.RawMessage(`{}`)}

	assert.Len(t, Invoke(context.Background(), inner, call).Text(), 100, "the tool itself sets no limit")
	got := Invoke(context.Background(), capped{RawTool: inner, limit: 10}, call)
	assert.Less(t, len(got.Text()), 100, "the wrapper's limit applies: %q", got.Text())

	decl, err := NewDeclaration(model.ToolDefinition{Name: "long"})
	require.NoError(t, err)
	assert.Equal(t, CodeDeclarationOnly, Invoke(context.Background(), decl, call).ErrorCode)
}

func TestAFrameServesOneCall(t *testing.T) {
	var kept []context.Context
	tl, err := New(model.ToolDefinition{Name: "keep"}, func(ctx context.Context, _ string, _ json.RawMessage) (Result, error) {
		kept = append(kept, ctx)
		return Text(CallID(ctx)), nil
	})
	require.NoError(t, err)
	var iv Invoker
	var f callctx.Frame
	for _, id := range []string{"c1", "c2", "c3"} {
		r := iv.invokeFrame(context.Background(), &f, tl, model.ToolCall{ID: id, Name: "keep"})
		assert.Equal(t, id, r.Text())
	}
	require.Len(t, kept, 3)
	// Each call's context still says which call it belonged to: a frame
	// that served is never written again.
	for i, id := range []string{"c1", "c2", "c3"} {
		assert.Equal(t, id, CallID(kept[i]))
	}
}

// audited embeds a typed tool and overrides Call: Invoke must run the
// override, not the embedded tool's own shortcut.
type audited struct {
	*FuncTool[searchArgs, string]
	calls *[]string
}

func (a audited) Call(ctx context.Context, callID string, args json.RawMessage) (Result, error) {
	*a.calls = append(*a.calls, callID)
	return a.FuncTool.Call(ctx, callID, args)
}

// censored embeds a streaming tool and overrides Stream.
type censored struct {
	*StreamFuncTool[searchArgs, string]
}

func (c censored) Stream(ctx context.Context, callID string, args json.RawMessage) iter.Seq2[Result, error] {
	return func(yield func(Result, error) bool) {
		for r, err := range c.StreamFuncTool.Stream(ctx, callID, args) {
			if err == nil {
				r = Text(strings.ToUpper(r.Text()))
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

func TestInvokeHonoursOverridesOfAnEmbeddedTypedTool(t *testing.T) {
	inner := MustFunc("search", "", func(_ context.Context, a searchArgs) (string, error) { return "found " + a.Query, nil })
	var calls []string
	tl := audited{FuncTool: inner, calls: &calls}
	call := model.ToolCall{ID: "c1", Name: "search", Arguments: json.RawMessage(`{"query":"go"}`)}
	r := Invoke(context.Background(), tl, call)
	assert.Equal(t, "found go", r.Text())
	assert.Equal(t, []string{"c1"}, calls, "the wrapper's Call ran")

	// Invalid arguments are answered by Invoke, as for any tool, before
	// the wrapper is called.
	r = Invoke(context.Background(), tl, model.ToolCall{ID: "c2", Name: "search", Arguments: json.RawMessage(`{"query":""}`)})
	assert.True(t, r.IsError)
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Equal(t, []string{"c1"}, calls)

	// The tool itself still takes its shortcut (and answers the same).
	assert.Equal(t, "found go", Invoke(context.Background(), inner, call).Text())
	assert.Len(t, calls, 1)

	st := MustStreamFunc("search", "", func(_ context.Context, a searchArgs) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) { yield("found "+a.Query, nil) }
	})
	r = Invoke(context.Background(), censored{st}, call)
	assert.Equal(t, "FOUND GO", r.Text(), "the wrapper's Stream ran")
	assert.Equal(t, "found go", Invoke(context.Background(), st, call).Text())
}

// forwardingWrapper is a tool wrapper of the kind the Wrapper interface invites:
// it forwards Definition and Call and exposes the tool it wraps.
type forwardingWrapper struct{ inner Tool }

func (w forwardingWrapper) Definition() model.ToolDefinition { return w.inner.Definition() }
func (w forwardingWrapper) Call(ctx context.Context, id string, args json.RawMessage) (Result, error) {
	return w.inner.Call(ctx, id, args)
}
func (w forwardingWrapper) Unwrap() Tool { return w.inner }

// A PrepareArguments hook set with WithPrepareArguments sees the call before
// validation even when the tool is wrapped.
func TestWrappedToolKeepsItsPrepareArgumentsHook(t *testing.T) {
	ft := MustFunc("search", "", func(_ context.Context, in searchArgs) (string, error) { return "q=" + in.Query, nil },
		WithPrepareArguments(func(m map[string]any) map[string]any {
			if _, ok := m["query"]; !ok {
				m["query"] = "default"
			}
			return m
		}))
	call := model.ToolCall{ID: "1", Name: "search", Arguments: json.RawMessage(`{}`)}
	require.Equal(t, "q=default", Invoke(context.Background(), ft, call).Text(), "unwrapped, the hook fills the query")

	r := Invoke(context.Background(), forwardingWrapper{ft}, call)
	assert.False(t, r.IsError, r.Text())
	assert.Equal(t, "q=default", r.Text())
}

func TestNilOptionsDoNothing(t *testing.T) {
	echo := MustFunc("echo", "echoes", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	call := model.ToolCall{ID: "c1", Name: "echo", Arguments: []byte(`{"text":"hi"}`)}
	iv := NewInvoker(nil, WithPending(nil), nil)
	assert.Equal(t, "hi", iv.Invoke(context.Background(), echo, call, nil).Text())
	assert.Equal(t, "hi", Invoke(context.Background(), echo, call, nil, nil).Text())
	list, err := Resolve(context.Background(), []Toolset{NewStatic("s", echo)}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, list.Len())
}

func TestBytesThatAreNotBase64AreAnArgumentError(t *testing.T) {
	tl := MustFunc("store", "stores bytes", func(_ context.Context, in struct {
		Blob []byte `json:"blob"`
	}) (string, error) {
		return string(in.Blob), nil
	})
	r := Invoke(context.Background(), tl, model.ToolCall{ID: "c1", Name: "store", Arguments: []byte(`{"blob":"0"}`)})
	require.True(t, r.IsError)
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), "$.blob")
	assert.Contains(t, r.Text(), "base64")
	assert.Equal(t, "hi", Invoke(context.Background(), tl, model.ToolCall{ID: "c2", Name: "store", Arguments: []byte(`{"blob":"aGk="}`)}).Text())
}
