package agui

import (
	"encoding/json"

	"github.com/trellis-go/trellis/internal/jsonpatch"
)

// EventType is the type of an AG-UI event, its "type" member.
type EventType string

// The types of the events a handler sends, and that a Client reads.
const (
	// EventRunStarted opens a run.
	EventRunStarted EventType = "RUN_STARTED"
	// EventRunFinished ends a run that did not fail, with its outcome.
	EventRunFinished EventType = "RUN_FINISHED"
	// EventRunError ends a run that failed.
	EventRunError EventType = "RUN_ERROR"
	// EventStepStarted and EventStepFinished surround a node of the graph.
	EventStepStarted  EventType = "STEP_STARTED"
	EventStepFinished EventType = "STEP_FINISHED"
	// EventTextMessageStart, EventTextMessageContent and
	// EventTextMessageEnd stream a text message; EventTextMessageChunk is a
	// piece of one that opens and closes itself (a Client reads it; a
	// handler does not send it).
	EventTextMessageStart   EventType = "TEXT_MESSAGE_START"
	EventTextMessageContent EventType = "TEXT_MESSAGE_CONTENT"
	EventTextMessageEnd     EventType = "TEXT_MESSAGE_END"
	EventTextMessageChunk   EventType = "TEXT_MESSAGE_CHUNK"
	// EventReasoningStart and EventReasoningEnd surround a span of a
	// reply's reasoning; EventReasoningMessageStart,
	// EventReasoningMessageContent and EventReasoningMessageEnd stream a
	// reasoning message within it.
	EventReasoningStart          EventType = "REASONING_START"
	EventReasoningMessageStart   EventType = "REASONING_MESSAGE_START"
	EventReasoningMessageContent EventType = "REASONING_MESSAGE_CONTENT"
	EventReasoningMessageEnd     EventType = "REASONING_MESSAGE_END"
	EventReasoningEnd            EventType = "REASONING_END"
	// EventToolCallStart, EventToolCallArgs and EventToolCallEnd stream a
	// tool call; EventToolCallResult carries the result of one the agent
	// ran.
	EventToolCallStart  EventType = "TOOL_CALL_START"
	EventToolCallArgs   EventType = "TOOL_CALL_ARGS"
	EventToolCallEnd    EventType = "TOOL_CALL_END"
	EventToolCallResult EventType = "TOOL_CALL_RESULT"
	// EventStateSnapshot carries the state's view whole; EventStateDelta
	// carries a JSON Patch from the last one sent.
	EventStateSnapshot EventType = "STATE_SNAPSHOT"
	EventStateDelta    EventType = "STATE_DELTA"
	// EventMessagesSnapshot carries the conversation as the agent holds it.
	EventMessagesSnapshot EventType = "MESSAGES_SNAPSHOT"
	// EventCustom carries an application's event: a name and a value.
	EventCustom EventType = "CUSTOM"
	// EventRaw carries an event from outside the protocol; a handler sends
	// one in place of an event it could not encode.
	EventRaw EventType = "RAW"
	// EventSubagentStarted opens an invocation of a subagent (an agent a
	// handoff tool runs); EventSubagentFinished and EventSubagentError end
	// it.
	EventSubagentStarted  EventType = "SUBAGENT_STARTED"
	EventSubagentFinished EventType = "SUBAGENT_FINISHED"
	EventSubagentError    EventType = "SUBAGENT_ERROR"
)

// The outcomes of a run (Outcome.Type) and of a subagent's invocation.
const (
	OutcomeSuccess   = "success"
	OutcomeInterrupt = "interrupt"
	OutcomeCancelled = "cancelled"
	// OutcomeSuspended ends an invocation of a subagent that waits for an
	// answer when its run ends (SUBAGENT_FINISHED).
	OutcomeSuspended = "suspended"
)

// event is an event a handler sends: one struct per type, each with the
// members the protocol gives that type, after the header every event has.
type event interface {
	// kind is the event's type.
	kind() EventType
	// header is the event's header, which the sender fills in.
	header() *eventHeader
}

// eventHeader holds the members every event has: its type, the time it was
// sent (Unix milliseconds), and, on an event of a subagent's invocation,
// the invocation's ID.
type eventHeader struct {
	Type          EventType `json:"type"`
	Timestamp     int64     `json:"timestamp,omitempty"`
	SubagentRunID string    `json:"subagentRunId,omitempty"`
}

