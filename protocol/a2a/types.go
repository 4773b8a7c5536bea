package a2a

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-go/trellis/internal/textcut"
)

// The types of this file are the A2A data model. They marshal to the JSON
// of protocol 1.0 (camelCase field names, enum values such as
// "TASK_STATE_COMPLETED", parts and stream events told apart by which
// member they hold) and unmarshal from both 1.0 and 0.3 JSON (where parts
// and events carry a "kind", states read "completed" and roles "user"), so
// that one decoder reads either generation. The 0.3 encoding is in
// legacy.go.

// TaskState is the state of a task. Its values are the 1.0 names.
type TaskState string

// The task states.
const (
	StateUnspecified   TaskState = "TASK_STATE_UNSPECIFIED"
	StateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	StateWorking       TaskState = "TASK_STATE_WORKING"
	StateCompleted     TaskState = "TASK_STATE_COMPLETED"
	StateFailed        TaskState = "TASK_STATE_FAILED"
	StateCanceled      TaskState = "TASK_STATE_CANCELED"
	StateRejected      TaskState = "TASK_STATE_REJECTED"
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	StateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// Terminal reports whether the task is over: completed, failed, canceled or
// rejected.
func (s TaskState) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCanceled, StateRejected:
		return true
	}
	return false
}

// Interrupted reports whether the task waits for the client: for input or
// for authentication.
func (s TaskState) Interrupted() bool {
	return s == StateInputRequired || s == StateAuthRequired
}

// Active reports whether the task is still being worked on: submitted,
// working, or unspecified. A state this package does not know (a later
// protocol's) is neither active, nor terminal, nor interrupted.
func (s TaskState) Active() bool {
	return s == StateSubmitted || s == StateWorking || s == StateUnspecified
}

// legacyStates maps the 0.3 names of the states to the 1.0 ones.
var legacyStates = map[string]TaskState{
	"submitted":      StateSubmitted,
	"working":        StateWorking,
	"completed":      StateCompleted,
	"failed":         StateFailed,
	"canceled":       StateCanceled,
	"cancelled":      StateCanceled,
	"rejected":       StateRejected,
	"input-required": StateInputRequired,
	"auth-required":  StateAuthRequired,
	"unknown":        StateUnspecified,
}

// UnmarshalJSON reads a state under its 1.0 or its 0.3 name. A name it
// does not know is kept as it is.
func (s *TaskState) UnmarshalJSON(data []byte) error {
	var name string
	if err := json.Unmarshal(data, &name); err != nil {
		return err
	}
	*s = parseState(name)
	return nil
}

func parseState(name string) TaskState {
	if st, ok := legacyStates[strings.ToLower(name)]; ok {
		return st
	}
	if name == "" {
		return StateUnspecified
	}
	return TaskState(name)
}

// legacy returns the 0.3 name of the state.
func (s TaskState) legacy() string {
	switch s {
	case StateSubmitted:
		return "submitted"
	case StateWorking:
		return "working"
	case StateCompleted:
		return "completed"
	case StateFailed:
		return "failed"
	case StateCanceled:
		return "canceled"
	case StateRejected:
		return "rejected"
	case StateInputRequired:
		return "input-required"
	case StateAuthRequired:
		return "auth-required"
	}
	return "unknown"
}

// short returns a lower-case name of the state for messages: "completed",
// "input-required".
func (s TaskState) short() string {
	if l := s.legacy(); l != "unknown" || s == StateUnspecified {
		return l
	}
	return string(s)
}

// Role says who wrote a message. Its values are the 1.0 names.
type Role string

// The roles.
const (
	// RoleUser: the message is from the client.
	RoleUser Role = "ROLE_USER"
	// RoleAgent: the message is from the agent.
	RoleAgent Role = "ROLE_AGENT"
)

// UnmarshalJSON reads a role under its 1.0 or its 0.3 name.
func (r *Role) UnmarshalJSON(data []byte) error {
	var name string
	if err := json.Unmarshal(data, &name); err != nil {
		return err
	}
	switch strings.ToLower(name) {
	case "user", "role_user":
		*r = RoleUser
	case "agent", "role_agent":
		*r = RoleAgent
	default:
		*r = Role(name)
	}
	return nil
}

func (r Role) legacy() string {
	switch r {
	case RoleUser:
		return "user"
	case RoleAgent:
		return "agent"
	}
	return string(r)
}

