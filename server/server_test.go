package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type obj = map[string]any

func TestThreadsAreCreatedFoundUpdatedCopiedAndDeleted(t *testing.T) {
	e := newEnv(t)
	var th obj
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t1", "metadata": obj{"user": "ann"}}, &th))
	assert.Equal(t, "t1", th["thread_id"])
	assert.Equal(t, "idle", th["status"])

	var detail obj
	assert.Equal(t, http.StatusConflict, e.call(t, "POST", "/threads", obj{"thread_id": "t1"}, &detail))
	assert.Contains(t, detail["detail"], `"t1"`)
	assert.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t1", "if_exists": "do_nothing"}, &th))

	var found []obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/search", obj{"metadata": obj{"user": "ann"}}, &found))
	require.Len(t, found, 1)
	require.Equal(t, 200, e.call(t, "POST", "/threads/search", obj{"metadata": obj{"user": "bob"}}, &found))
	assert.Empty(t, found)

	require.Equal(t, 200, e.call(t, "PATCH", "/threads/t1", obj{"metadata": obj{"topic": "x"}}, &th))
	assert.Equal(t, obj{"user": "ann", "topic": "x"}, th["metadata"])

	// A run gives the thread a state, which a copy carries.
	var values obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t1/runs/wait", obj{"assistant_id": "echo", "input": obj{"notes": []string{"hi"}}}, &values))
	assert.Equal(t, []any{"hi", "a:hi", "b:a:hi"}, values["notes"])
	var cp obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t1/copy", nil, &cp))
	assert.NotEqual(t, "t1", cp["thread_id"])
	assert.Equal(t, values["notes"], cp["values"].(obj)["notes"])

	var n int
	require.Equal(t, 200, e.call(t, "POST", "/threads/count", obj{}, &n))
	assert.Equal(t, 2, n)
	assert.Equal(t, http.StatusNoContent, e.call(t, "DELETE", "/threads/t1", nil, nil))
	assert.Equal(t, http.StatusNotFound, e.call(t, "GET", "/threads/t1", nil, &detail))
	assert.Equal(t, http.StatusOK, e.call(t, "GET", "/threads/"+cp["thread_id"].(string), nil, nil), "the copy outlives the original")
}

func TestStateIsReadAtCheckpointsUpdatedAsANodeAndListedInHistory(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "echo", "input": obj{"notes": []string{"hi"}}}, nil))

	var st obj
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/state", nil, &st))
	assert.Equal(t, []any{"hi", "a:hi", "b:a:hi"}, st["values"].(obj)["notes"])
	assert.Equal(t, []any{}, st["next"])

	var hist []obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/history", obj{"limit": 10}, &hist))
	require.Len(t, hist, 3) // input, after a, after b
	first := hist[2]["checkpoint"].(obj)["checkpoint_id"].(string)
	assert.Equal(t, "input", hist[2]["metadata"].(obj)["source"])
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/history", obj{"metadata": obj{"source": "loop"}}, &hist))
	assert.Len(t, hist, 2)
	afterA := hist[1]["checkpoint"].(obj)["checkpoint_id"].(string)
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/history", obj{"before": obj{"checkpoint_id": afterA}}, &hist))
	assert.Len(t, hist, 1)

	require.Equal(t, 200, e.call(t, "GET", "/threads/t/state/"+first, nil, &st))
	assert.Equal(t, []any{"hi"}, st["values"].(obj)["notes"])
	assert.Equal(t, []any{"a"}, st["next"])

	// An update as node a: the reducer appends, and b is due next.
	var upd obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/state", obj{"values": obj{"notes": []string{"edited"}}, "as_node": "a"}, &upd))
	require.NotEmpty(t, upd["checkpoint"].(obj)["checkpoint_id"])
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/state", nil, &st))
	assert.Equal(t, []any{"hi", "a:hi", "b:a:hi", "edited"}, st["values"].(obj)["notes"])
	assert.Equal(t, []any{"b"}, st["next"])

	// A run from the checkpoint after a, without input, continues there:
	// only b runs, on a fork of that checkpoint.
	var values obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "echo", "checkpoint_id": afterA}, &values))
	assert.Equal(t, []any{"hi", "a:hi", "b:a:hi"}, values["notes"])

	var detail obj
	assert.Equal(t, http.StatusUnprocessableEntity, e.call(t, "POST", "/threads/t/state", obj{"values": obj{"nope": 1}, "as_node": "a"}, &detail))
	assert.Contains(t, detail["detail"], `"nope"`)
	assert.Equal(t, http.StatusUnprocessableEntity, e.call(t, "POST", "/threads/t/state", obj{"values": obj{}, "as_node": "zz"}, &detail))
	assert.Contains(t, detail["detail"], `"zz"`)
}

