package agui

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/jsonpatch"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/events.golden from the events as encoded now")

// goldenTimestamp is the time every event of the golden file was sent at.
const goldenTimestamp = 1767225600000

// goldenEvents are one or more events of every type a handler sends, with
// and without their optional members.
func goldenEvents() []struct {
	name string
	ev   event
} {
	sub := func(ev event) event { ev.header().SubagentRunID = "call-7"; return ev }
	return []struct {
		name string
		ev   event
	}{
		{"run started", &runStarted{ThreadID: "t1", RunID: "r1", ProtocolVersion: ProtocolVersion}},
		{"run started by a run", &runStarted{ThreadID: "t1", RunID: "r2", ProtocolVersion: ProtocolVersion, ParentRunID: "r1"}},
		{"run finished", &runFinished{ThreadID: "t1", RunID: "r1", Outcome: Outcome{Type: OutcomeSuccess}}},
		{"run finished with usage", &runFinished{ThreadID: "t1", RunID: "r1", Outcome: Outcome{Type: OutcomeSuccess},
			Usage: []usageEntry{{Provider: "openai", Model: "gpt-x", InputTokens: 12, OutputTokens: 3, TotalTokens: 15}, {Model: "local"}}}},
		{"run finished with calls left to the client", &runFinished{ThreadID: "t1", RunID: "r1",
			Outcome: Outcome{Type: OutcomeSuccess, PendingToolCallIDs: []string{"c1", "c2"}}}},
		{"run finished interrupted", &runFinished{ThreadID: "t1", RunID: "r1", Outcome: Outcome{Type: OutcomeInterrupt,
			Interrupts: []Interrupt{{ID: "i1", Reason: "input_required", Message: "Which city?", ToolCallID: "q1",
				ResponseSchema: json.RawMessage(`{"type":"string"}`), Metadata: map[string]any{"node": "tools"}}}}}},
		{"run error", &runError{Message: "The run failed.", Code: "run_failed"}},
		{"run error with usage", &runError{Message: "The run failed.", Code: "run_failed", Usage: []usageEntry{{Provider: "anthropic", InputTokens: 7, TotalTokens: 7}}}},
		{"step started", &stepStarted{StepName: "agent"}},
		{"step finished", &stepFinished{StepName: "agent"}},
		{"text message start", &textMessageStart{MessageID: "m1", Role: "assistant"}},
		{"text message start named", &textMessageStart{MessageID: "m1", Role: "assistant", Name: "researcher"}},
		{"text message content", &textMessageContent{MessageID: "m1", Delta: "Hello"}},
		{"text message content empty", &textMessageContent{MessageID: "m1"}},
		{"text message end", &textMessageEnd{MessageID: "m1"}},
		{"reasoning start", &reasoningStart{MessageID: "m1:reasoning"}},
		{"reasoning message start", &reasoningMessageStart{MessageID: "m1:reasoning:0", Role: "reasoning"}},
		{"reasoning message content", &reasoningMessageContent{MessageID: "m1:reasoning:0", Delta: "Think."}},
		{"reasoning message end", &reasoningMessageEnd{MessageID: "m1:reasoning:0"}},
		{"reasoning end", &reasoningEnd{MessageID: "m1:reasoning"}},
		{"tool call start", &toolCallStart{ToolCallID: "c1", ToolCallName: "weather", ParentMessageID: "m1"}},
		{"tool call start without parent", &toolCallStart{ToolCallID: "c1", ToolCallName: "weather"}},
		{"tool call args", &toolCallArgs{ToolCallID: "c1", Delta: `{"city":"Oslo"}`}},
		{"tool call args empty", &toolCallArgs{ToolCallID: "c1"}},
		{"tool call end", &toolCallEnd{ToolCallID: "c1"}},
		{"tool call result", &toolCallResult{MessageID: "tool:c1", ToolCallID: "c1", Role: "tool", Content: jsonString("sunny")}},
		{"tool call result with metadata", &toolCallResult{MessageID: "tool:c1", ToolCallID: "c1", Role: "tool", Content: jsonString("sunny"),
			Metadata: &resultMetadata{Status: "success", Title: "Weather", DurationMs: 42, Details: json.RawMessage(`{"celsius":21}`)}}},
		{"tool call result failed", &toolCallResult{MessageID: "tool:c1", ToolCallID: "c1", Role: "tool", Content: jsonString("no such city"),
			Metadata: &resultMetadata{Status: "failed", ErrorCode: "invalid_arguments", Error: "The call failed."}}},
		{"tool call result with parts", &toolCallResult{MessageID: "tool:c1", ToolCallID: "c1", Role: "tool",
			Content: json.RawMessage(`[{"type":"text","text":"a chart"},{"type":"image","source":{"type":"url","value":"https://127.0.0.1/c.png"}}]`)}},
		{"state snapshot", &stateSnapshot{Snapshot: json.RawMessage(`{"cart":[]}`)}},
		{"state delta", &stateDelta{Delta: []jsonpatch.Op{{Op: "add", Path: "/cart/0", Value: "tea"}}}},
		{"messages snapshot", &messagesSnapshot{Messages: []Message{{ID: "u1", Role: "user", Content: jsonString("hi")}}}},
		{"messages snapshot empty", &messagesSnapshot{}},
		{"custom", &custom{Name: "progress", Value: json.RawMessage(`{"done":2}`)}},
		{"custom tool progress", &custom{Name: ToolProgressEvent, Value: toolProgress{ToolCallID: "c1", ToolName: "fetch"}}},
		{"custom tool progress whole", &custom{Name: ToolProgressEvent, Value: toolProgress{ToolCallID: "c1", ToolName: "fetch",
			Message: "fetching", Content: jsonString("half"), Details: json.RawMessage(`{"bytes":10}`)}}},
		{"custom that does not encode", &custom{Name: "broken", Value: make(chan int)}},
		{"subagent started", sub(&subagentStarted{Name: "worker", ParentToolCallID: "call-7"})},
		{"subagent started by a subagent", sub(&subagentStarted{Name: "helper", ParentToolCallID: "call-8", ParentSubagentRunID: "call-6"})},
		{"subagent finished", sub(&subagentFinished{})},
		{"subagent finished suspended", sub(&subagentFinished{Outcome: &subagentOutcome{Type: OutcomeSuspended, InterruptIDs: []string{"i1"}}})},
		{"subagent finished suspended below", sub(&subagentFinished{Outcome: &subagentOutcome{Type: OutcomeSuspended}})},
		{"subagent error", sub(&subagentError{Message: "The agent failed."})},
		{"subagent's text message content", sub(&textMessageContent{MessageID: "m2", Delta: "Hi"})},
	}
}

