package agui

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
)

// ProtocolVersion is the version of the AG-UI protocol the handler speaks,
// declared on every RUN_STARTED.
const ProtocolVersion = "1.1"

// RunInput is the body of a run request (AG-UI's RunAgentInput): the
// conversation so far, the application's own tools and context, and the
// answers to the interrupts a previous run ended with. A handler passes it
// to the run's context (see InputFrom).
type RunInput struct {
	// ThreadID names the conversation; required.
	ThreadID string `json:"threadId"`
	// RunID names the run the request asks for; required.
	RunID string `json:"runId"`
	// ParentRunID names the run that started this one, if any.
	ParentRunID string `json:"parentRunId,omitempty"`
	// ProtocolVersion is the version the client speaks; empty for clients
	// from before the protocol was versioned.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Messages is the whole conversation so far; required (may be empty).
	Messages []Message `json:"messages"`
	// Tools are the application's tools for this run: the client runs
	// them, and answers their calls with tool messages in its next request.
	Tools []Tool `json:"tools,omitempty"`
	// Context is information the application wants the model to see.
	Context []ContextEntry `json:"context,omitempty"`
	// State is the application's view of the agent's state (see WithState).
	State json.RawMessage `json:"state,omitempty"`
	// ForwardedProps is application data passed through untouched.
	ForwardedProps json.RawMessage `json:"forwardedProps,omitempty"`
	// Resume answers the interrupts the thread's last run ended with.
	Resume []ResumeEntry `json:"resume,omitempty"`
}

// Message is a message of the conversation, in AG-UI's form. Role is one
// of "developer", "system", "user", "assistant", "tool", "activity" and
// "reasoning"; the fields that apply depend on it.
type Message struct {
	// ID identifies the message within the thread.
	ID string `json:"id"`
	// Role says who wrote the message.
	Role string `json:"role"`
	// Name optionally names the author.
	Name string `json:"name,omitempty"`
	// Content is a string, or, on user and tool messages, an array of
	// content parts; an object for activity messages.
	Content json.RawMessage `json:"content,omitempty"`
	// ToolCalls are the calls of an assistant message.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID is, on a tool message, the call it answers.
	ToolCallID string `json:"toolCallId,omitempty"`
	// Error is, on a tool message, what went wrong with the call.
	Error string `json:"error,omitempty"`
	// EncryptedValue is what only the model can read, carried for it: on a
	// reasoning message a handler sends, the provider's signature of the
	// reasoning, or the reasoning itself when the provider redacted it,
	// as the kind (ReasoningSignature or RedactedReasoning), a colon, and
	// the bytes in base64. The kind is inside the value, a member the
	// protocol defines, so that clients that keep only those (the
	// protocol's JavaScript client) keep it.
	EncryptedValue string `json:"encryptedValue,omitempty"`
	// EncryptedValueType is read, not sent: handlers of earlier versions
	// sent the kind of EncryptedValue here, with the value in plain
	// base64, and messages kept from them still come back so.
	EncryptedValueType string `json:"encryptedValueType,omitempty"`
}

// The kinds of the encrypted values of the reasoning messages a handler
// sends (Message.EncryptedValue): a reasoning part's signature, or a
// redacted reasoning part's data.
const (
	ReasoningSignature = "trellis.reasoning.signature"
	RedactedReasoning  = "trellis.reasoning.redacted"
)

// ToolCall is a call of an assistant message.
type ToolCall struct {
	// ID identifies the call.
	ID string `json:"id"`
	// Type is always "function".
	Type string `json:"type"`
	// Function names the tool and holds the arguments.
	Function FunctionCall `json:"function"`
}

// FunctionCall is the tool and the arguments of a ToolCall.
type FunctionCall struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Arguments is the arguments' JSON text.
	Arguments string `json:"arguments"`
}

// ContentPart is a part of a user or tool message's content: "text" with
// Text, or "image", "audio", "video" or "document" with Source.
type ContentPart struct {
	// Type is the part's kind.
	Type string `json:"type"`
	// Text is the text of a text part.
	Text string `json:"text,omitempty"`
	// Source locates the bytes of a media part.
	Source *PartSource `json:"source,omitempty"`
}

// MarshalJSON encodes the part with the members of its kind: a text part
// always carries its text (the protocol requires it, even empty).
func (p ContentPart) MarshalJSON() ([]byte, error) {
	if p.Type == "text" {
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{p.Type, p.Text})
	}
	type plain ContentPart
	return json.Marshal(plain(p))
}

