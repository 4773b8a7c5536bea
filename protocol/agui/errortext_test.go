package agui_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/protocol/agui"
	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// failingTools are a tool that panics (its result's Details hold the
// stack) and one that fails with an error naming a file and whose Details
// hold a diagnostic report.
func failingTools() []tool.Tool {
	boom := tool.MustFunc("boom", "Panics.", func(context.Context, struct{}) (string, error) {
		var m map[string]int
		m["x"] = 1 // a nil map: a runtime panic
		return "", nil
	})
	open := tool.MustFunc("open_file", "Fails.", func(context.Context, struct{}) (tool.Result, error) {
		return tool.Result{Details: map[string]string{"cwd": "/srv/internal/app", "cmd": "cat /srv/internal/app/secret.txt"}},
			fmt.Errorf("open /srv/internal/app/secret.txt: permission denied")
	})
	return []tool.Tool{boom, open}
}

func failedCalls(t *testing.T, opts ...agui.Option) []event {
	t.Helper()
	m := scripted.New(
		scripted.CallTools(scripted.CallWithID("c1", "boom", `{}`), scripted.CallWithID("c2", "open_file", `{}`)),
		scripted.Reply("Both failed."),
	)
	h := handler(t, m, []agent.Option{agent.WithTools(failingTools()...)}, opts...)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "go")))
	res := ofType(evs, "TOOL_CALL_RESULT")
	require.Len(t, res, 2)
	return res
}

// A failed call's TOOL_CALL_RESULT metadata carries its status and error
// code, and by default nothing else of the failure: not the stack trace
// of a tool's panic (which the result's Details hold), not the paths of
// a tool's error or of its diagnostics.
func TestFailedCallMetadataHidesStacksAndPaths(t *testing.T) {
	res := failedCalls(t)
	for _, r := range res {
		meta, ok := r["metadata"].(map[string]any)
		require.True(t, ok, "%v", r)
		assert.Equal(t, "failed", meta["status"])
		assert.NotEmpty(t, meta["errorCode"])
		assert.NotContains(t, meta, "details")
		assert.NotContains(t, meta, "error")
		b, _ := json.Marshal(meta)
		assert.NotContains(t, string(b), "goroutine")
		assert.NotContains(t, string(b), ".go:")
		assert.NotContains(t, string(b), "/srv/internal")
	}
	assert.Equal(t, tool.CodePanic, res[0]["metadata"].(map[string]any)["errorCode"])
}

// WithErrorText words a failed call's error in its metadata ("error"); a
// failed call's Details (a panic's stack) stay out whatever it says.
func TestErrorTextWordsFailedCalls(t *testing.T) {
	res := failedCalls(t, agui.WithErrorText(func(err error) string {
		if errors.Is(err, tool.ErrPanic) {
			return "the tool crashed"
		}
		return "the tool could not finish"
	}))
	assert.Equal(t, "the tool crashed", res[0]["metadata"].(map[string]any)["error"])
	assert.Equal(t, "the tool could not finish", res[1]["metadata"].(map[string]any)["error"])
	for _, r := range res {
		assert.NotContains(t, r["metadata"], "details")
	}

	all := failedCalls(t, agui.WithErrorText(func(err error) string { return err.Error() }))
	b, _ := json.Marshal(all[0]["metadata"])
	assert.NotContains(t, string(b), "goroutine", "a panic's stack is not in its error's text")
	assert.Contains(t, string(b), "panicked")
}

// The default wording of a run's failure is a sentence per kind of
// failure, matching RUN_ERROR's code.
func TestDefaultErrorTextNamesTheKindOnly(t *testing.T) {
	m := scripted.New(scripted.Fail(errors.New("graph \"x\": internal panic: boom\ngoroutine 7 [running]:\nmain.go:12")))
	h := handler(t, m, nil)
	evs := run(t, h, input("t1", "r1", userMsg("u1", "hi")))
	last := evs[len(evs)-1]
	assert.Equal(t, "agent_error", last.str("code"))
	assert.Equal(t, "The agent failed.", last.str("message"))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp := postCtx(t, ctx, handler(t, scripted.New(scripted.Reply("never")), nil), input("t1", "r1", userMsg("u1", "hi")))
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	evs = parseSSE(t, raw)
	last = evs[len(evs)-1]
	assert.Equal(t, "RUN_ERROR", last.typ())
	assert.Equal(t, "cancelled", last.str("code"))
	assert.Equal(t, "The run was cancelled.", last.str("message"))
}

// brokenStore is a checkpointer whose reads fail with an error that names
// a file.
type brokenStore struct{ state.Saver }

func (brokenStore) Get(context.Context, string, string, string) (state.Tuple, error) {
	return state.Tuple{}, errors.New("dial unix /var/run/postgresql/.s.PGSQL.5432: connect: no such file or directory")
}

// A run that cannot start because the checkpointer fails is refused with
// 500 and the kind of failure, not the store's error.
func TestFailedStartHidesTheStoresError(t *testing.T) {
	h := handler(t, scripted.New(scripted.Reply("never")), []agent.Option{agent.WithCheckpointer(brokenStore{memory.New()})})
	resp := post(t, h, input("t1", "r1", userMsg("u1", "hi")))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.NotContains(t, string(body), "/var/run")
	assert.Contains(t, string(body), "could not start")
}