// TestEventsWireFormat pins the JSON of every event a handler sends: its
// members, their names, which are left out when empty, and their order.
// Run with -update to rewrite testdata/events.golden after a deliberate
// change of the wire format.
func TestEventsWireFormat(t *testing.T) {
	var got bytes.Buffer
	for _, c := range goldenEvents() {
		got.WriteString(c.name + ": ")
		got.Write(encodeEvent(c.ev, goldenTimestamp))
		got.WriteByte('\n')
	}
	path := filepath.Join("testdata", "events.golden")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, got.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), got.String())
}

// TestEveryEventTypeHasAGoldenEvent keeps the golden file complete: each
// type a handler sends is in it, under the type its constant names.
func TestEveryEventTypeHasAGoldenEvent(t *testing.T) {
	seen := map[EventType]bool{}
	for _, c := range goldenEvents() {
		var head struct {
			Type EventType `json:"type"`
		}
		require.NoError(t, json.Unmarshal(encodeEvent(c.ev, goldenTimestamp), &head))
		seen[head.Type] = true
	}
	for _, typ := range []EventType{
		EventRunStarted, EventRunFinished, EventRunError, EventStepStarted, EventStepFinished,
		EventTextMessageStart, EventTextMessageContent, EventTextMessageEnd,
		EventReasoningStart, EventReasoningMessageStart, EventReasoningMessageContent, EventReasoningMessageEnd, EventReasoningEnd,
		EventToolCallStart, EventToolCallArgs, EventToolCallEnd, EventToolCallResult,
		EventStateSnapshot, EventStateDelta, EventMessagesSnapshot, EventCustom, EventRaw,
		EventSubagentStarted, EventSubagentFinished, EventSubagentError,
	} {
		assert.True(t, seen[typ], "no golden event of type %s", typ)
	}
}

// TestClientReadsWhatTheHandlerSends decodes every golden event as a
// Client does: the members a Client keeps come back as they were sent.
func TestClientReadsWhatTheHandlerSends(t *testing.T) {
	for _, c := range goldenEvents() {
		b := encodeEvent(c.ev, goldenTimestamp)
		var ev Event
		require.NoError(t, json.Unmarshal(b, &ev), c.name)
		want := c.ev.kind()
		if _, broken := c.ev.(*custom); broken && c.name == "custom that does not encode" {
			want = EventRaw
		}
		assert.Equal(t, want, ev.Type, c.name)
		assert.Equal(t, c.ev.header().SubagentRunID, ev.SubagentRunID, c.name)
	}
}