func TestStreamSendsValuesUpdatesAndCustomEventsAndResumesAfterLastEventID(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	evs := e.stream(t, "POST", "/threads/t/runs/stream", obj{"assistant_id": "echo", "input": obj{"notes": []string{"hi"}},
		"stream_mode": []string{"values", "updates", "custom"}})
	assert.Equal(t, []string{"metadata", "values", "updates", "values", "custom", "updates", "values"}, names(evs))
	var upd obj
	require.NoError(t, json.Unmarshal(evs[2].Data, &upd))
	assert.Equal(t, obj{"a": obj{"notes": []any{"a:hi"}}}, upd, "an update shows what the node added")
	var meta obj
	require.NoError(t, json.Unmarshal(evs[0].Data, &meta))
	runID := meta["run_id"].(string)

	var updB obj
	require.NoError(t, json.Unmarshal(evs[5].Data, &updB))
	assert.Equal(t, obj{"b": obj{"notes": []any{"b:a:hi"}}}, updB)

	// Joining after an event's ID sends the rest only.
	rest := e.stream(t, "GET", "/threads/t/runs/"+runID+"/stream", nil, "Last-Event-ID", evs[3].ID)
	assert.Equal(t, names(evs[4:]), names(rest))
	assert.Equal(t, string(evs[6].Data), string(rest[len(rest)-1].Data))
}

func TestInterruptIsSurfacedAndResumedByValueAndByID(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	evs := e.stream(t, "POST", "/threads/t/runs/stream", obj{"assistant_id": "ask", "input": obj{"notes": []string{"q"}}, "stream_mode": "values"})
	last := evs[len(evs)-1]
	require.Equal(t, "values", last.Event)
	var chunk struct {
		Interrupt []struct {
			ID    string `json:"id"`
			Value obj    `json:"value"`
		} `json:"__interrupt__"`
	}
	require.NoError(t, json.Unmarshal(last.Data, &chunk))
	require.Len(t, chunk.Interrupt, 1)
	assert.Equal(t, obj{"question": "a note?"}, chunk.Interrupt[0].Value)

	var th obj
	require.Equal(t, 200, e.call(t, "GET", "/threads/t", nil, &th))
	assert.Equal(t, "interrupted", th["status"])
	var st obj
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/state", nil, &st))
	assert.Equal(t, []any{"ask"}, st["next"])
	assert.Equal(t, chunk.Interrupt[0].ID, st["tasks"].([]any)[0].(obj)["interrupts"].([]any)[0].(obj)["id"])

	var values obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "ask", "command": obj{"resume": "first"}}, &values))
	assert.Equal(t, []any{"q", "note:first"}, values["notes"])

	// Again, answered by the interrupt's ID.
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "ask", "input": obj{"notes": []string{"q2"}}}, &values))
	ints := values["__interrupt__"].([]any)
	id := ints[0].(obj)["id"].(string)
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "ask", "command": obj{"resume": obj{id: "second"}}}, &values))
	assert.Equal(t, []any{"q", "note:first", "q2", "note:second"}, values["notes"])

	var detail obj
	assert.Equal(t, http.StatusConflict, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "ask", "command": obj{"resume": "x"}}, &detail))
	assert.Contains(t, detail["detail"], "nothing to resume")
}