// PartSource says where a media part's bytes are: inline ("data", Value
// in base64), at a URL ("url"), or at a model provider under a handle it
// issued ("file").
type PartSource struct {
	// Type is "data", "url" or "file".
	Type string `json:"type"`
	// Value is the base64 data, the URL or the handle.
	Value string `json:"value"`
	// MIMEType is the media type (required for data).
	MIMEType string `json:"mimeType,omitempty"`
}

// Tool is a tool of the application, which the client runs.
type Tool struct {
	// Name is the tool's name.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments; absent means none.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// ContextEntry is a piece of information the application wants the model
// to see.
type ContextEntry struct {
	// Description says what Value is.
	Description string `json:"description"`
	// Value is the information.
	Value string `json:"value"`
}

// ResumeEntry answers one interrupt of the run a request continues.
type ResumeEntry struct {
	// InterruptID is the ID of the interrupt answered.
	InterruptID string `json:"interruptId"`
	// Status is "resolved" (Payload answers) or "cancelled" (abandoned).
	Status string `json:"status"`
	// Payload is the answer.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Interrupt is what a run that ended waiting for outside input waits for,
// as RUN_FINISHED reports it.
type Interrupt struct {
	// ID identifies the interrupt; a ResumeEntry answers it by this ID.
	ID string `json:"id"`
	// Reason says why the run needs input: "input_required" for a
	// question (nodes.AskUser), "tool_calls" for calls of a nested agent
	// left to the caller, "interrupt" for other interrupts.
	Reason string `json:"reason"`
	// Message is a prompt for whoever answers.
	Message string `json:"message,omitempty"`
	// ToolCallID names the tool call the interrupt concerns, if any.
	ToolCallID string `json:"toolCallId,omitempty"`
	// ResponseSchema describes the answer expected, as JSON Schema.
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	// Metadata carries the interrupt's payload as the graph raised it
	// ("payload"), and the node that raised it ("node").
	Metadata map[string]any `json:"metadata,omitempty"`
	// SubagentRunID names the invocation of a subagent that raised the
	// interrupt (the handler sets it); empty for the run's own agent.
	SubagentRunID string `json:"subagentRunId,omitempty"`
}

// The statuses of a ResumeEntry.
const (
	ResumeResolved  = "resolved"
	ResumeCancelled = "cancelled"
)

// InputError is the error of a request the handler refuses before the run
// starts: the input is malformed (HTTP 400), or does not fit the thread's
// state (409). Its message names what was wrong.
type InputError struct {
	// Status is the HTTP status the request was answered with.
	Status int
	// Msg says what was wrong.
	Msg string
}

// Error returns the message.
func (e *InputError) Error() string { return "agui: " + e.Msg }

// maxQuoted is the most bytes of one string the client sent, such as a
// message, call or interrupt ID, that an InputError's message quotes.
const maxQuoted = 64

// badInput is a 400 InputError whose message is format with args; see
// inputError for how args are quoted.
func badInput(format string, args ...any) *InputError {
	return inputError(400, format, args)
}

// conflict is a 409 InputError whose message is format with args; see
// inputError for how args are quoted.
func conflict(format string, args ...any) *InputError {
	return inputError(409, format, args)
}

// inputError is an InputError with status whose message is format with
// args. A string argument is cut to its first maxQuoted bytes (marked
// with "…"): the IDs and names a client sends are echoed by a bounded
// prefix, never in full. A list goes as a listed.
func inputError(status int, format string, args []any) *InputError {
	textcut.ClipArgs(args, maxQuoted, "…")
	return &InputError{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// clip cuts s as inputError cuts a string argument.
func clip(s string) string { return textcut.Clip(s, maxQuoted, "…") }

// listed is the things an InputError's message lists, such as the answers
// a thread waits for, each already phrased with its IDs cut by clip. It
// names at most maxListed of them.
type listed []string

// maxListed is the most elements of a listed a message names.
const maxListed = 8

// String returns the elements separated by commas, and how many more there
// are beyond maxListed.
func (l listed) String() string {
	if len(l) > maxListed {
		return strings.Join(l[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(l)-maxListed)
	}
	return strings.Join(l, ", ")
}

// DecodeInput parses and checks a run request's body: the required
// members are present, each known member has the type the protocol gives
// it, and messages, tools and resume entries are well formed. Members it
// does not know are ignored, as the protocol asks. The error is an
// *InputError naming what was wrong.
func DecodeInput(body []byte) (*RunInput, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, badInput("the body is not a JSON object: %v", jsonProblem(err))
	}
	for _, name := range []string{"threadId", "runId", "messages"} {
		if v, ok := raw[name]; !ok || isNull(v) {
			return nil, badInput("the input has no %q", name)
		}
	}
	var in RunInput
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, badInput("the input is malformed: %v", jsonProblem(err))
	}
	if isNull(in.State) {
		in.State = nil
	}
	if isNull(in.ForwardedProps) {
		in.ForwardedProps = nil
	}
	if in.ThreadID == "" || in.RunID == "" {
		return nil, badInput("threadId and runId must not be empty")
	}
	if v := in.ProtocolVersion; v != "" {
		major, _, _ := strings.Cut(v, ".")
		if major != "1" && major != "0" {
			return nil, badInput("protocol version %q is not supported (this agent speaks %s)", v, ProtocolVersion)
		}
	}
	seen := make(map[string]bool, len(in.Messages))
	for i, m := range in.Messages {
		if m.ID == "" {
			return nil, badInput("message %d has no id", i)
		}
		if seen[m.ID] {
			return nil, badInput("message id %q is used twice", m.ID)
		}
		seen[m.ID] = true
		if err := checkMessage(m); err != nil {
			return nil, badInput("message %q: %s", m.ID, err)
		}
	}
	names := make(map[string]bool, len(in.Tools))
	for i, t := range in.Tools {
		if strings.TrimSpace(t.Name) == "" {
			return nil, badInput("tool %d has no name", i)
		}
		if names[t.Name] {
			return nil, badInput("tool %q is declared twice", t.Name)
		}
		names[t.Name] = true
	}
	for i, r := range in.Resume {
		if r.InterruptID == "" {
			return nil, badInput("resume entry %d names no interrupt", i)
		}
		if r.Status != ResumeResolved && r.Status != ResumeCancelled {
			return nil, badInput("resume entry for %q: status %q is neither %q nor %q", r.InterruptID, r.Status, ResumeResolved, ResumeCancelled)
		}
	}
	return &in, nil
}

// checkMessage checks the members of m its role requires.
func checkMessage(m Message) error {
	switch m.Role {
	case "developer", "system":
		if _, err := textContent(m.Content, true); err != nil {
			return err
		}
	case "user", "tool":
		if len(m.Content) == 0 || isNull(m.Content) {
			return errors.New("content is required")
		}
		if _, err := decodeParts(m.Content); err != nil {
			return err
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return errors.New("a tool message needs a toolCallId")
		}
	case "assistant":
		if _, err := textContent(m.Content, false); err != nil {
			return err
		}
		for _, c := range m.ToolCalls {
			if c.ID == "" || c.Function.Name == "" {
				return errors.New("a tool call needs an id and a function name")
			}
		}
	}
	// Activity and reasoning messages, and roles of later versions, are
	// not conversation the agent resumes from: they are left out.
	return nil
}

// textContent decodes a content member that must be a string (required)
// or may be absent.
func textContent(raw json.RawMessage, required bool) (string, error) {
	if len(raw) == 0 || isNull(raw) {
		if required {
			return "", errors.New("content is required")
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New("content must be a string")
	}
	return s, nil
}

// decodeParts decodes a content member that is a string or an array of
// content parts; a string becomes one text part. Parts of kinds, and
// sources, of later protocol versions are left out.
func decodeParts(raw json.RawMessage) ([]ContentPart, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []ContentPart{{Type: "text", Text: s}}, nil
	}
	var parts []ContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, errors.New("content must be a string or an array of content parts")
	}
	kept := parts[:0]
	for i, p := range parts {
		switch p.Type {
		case "text":
		case "image", "audio", "video", "document":
			if p.Source == nil {
				return nil, fmt.Errorf("content part %d (%s) has no source", i, p.Type)
			}
			switch p.Source.Type {
			case "data":
				if p.Source.MIMEType == "" {
					return nil, fmt.Errorf("content part %d: inline data needs a mimeType", i)
				}
			case "url", "file":
			default:
				continue
			}
		default:
			continue
		}
		kept = append(kept, p)
	}
	return kept, nil
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

// jsonProblem shortens a JSON error for a client: the field and the type
// expected, without Go's type names where it can.
func jsonProblem(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field != "" {
			return fmt.Sprintf("%s: a JSON %s where the protocol wants %s", te.Field, te.Value, jsonKind(te.Type.Kind().String()))
		}
		return fmt.Sprintf("a JSON %s where the protocol wants %s", te.Value, jsonKind(te.Type.Kind().String()))
	}
	return err.Error()
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "a boolean"
	}
	return "a " + goKind
}