// PartKind says what a Part holds.
type PartKind string

// The kinds of part.
const (
	// PartText: Text holds text.
	PartText PartKind = "text"
	// PartData: Data holds a JSON value.
	PartData PartKind = "data"
	// PartURL: URL points at a file.
	PartURL PartKind = "url"
	// PartRaw: Raw holds a file's bytes.
	PartRaw PartKind = "raw"
)

// Part is a piece of the content of a message or an artifact: text, a JSON
// value, or a file given by URL or by its bytes. A part whose content this
// package does not know (a later protocol's) has an empty Kind.
type Part struct {
	// Kind says which of Text, Data, URL and Raw the part holds.
	Kind PartKind
	// Text is a text part's text.
	Text string
	// Data is a data part's JSON value.
	Data json.RawMessage
	// URL is the address of a file part's content.
	URL string
	// Raw is a file part's content.
	Raw []byte
	// MediaType is the content's media type, such as "text/plain" or
	// "image/png"; optional.
	MediaType string
	// Filename names a file part's file; optional.
	Filename string
	// Metadata is the part's metadata; optional.
	Metadata map[string]any
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Kind: PartText, Text: text} }

// DataPart returns a data part holding the JSON value raw.
func DataPart(raw json.RawMessage) Part {
	return Part{Kind: PartData, Data: raw, MediaType: "application/json"}
}

// FilePart returns a part that points at a file by URL.
func FilePart(url, mediaType, filename string) Part {
	return Part{Kind: PartURL, URL: url, MediaType: mediaType, Filename: filename}
}

// RawPart returns a part that holds a file's bytes.
func RawPart(data []byte, mediaType, filename string) Part {
	return Part{Kind: PartRaw, Raw: data, MediaType: mediaType, Filename: filename}
}

// partJSON is a part as 1.0 writes it, and as either generation may read
// it: 0.3 parts carry a kind, and a file part nests its file.
type partJSON struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`

	// 0.3 only.
	Kind string          `json:"kind,omitempty"`
	File *legacyFileJSON `json:"file,omitempty"`
}

type legacyFileJSON struct {
	URI      string `json:"uri,omitempty"`
	Bytes    string `json:"bytes,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	Name     string `json:"name,omitempty"`
}