func TestBusyThreadFollowsTheMultitaskStrategy(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	var first obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs", obj{"assistant_id": "hold", "input": obj{"notes": []string{"1"}}}, &first))
	<-e.gate.entered

	var detail obj
	assert.Equal(t, http.StatusUnprocessableEntity, e.call(t, "POST", "/threads/t/runs", obj{"assistant_id": "echo"}, &detail))
	assert.Contains(t, detail["detail"], "already running")
	var queued obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs", obj{"assistant_id": "echo", "input": obj{"notes": []string{"2"}}, "multitask_strategy": "enqueue"}, &queued))
	assert.Equal(t, "pending", queued["status"])

	e.gate.release()
	var values obj
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/runs/"+queued["run_id"].(string)+"/join", nil, &values))
	assert.Equal(t, []any{"1", "a:1", "hold:a:1", "b:hold:a:1", "2", "a:2", "b:a:2"}, values["notes"])

	var list []obj
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/runs", nil, &list))
	require.Len(t, list, 2)
	assert.Equal(t, "success", list[0]["status"])
	assert.Equal(t, "enqueue", list[0]["multitask_strategy"])
}

func TestRollbackStrategyUndoesTheActiveRun(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "echo", "input": obj{"notes": []string{"0"}}}, nil))
	var first obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs", obj{"assistant_id": "hold", "input": obj{"notes": []string{"1"}}}, &first))
	<-e.gate.entered
	var values obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "echo", "input": obj{"notes": []string{"2"}}, "multitask_strategy": "rollback"}, &values))
	assert.Equal(t, []any{"0", "a:0", "b:a:0", "2", "a:2", "b:a:2"}, values["notes"])
	var run obj
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/runs/"+first["run_id"].(string), nil, &run))
	assert.Equal(t, "interrupted", run["status"], "a cancelled run is interrupted, as the API names it")
}

func TestCancelStopsARunAndDeleteRemovesIt(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	var run obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs", obj{"assistant_id": "hold"}, &run))
	id := run["run_id"].(string)
	<-e.gate.entered
	var detail obj
	assert.Equal(t, http.StatusConflict, e.call(t, "DELETE", "/threads/t/runs/"+id, nil, &detail), "an active run is not deleted")
	assert.Equal(t, http.StatusUnprocessableEntity, e.call(t, "POST", "/threads/t/runs/"+id+"/cancel?action=later", nil, &detail))
	assert.Contains(t, detail["detail"], `"later"`)
	assert.Equal(t, http.StatusNoContent, e.call(t, "POST", "/threads/t/runs/"+id+"/cancel?wait=1", nil, nil))
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/runs/"+id, nil, &run))
	assert.Equal(t, "interrupted", run["status"])
	assert.Equal(t, http.StatusNoContent, e.call(t, "DELETE", "/threads/t/runs/"+id, nil, nil))
	assert.Equal(t, http.StatusNotFound, e.call(t, "GET", "/threads/t/runs/"+id, nil, nil))
}

func TestStatelessRunsLeaveNoThreadUnlessKept(t *testing.T) {
	e := newEnv(t)
	var values obj
	require.Equal(t, 200, e.call(t, "POST", "/runs/wait", obj{"assistant_id": "echo", "input": obj{"notes": []string{"x"}}}, &values))
	assert.Equal(t, []any{"x", "a:x", "b:a:x"}, values["notes"])
	evs := e.stream(t, "POST", "/runs/stream", obj{"assistant_id": "echo", "input": obj{"notes": []string{"y"}}, "on_completion": "keep"})
	assert.Equal(t, "metadata", evs[0].Event)
	var meta obj
	require.NoError(t, json.Unmarshal(evs[0].Data, &meta))
	eventually(t, "the first run's thread deleted", func() bool {
		var n int
		e.call(t, "POST", "/threads/count", obj{}, &n)
		return n == 1
	})
	assert.Equal(t, 200, e.call(t, "GET", "/threads/"+meta["thread_id"].(string), nil, nil), "on_completion keep keeps the thread")

	evs = e.stream(t, "POST", "/runs/stream", obj{"assistant_id": "echo", "input": obj{"notes": []string{"z"}}})
	require.NoError(t, json.Unmarshal(evs[0].Data, &meta))
	eventually(t, "the streamed run's thread deleted", func() bool {
		return e.call(t, "GET", "/threads/"+meta["thread_id"].(string), nil, nil) == http.StatusNotFound
	})
}