func (h *eventHeader) header() *eventHeader { return h }

// runStarted is RUN_STARTED.
type runStarted struct {
	eventHeader
	ThreadID        string `json:"threadId"`
	RunID           string `json:"runId"`
	ProtocolVersion string `json:"protocolVersion"`
	ParentRunID     string `json:"parentRunId,omitempty"`
}

// runFinished is RUN_FINISHED.
type runFinished struct {
	eventHeader
	ThreadID string       `json:"threadId"`
	RunID    string       `json:"runId"`
	Usage    []usageEntry `json:"usage,omitempty"`
	Outcome  Outcome      `json:"outcome"`
}

// runError is RUN_ERROR: the error's text and the kind of failure.
type runError struct {
	eventHeader
	Message string       `json:"message"`
	Code    string       `json:"code"`
	Usage   []usageEntry `json:"usage,omitempty"`
}

// usageEntry is the token usage of one provider and model in a run.
type usageEntry struct {
	Provider     string `json:"provider,omitempty"`
	Model        string `json:"model,omitempty"`
	InputTokens  int    `json:"inputTokens,omitempty"`
	OutputTokens int    `json:"outputTokens,omitempty"`
	TotalTokens  int    `json:"totalTokens,omitempty"`
}

// stepStarted is STEP_STARTED.
type stepStarted struct {
	eventHeader
	StepName string `json:"stepName"`
}

// stepFinished is STEP_FINISHED.
type stepFinished struct {
	eventHeader
	StepName string `json:"stepName"`
}

// textMessageStart is TEXT_MESSAGE_START.
type textMessageStart struct {
	eventHeader
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
	Name      string `json:"name,omitempty"`
}