// MarshalJSON writes the part as 1.0 does: the member that holds its
// content, and its media type, file name and metadata.
func (p Part) MarshalJSON() ([]byte, error) {
	out := partJSON{Metadata: p.Metadata, Filename: p.Filename, MediaType: p.MediaType}
	switch p.Kind {
	case PartText:
		out.Text = &p.Text
	case PartData:
		out.Data = p.Data
		if len(bytes.TrimSpace(out.Data)) == 0 {
			out.Data = json.RawMessage("null")
		}
	case PartURL:
		out.URL = &p.URL
	case PartRaw:
		out.Raw = p.Raw
		if out.Raw == nil {
			out.Raw = []byte{}
		}
	default:
		return nil, errors.New("a2a: a part without content cannot be written")
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a 1.0 part or a 0.3 part (text, data or file).
func (p *Part) UnmarshalJSON(data []byte) error {
	var in struct {
		partJSON
		// Raw is decoded by hand: 0.3 and 1.0 both use base64, but a
		// malformed value should not fail the whole message.
		Raw json.RawMessage `json:"raw,omitempty"`
		// The 0.3 media type of a data or text part lived in metadata;
		// a few writers also put "mimeType" at the top.
		MimeType string `json:"mimeType,omitempty"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*p = Part{Metadata: in.Metadata, Filename: in.Filename, MediaType: in.MediaType}
	if p.MediaType == "" {
		p.MediaType = in.MimeType
	}
	switch {
	case in.Kind == "text" || (in.Kind == "" && in.Text != nil):
		p.Kind = PartText
		if in.Text != nil {
			p.Text = *in.Text
		}
	case in.Kind == "data" || (in.Kind == "" && len(in.partJSON.Data) > 0):
		p.Kind = PartData
		p.Data = in.partJSON.Data
	case in.Kind == "file" && in.File != nil:
		f := in.File
		if p.MediaType == "" {
			p.MediaType = f.MimeType
		}
		if p.Filename == "" {
			p.Filename = f.Name
		}
		if f.URI != "" {
			p.Kind, p.URL = PartURL, f.URI
		} else {
			p.Kind = PartRaw
			p.Raw = decodeBase64(f.Bytes)
		}
	case in.Kind == "" && in.URL != nil:
		p.Kind, p.URL = PartURL, *in.URL
	case in.Kind == "" && len(in.Raw) > 0:
		var s string
		if json.Unmarshal(in.Raw, &s) == nil {
			p.Kind, p.Raw = PartRaw, decodeBase64(s)
		}
	}
	return nil
}

// decodeBase64 decodes standard or URL-safe base64, padded or not; it
// returns nil for anything else.
func decodeBase64(s string) []byte {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b
		}
	}
	return nil
}

// Message is one turn of communication between a client and an agent.
type Message struct {
	// MessageID identifies the message; its author creates it.
	MessageID string `json:"messageId"`
	// ContextID is the conversation the message belongs to; optional on a
	// client's message.
	ContextID string `json:"contextId,omitempty"`
	// TaskID is the task the message belongs to; optional on a client's
	// message, where it continues that task.
	TaskID string `json:"taskId,omitempty"`
	// Role says who wrote the message.
	Role Role `json:"role"`
	// Parts are the message's content.
	Parts []Part `json:"parts"`
	// Metadata is the message's metadata; optional.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Extensions are the URIs of extensions present in the message.
	Extensions []string `json:"extensions,omitempty"`
	// ReferenceTaskIDs are tasks the message refers to for context.
	ReferenceTaskIDs []string `json:"referenceTaskIds,omitempty"`
}

// TaskStatus is a task's state, with a message from the agent about it.
type TaskStatus struct {
	// State is the task's state.
	State TaskState
	// Message is the agent's message about the state: its question when it
	// needs input, its reason when it failed; optional.
	Message *Message
	// Timestamp is when the status was recorded; zero when unknown.
	Timestamp time.Time
}

type statusJSON struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// timeLayout is the protocol's timestamp format: UTC, milliseconds.
const timeLayout = "2006-01-02T15:04:05.000Z"

// MarshalJSON writes the status with an ISO 8601 UTC timestamp.
func (s TaskStatus) MarshalJSON() ([]byte, error) {
	out := statusJSON{State: s.State, Message: s.Message}
	if out.State == "" {
		out.State = StateUnspecified
	}
	if !s.Timestamp.IsZero() {
		out.Timestamp = s.Timestamp.UTC().Format(timeLayout)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a status; a timestamp it cannot parse is left zero.
func (s *TaskStatus) UnmarshalJSON(data []byte) error {
	var in statusJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*s = TaskStatus{State: in.State, Message: in.Message}
	if s.State == "" {
		s.State = StateUnspecified
	}
	if t, err := time.Parse(time.RFC3339Nano, in.Timestamp); err == nil {
		s.Timestamp = t
	}
	return nil
}

// Artifact is an output of a task.
type Artifact struct {
	// ArtifactID identifies the artifact within its task.
	ArtifactID string `json:"artifactId"`
	// Name is a name for people; optional.
	Name string `json:"name,omitempty"`
	// Description describes the artifact; optional.
	Description string `json:"description,omitempty"`
	// Parts are the artifact's content.
	Parts []Part `json:"parts"`
	// Metadata is the artifact's metadata; optional.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Extensions are the URIs of extensions present in the artifact.
	Extensions []string `json:"extensions,omitempty"`
}

// Task is a unit of work an agent does for a client.
type Task struct {
	// ID identifies the task; the agent creates it.
	ID string `json:"id"`
	// ContextID is the conversation the task belongs to.
	ContextID string `json:"contextId,omitempty"`
	// Status is the task's current status.
	Status TaskStatus `json:"status"`
	// Artifacts are the task's outputs.
	Artifacts []Artifact `json:"artifacts,omitempty"`
	// History is the task's messages, oldest first.
	History []Message `json:"history,omitempty"`
	// Metadata is the task's metadata; optional.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// StatusUpdate is a stream event that reports a task's new status.
type StatusUpdate struct {
	// TaskID and ContextID identify the task.
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	// Status is the new status.
	Status TaskStatus `json:"status"`
	// Metadata is the event's metadata; optional.
	Metadata map[string]any `json:"metadata,omitempty"`
	// Final is set by 0.3 agents on the last event of a stream; 1.0 ends
	// the stream instead, and does not write the field.
	Final bool `json:"-"`
}

// ArtifactUpdate is a stream event that delivers an artifact or a piece of
// one.
type ArtifactUpdate struct {
	// TaskID and ContextID identify the task.
	TaskID    string `json:"taskId"`
	ContextID string `json:"contextId"`
	// Artifact is the artifact, or the piece of it.
	Artifact Artifact `json:"artifact"`
	// Append says the parts add to those of the artifact with the same ID
	// sent before.
	Append bool `json:"append,omitempty"`
	// LastChunk says this is the artifact's last piece.
	LastChunk bool `json:"lastChunk,omitempty"`
	// Metadata is the event's metadata; optional.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Event is a result of SendMessage (a Task or a Message) or an element of a
// stream (any of the four). Exactly one field is set.
type Event struct {
	// Task is a task: the answer to SendMessage, or the first event of a
	// stream.
	Task *Task `json:"task,omitempty"`
	// Message is a message of the agent, sent instead of a task.
	Message *Message `json:"message,omitempty"`
	// StatusUpdate reports a task's new status.
	StatusUpdate *StatusUpdate `json:"statusUpdate,omitempty"`
	// ArtifactUpdate delivers an artifact or a piece of one.
	ArtifactUpdate *ArtifactUpdate `json:"artifactUpdate,omitempty"`
}

// UnmarshalJSON reads a 1.0 event (an object with one member: task,
// message, statusUpdate or artifactUpdate) or a 0.3 one (the object itself,
// with a kind).
func (e *Event) UnmarshalJSON(data []byte) error {
	var probe struct {
		Kind           *string         `json:"kind"`
		Task           json.RawMessage `json:"task"`
		Message        json.RawMessage `json:"message"`
		StatusUpdate   json.RawMessage `json:"statusUpdate"`
		ArtifactUpdate json.RawMessage `json:"artifactUpdate"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return err
	}
	*e = Event{}
	if probe.Kind != nil {
		return e.unmarshalLegacy(*probe.Kind, data)
	}
	set := 0
	for _, m := range []json.RawMessage{probe.Task, probe.Message, probe.StatusUpdate, probe.ArtifactUpdate} {
		if len(m) > 0 && !bytes.Equal(m, []byte("null")) {
			set++
		}
	}
	if set != 1 {
		return errors.New("want an object with exactly one of task, message, statusUpdate and artifactUpdate")
	}
	type plain Event
	return json.Unmarshal(data, (*plain)(e))
}

func (e *Event) unmarshalLegacy(kind string, data []byte) error {
	switch kind {
	case "task":
		e.Task = new(Task)
		return json.Unmarshal(data, e.Task)
	case "message":
		e.Message = new(Message)
		return json.Unmarshal(data, e.Message)
	case "status-update":
		var in struct {
			StatusUpdate
			Final bool `json:"final"`
		}
		if err := json.Unmarshal(data, &in); err != nil {
			return err
		}
		in.StatusUpdate.Final = in.Final
		e.StatusUpdate = &in.StatusUpdate
		return nil
	case "artifact-update":
		e.ArtifactUpdate = new(ArtifactUpdate)
		return json.Unmarshal(data, e.ArtifactUpdate)
	}
	return errors.New("unknown kind " + strconv.Quote(textcut.Clip(kind, 64, "...")))
}

// partsText returns the text of parts: text parts as they are, data parts as
// their JSON, files as a line that names them; joined by newlines where the
// kind changes.
func partsText(parts []Part) string {
	var b strings.Builder
	prevText := false
	for _, p := range parts {
		s, isText := partText(p)
		if s == "" {
			continue
		}
		if b.Len() > 0 && !(isText && prevText) {
			b.WriteByte('\n')
		}
		b.WriteString(s)
		prevText = isText
	}
	return b.String()
}

// partText returns the text a part stands for, and whether it is text.
func partText(p Part) (string, bool) {
	switch p.Kind {
	case PartText:
		return p.Text, true
	case PartData:
		return string(p.Data), false
	case PartURL:
		return "[file" + fileLabel(p) + ": " + p.URL + "]", false
	case PartRaw:
		return "[file" + fileLabel(p) + ", " + strconv.Itoa(len(p.Raw)) + " bytes]", false
	}
	return "", false
}

func fileLabel(p Part) string {
	var s string
	if p.Filename != "" {
		s += " " + p.Filename
	}
	if p.MediaType != "" {
		s += " (" + p.MediaType + ")"
	}
	return s
}