func TestMessagesAreServedAsLangChainMessagesAndStreamedTokenByToken(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	evs := e.stream(t, "POST", "/threads/t/runs/stream", obj{"assistant_id": "chat",
		"input":       obj{"messages": []obj{{"type": "human", "content": "hello there"}}},
		"stream_mode": []string{"messages-tuple", "messages", "values"}})
	var text strings.Builder
	var partial, complete bool
	for _, ev := range evs {
		switch ev.Event {
		case "messages":
			var tuple []obj
			require.NoError(t, json.Unmarshal(ev.Data, &tuple))
			require.Len(t, tuple, 2)
			assert.Equal(t, "AIMessageChunk", tuple[0]["type"])
			assert.NotEmpty(t, tuple[0]["id"])
			assert.Equal(t, "agent", tuple[1]["langgraph_node"])
			text.WriteString(tuple[0]["content"].(string))
		case "messages/partial":
			partial = true
		case "messages/complete":
			var msgs []obj
			require.NoError(t, json.Unmarshal(ev.Data, &msgs))
			for _, m := range msgs {
				if m["type"] == "ai" {
					complete = true
					assert.Equal(t, "echo: hello there", m["content"])
				}
			}
		}
	}
	assert.Equal(t, "echo: hello there", text.String())
	assert.True(t, partial, "messages mode sends the reply so far")
	assert.True(t, complete, "messages mode sends the complete reply")

	var st obj
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/state", nil, &st))
	msgs := st["values"].(obj)["messages"].([]any)
	require.Len(t, msgs, 2)
	assert.Equal(t, "human", msgs[0].(obj)["type"])
	assert.Equal(t, "hello there", msgs[0].(obj)["content"])
	assert.Equal(t, "ai", msgs[1].(obj)["type"])
}

