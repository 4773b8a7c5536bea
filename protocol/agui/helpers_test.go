package agui_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/protocol/agui"
)

// event is an AG-UI event as a client decodes it.
type event map[string]any

func (e event) typ() string { return e["type"].(string) }

func (e event) str(k string) string {
	s, _ := e[k].(string)
	return s
}

// post sends body to h and returns the response.
func post(t *testing.T, h http.Handler, body any) *http.Response {
	t.Helper()
	return postCtx(t, context.Background(), h, body)
}

func postCtx(t *testing.T, ctx context.Context, h http.Handler, body any) *http.Response {
	t.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		b, err = json.Marshal(v)
		require.NoError(t, err)
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/agent", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// run posts body and returns the events of the stream, checked against
// the protocol's rules (checkStream).
func run(t *testing.T, h http.Handler, body any) []event {
	t.Helper()
	resp := post(t, h, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s", raw)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	evs := parseSSE(t, raw)
	checkStream(t, evs)
	return evs
}

// parseSSE decodes an SSE body whose data lines are JSON events; comments
// are skipped, and every data line must be a whole JSON object.
func parseSSE(t *testing.T, raw []byte) []event {
	t.Helper()
	var out []event
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "data: "):
			var ev event
			require.NoError(t, json.Unmarshal([]byte(line[len("data: "):]), &ev), "data line %q", line)
			out = append(out, ev)
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// checkStream checks the ordering rules a producer must keep: the stream
// opens with RUN_STARTED (or RUN_ERROR) and ends with RUN_FINISHED or
// RUN_ERROR, and nothing follows; messages, tool calls, reasoning and
// steps are opened once, filled and closed only while open, and all closed
// before RUN_FINISHED; a tool result answers a call whose arguments are
// closed; every event has a timestamp.
func checkStream(t *testing.T, evs []event) {
	t.Helper()
	require.NotEmpty(t, evs)
	first := evs[0].typ()
	require.Contains(t, []string{"RUN_STARTED", "RUN_ERROR"}, first, "first event")
	last := evs[len(evs)-1].typ()
	require.Contains(t, []string{"RUN_FINISHED", "RUN_ERROR"}, last, "last event")
	open := map[string]bool{}   // "kind:id" open
	closed := map[string]bool{} // tool calls closed
	for i, ev := range evs {
		require.IsType(t, float64(0), ev["timestamp"], "event %d (%s) has an integer timestamp", i, ev.typ())
		where := fmt.Sprintf("event %d (%s)", i, ev.typ())
		if i > 0 && i < len(evs)-1 {
			require.NotContains(t, []string{"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"}, ev.typ(), where)
		}
		// Entities are tracked per owner: the run's agent, or a subagent
		// invocation, which must be active.
		owner := ev.str("subagentRunId")
		if owner != "" && !strings.HasPrefix(ev.typ(), "SUBAGENT_") {
			require.True(t, open["sub::"+owner], "%s is attributed to subagent %q, which is not active", where, owner)
		}
		opener := func(kind, id string) {
			require.NotEmpty(t, id, where)
			key := kind + ":" + owner + ":" + id
			require.False(t, open[key], "%s opens %s %q, which is open", where, kind, id)
			open[key] = true
		}
		inside := func(kind, id string) {
			require.True(t, open[kind+":"+owner+":"+id], "%s: %s %q is not open", where, kind, id)
		}
		closer := func(kind, id string) {
			inside(kind, id)
			delete(open, kind+":"+owner+":"+id)
		}
		switch ev.typ() {
		case "SUBAGENT_STARTED":
			require.NotEmpty(t, ev.str("name"), where)
			if p := ev.str("parentSubagentRunId"); p != "" {
				require.True(t, open["sub::"+p], "%s names parent %q, which is not active", where, p)
			}
			owner = ""
			opener("sub", ev.str("subagentRunId"))
		case "SUBAGENT_FINISHED", "SUBAGENT_ERROR":
			id := ev.str("subagentRunId")
			for k := range open {
				require.False(t, strings.Contains(k, ":"+id+":"), "%s closes subagent %q with %s still open", where, id, k)
			}
			owner = ""
			closer("sub", id)
		case "TEXT_MESSAGE_START":
			opener("text", ev.str("messageId"))
		case "TEXT_MESSAGE_CONTENT":
			inside("text", ev.str("messageId"))
			require.Contains(t, ev, "delta", where)
		case "TEXT_MESSAGE_END":
			closer("text", ev.str("messageId"))
		case "TOOL_CALL_START":
			opener("call", ev.str("toolCallId"))
			require.NotEmpty(t, ev.str("toolCallName"), where)
		case "TOOL_CALL_ARGS":
			inside("call", ev.str("toolCallId"))
			require.Contains(t, ev, "delta", where)
		case "TOOL_CALL_END":
			closer("call", ev.str("toolCallId"))
			closed[owner+":"+ev.str("toolCallId")] = true
		case "TOOL_CALL_RESULT":
			require.True(t, closed[owner+":"+ev.str("toolCallId")], "%s answers call %q before its arguments closed", where, ev.str("toolCallId"))
			require.NotEmpty(t, ev.str("messageId"), where)
			require.Contains(t, ev, "content", where)
		case "REASONING_START":
			opener("span", ev.str("messageId"))
		case "REASONING_END":
			closer("span", ev.str("messageId"))
		case "REASONING_MESSAGE_START":
			opener("reasoning", ev.str("messageId"))
			require.Equal(t, "reasoning", ev.str("role"), where)
		case "REASONING_MESSAGE_CONTENT":
			inside("reasoning", ev.str("messageId"))
		case "REASONING_MESSAGE_END":
			closer("reasoning", ev.str("messageId"))
		case "STEP_STARTED":
			opener("step", ev.str("stepName"))
		case "STEP_FINISHED":
			closer("step", ev.str("stepName"))
		case "RUN_FINISHED":
			require.Empty(t, open, "%s with items still open", where)
			require.NotEmpty(t, ev.str("threadId"), where)
			require.NotEmpty(t, ev.str("runId"), where)
		case "RUN_STARTED":
			require.Equal(t, agui.ProtocolVersion, ev.str("protocolVersion"), where)
		}
	}
}

// ofType returns the events of the given types, in order.
func ofType(evs []event, types ...string) []event {
	var out []event
	for _, ev := range evs {
		for _, typ := range types {
			if ev.typ() == typ {
				out = append(out, ev)
			}
		}
	}
	return out
}

// types returns the events' types.
func types(evs []event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.typ()
	}
	return out
}

// text concatenates the deltas of the text message id.
func text(evs []event, id string) string {
	var b strings.Builder
	for _, ev := range ofType(evs, "TEXT_MESSAGE_CONTENT") {
		if ev.str("messageId") == id {
			b.WriteString(ev.str("delta"))
		}
	}
	return b.String()
}

// args concatenates the argument deltas of the call id.
func args(evs []event, id string) string {
	var b strings.Builder
	for _, ev := range ofType(evs, "TOOL_CALL_ARGS") {
		if ev.str("toolCallId") == id {
			b.WriteString(ev.str("delta"))
		}
	}
	return b.String()
}

// snapshot returns the messages of the stream's MESSAGES_SNAPSHOT.
func snapshot(t *testing.T, evs []event) []agui.Message {
	t.Helper()
	snaps := ofType(evs, "MESSAGES_SNAPSHOT")
	require.Len(t, snaps, 1)
	b, err := json.Marshal(snaps[0]["messages"])
	require.NoError(t, err)
	var msgs []agui.Message
	require.NoError(t, json.Unmarshal(b, &msgs))
	return msgs
}

// finished returns the outcome of the stream's RUN_FINISHED.
func outcome(t *testing.T, evs []event) map[string]any {
	t.Helper()
	last := evs[len(evs)-1]
	require.Equal(t, "RUN_FINISHED", last.typ(), "the run failed: %v", last)
	o, ok := last["outcome"].(map[string]any)
	require.True(t, ok, "RUN_FINISHED has an outcome object: %v", last)
	return o
}

// input builds a RunAgentInput.
func input(thread, runID string, msgs ...map[string]any) map[string]any {
	if msgs == nil {
		msgs = []map[string]any{}
	}
	return map[string]any{"threadId": thread, "runId": runID, "messages": msgs}
}

func userMsg(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "content": text}
}

// asInput converts snapshot messages back to input messages, as a client
// that keeps the agent's conversation sends them.
func asInput(msgs []agui.Message) []map[string]any {
	out := make([]map[string]any, 0, len(msgs))
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		out = append(out, v)
	}
	return out
}