// textMessageContent is TEXT_MESSAGE_CONTENT.
type textMessageContent struct {
	eventHeader
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

// textMessageEnd is TEXT_MESSAGE_END.
type textMessageEnd struct {
	eventHeader
	MessageID string `json:"messageId"`
}

// reasoningStart is REASONING_START.
type reasoningStart struct {
	eventHeader
	MessageID string `json:"messageId"`
}

// reasoningMessageStart is REASONING_MESSAGE_START; Role is "reasoning".
type reasoningMessageStart struct {
	eventHeader
	MessageID string `json:"messageId"`
	Role      string `json:"role"`
}

// reasoningMessageContent is REASONING_MESSAGE_CONTENT.
type reasoningMessageContent struct {
	eventHeader
	MessageID string `json:"messageId"`
	Delta     string `json:"delta"`
}

// reasoningMessageEnd is REASONING_MESSAGE_END.
type reasoningMessageEnd struct {
	eventHeader
	MessageID string `json:"messageId"`
}

// reasoningEnd is REASONING_END.
type reasoningEnd struct {
	eventHeader
	MessageID string `json:"messageId"`
}

// toolCallStart is TOOL_CALL_START.
type toolCallStart struct {
	eventHeader
	ToolCallID      string `json:"toolCallId"`
	ToolCallName    string `json:"toolCallName"`
	ParentMessageID string `json:"parentMessageId,omitempty"`
}

// toolCallArgs is TOOL_CALL_ARGS: a piece of the call's arguments.
type toolCallArgs struct {
	eventHeader
	ToolCallID string `json:"toolCallId"`
	Delta      string `json:"delta"`
}

// toolCallEnd is TOOL_CALL_END.
type toolCallEnd struct {
	eventHeader
	ToolCallID string `json:"toolCallId"`
}

// toolCallResult is TOOL_CALL_RESULT; Role is "tool", and Content a string
// or content parts (see contentOf).
type toolCallResult struct {
	eventHeader
	MessageID  string          `json:"messageId"`
	ToolCallID string          `json:"toolCallId"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Metadata   *resultMetadata `json:"metadata,omitempty"`
}

// resultMetadata is what a TOOL_CALL_RESULT carries besides the content
// (see Handler.resultMetadata).
type resultMetadata struct {
	Status     string          `json:"status"`
	ErrorCode  string          `json:"errorCode,omitempty"`
	Title      string          `json:"title,omitempty"`
	DurationMs int64           `json:"durationMs,omitempty"`
	Error      string          `json:"error,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
}

// stateSnapshot is STATE_SNAPSHOT.
type stateSnapshot struct {
	eventHeader
	Snapshot json.RawMessage `json:"snapshot"`
}

// stateDelta is STATE_DELTA: a JSON Patch from the last view sent.
type stateDelta struct {
	eventHeader
	Delta []jsonpatch.Op `json:"delta"`
}

// messagesSnapshot is MESSAGES_SNAPSHOT.
type messagesSnapshot struct {
	eventHeader
	Messages []Message `json:"messages"`
}

// custom is CUSTOM.
type custom struct {
	eventHeader
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// toolProgress is the value of a CUSTOM event named ToolProgressEvent.
type toolProgress struct {
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Message    string          `json:"message,omitempty"`
	Content    json.RawMessage `json:"content,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
}

// raw is RAW, which a handler sends in place of an event it could not
// encode, saying which.
type raw struct {
	eventHeader
	Event string `json:"event"`
}

// subagentStarted is SUBAGENT_STARTED: the invocation's ID (in the
// header), the agent's name and the call that started it.
type subagentStarted struct {
	eventHeader
	Name                string `json:"name"`
	ParentToolCallID    string `json:"parentToolCallId"`
	ParentSubagentRunID string `json:"parentSubagentRunId,omitempty"`
}

// subagentFinished is SUBAGENT_FINISHED; an invocation left waiting for an
// answer has an outcome.
type subagentFinished struct {
	eventHeader
	Outcome *subagentOutcome `json:"outcome,omitempty"`
}

// subagentOutcome is how an invocation that waits ended: suspended, with
// the interrupts it raised.
type subagentOutcome struct {
	Type         string   `json:"type"`
	InterruptIDs []string `json:"interruptIds,omitempty"`
}

// subagentError is SUBAGENT_ERROR.
type subagentError struct {
	eventHeader
	Message string `json:"message"`
}

func (*runStarted) kind() EventType              { return EventRunStarted }
func (*runFinished) kind() EventType             { return EventRunFinished }
func (*runError) kind() EventType                { return EventRunError }
func (*stepStarted) kind() EventType             { return EventStepStarted }
func (*stepFinished) kind() EventType            { return EventStepFinished }
func (*textMessageStart) kind() EventType        { return EventTextMessageStart }
func (*textMessageContent) kind() EventType      { return EventTextMessageContent }
func (*textMessageEnd) kind() EventType          { return EventTextMessageEnd }
func (*reasoningStart) kind() EventType          { return EventReasoningStart }
func (*reasoningMessageStart) kind() EventType   { return EventReasoningMessageStart }
func (*reasoningMessageContent) kind() EventType { return EventReasoningMessageContent }
func (*reasoningMessageEnd) kind() EventType     { return EventReasoningMessageEnd }
func (*reasoningEnd) kind() EventType            { return EventReasoningEnd }
func (*toolCallStart) kind() EventType           { return EventToolCallStart }
func (*toolCallArgs) kind() EventType            { return EventToolCallArgs }
func (*toolCallEnd) kind() EventType             { return EventToolCallEnd }
func (*toolCallResult) kind() EventType          { return EventToolCallResult }
func (*stateSnapshot) kind() EventType           { return EventStateSnapshot }
func (*stateDelta) kind() EventType              { return EventStateDelta }
func (*messagesSnapshot) kind() EventType        { return EventMessagesSnapshot }
func (*custom) kind() EventType                  { return EventCustom }
func (*raw) kind() EventType                     { return EventRaw }
func (*subagentStarted) kind() EventType         { return EventSubagentStarted }
func (*subagentFinished) kind() EventType        { return EventSubagentFinished }
func (*subagentError) kind() EventType           { return EventSubagentError }

// encodeEvent encodes ev as sent at the Unix millisecond ts. An event that
// does not encode (a custom value of a type JSON cannot hold) is replaced
// by a RAW event naming its type and the error.
func encodeEvent(ev event, ts int64) []byte {
	h := ev.header()
	h.Type, h.Timestamp = ev.kind(), ts
	b, err := json.Marshal(ev)
	if err != nil {
		b, _ = json.Marshal(&raw{eventHeader: eventHeader{Type: EventRaw},
			Event: "unencodable " + string(ev.kind()) + " event: " + err.Error()})
	}
	return b
}