func TestRunUsageReportsTheTokensOfItsModelCalls(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil))
	var run obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs", obj{"assistant_id": "chat",
		"input": obj{"messages": []obj{{"type": "human", "content": "hello"}}}}, &run))
	id := run["run_id"].(string)
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/runs/"+id+"/join", nil, nil))
	var u struct {
		Calls int `json:"calls"`
		Total struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"total"`
		ByModel map[string]any `json:"by_model"`
		ByAgent map[string]any `json:"by_agent"`
	}
	require.Equal(t, 200, e.call(t, "GET", "/threads/t/runs/"+id+"/usage", nil, &u))
	assert.Equal(t, 1, u.Calls)
	assert.Equal(t, 7, u.Total.InputTokens)
	assert.Equal(t, 3, u.Total.OutputTokens)
	assert.Contains(t, u.ByModel, "echo-1")
	assert.Contains(t, u.ByAgent, "chat")
	var detail obj
	assert.Equal(t, http.StatusNotFound, e.call(t, "GET", "/threads/other/runs/"+id+"/usage", nil, &detail))
}

func TestOwnersSeeOnlyTheirOwnThreadsAndRuns(t *testing.T) {
	e := newEnv(t, bearerAuth(map[string]string{"tok-ann": "ann", "tok-bob": "bob"}))
	ann := []string{"Authorization", "Bearer tok-ann"}
	bob := []string{"Authorization", "Bearer tok-bob"}
	var detail obj
	assert.Equal(t, http.StatusUnauthorized, e.call(t, "GET", "/threads/x", nil, &detail))
	assert.Equal(t, http.StatusUnauthorized, e.call(t, "GET", "/threads/x", nil, &detail, "Authorization", "Bearer nope"))
	require.Equal(t, 200, e.call(t, "POST", "/threads", obj{"thread_id": "t"}, nil, ann...))
	var run obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/t/runs/wait", obj{"assistant_id": "echo"}, nil, ann...))
	assert.Equal(t, http.StatusNotFound, e.call(t, "GET", "/threads/t", nil, nil, bob...))
	assert.Equal(t, http.StatusNotFound, e.call(t, "GET", "/threads/t/state", nil, nil, bob...))
	assert.Equal(t, http.StatusNotFound, e.call(t, "POST", "/threads/t/runs", obj{"assistant_id": "echo"}, &run, bob...))
	var found []obj
	require.Equal(t, 200, e.call(t, "POST", "/threads/search", obj{}, &found, bob...))
	assert.Empty(t, found)
	require.Equal(t, 200, e.call(t, "POST", "/threads/search", obj{}, &found, ann...))
	assert.Len(t, found, 1)
}

func TestBadRequestsGetClearErrors(t *testing.T) {
	e := newEnv(t, withMaxBody(1024))
	var detail obj
	cases := []struct {
		method, path string
		body         any
		status       int
		says         string
	}{
		{"POST", "/runs/wait", obj{"assistant_id": "nope"}, 404, `"nope"`},
		{"POST", "/runs/wait", obj{}, 422, "assistant_id"},
		{"POST", "/runs/wait", obj{"assistant_id": "echo", "stream_mode": "tokens"}, 422, `"tokens"`},
		{"POST", "/runs/wait", obj{"assistant_id": "echo", "input": obj{"unknown": 1}}, 422, `"unknown"`},
		{"POST", "/runs/wait", obj{"assistant_id": "echo", "input": []int{1}}, 422, "JSON object"},
		{"POST", "/threads/none/runs", obj{"assistant_id": "echo"}, 404, `"none"`},
		{"POST", "/runs/wait", obj{"assistant_id": "echo", "interrupt_before": []string{"a"}}, 422, "compiled"},
		{"POST", "/runs/wait", obj{"assistant_id": "echo", "multitask_strategy": "later"}, 422, `"later"`},
		{"POST", "/threads", obj{"metadata": strings.Repeat("x", 2000)}, 413, "1024 bytes"},
		{"POST", "/threads/search", obj{"limit": 5000}, 422, "5000"},
		{"GET", "/nowhere", nil, 404, "/nowhere"},
		{"PUT", "/store/items", obj{}, 501, "WithStore"},
	}
	for _, c := range cases {
		detail = nil
		status := e.call(t, c.method, c.path, c.body, &detail)
		assert.Equal(t, c.status, status, "%s %s", c.method, c.path)
		if c.says != "" {
			assert.Contains(t, detail["detail"], c.says, "%s %s", c.method, c.path)
		}
	}
}

// A run that fails tells the client what failed (the node and its error),
// never the stack of a panic.
func TestFailedRunTellsTheErrorWithoutInternals(t *testing.T) {
	e := newEnv(t)
	var out struct {
		Error struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		} `json:"__error__"`
	}
	require.Equal(t, 200, e.call(t, "POST", "/runs/wait", obj{"assistant_id": "boom"}, &out))
	assert.Contains(t, out.Error.Message, "kaboom")
	assert.Contains(t, out.Error.Message, "boom")
	evs := e.stream(t, "POST", "/runs/stream", obj{"assistant_id": "boom", "stream_mode": []string{"values", "debug", "events"}})
	last := evs[len(evs)-1]
	require.Equal(t, "error", last.Event)
	assert.Contains(t, string(last.Data), "kaboom")
	for _, ev := range evs {
		for _, leak := range []string{"goroutine ", ".go:", "runtime/"} {
			assert.NotContains(t, string(ev.Data), leak, "event %s", ev.Event)
		}
	}
	assert.NotContains(t, out.Error.Message, ".go:")
}
