package a2a

import (
	"encoding/base64"
	"encoding/json"
)

// This file writes the JSON of protocol 0.3: objects carry a "kind"
// ("task", "message", "status-update", "artifact-update"; parts "text",
// "data", "file"), states and roles are lower case ("input-required",
// "agent"), a file part nests its file, and a stream's last status update
// says "final": true.

type legacyPart struct {
	Kind     string          `json:"kind"`
	Text     *string         `json:"text,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	File     *legacyFileJSON `json:"file,omitempty"`
	Metadata map[string]any  `json:"metadata,omitempty"`
}

// legacyParts converts parts to 0.3. A data part whose value is not an
// object (0.3 data parts hold objects) and a part without content become
// text.
func legacyParts(parts []Part) []legacyPart {
	out := make([]legacyPart, 0, len(parts))
	for _, p := range parts {
		lp := legacyPart{Metadata: p.Metadata}
		switch p.Kind {
		case PartText:
			lp.Kind, lp.Text = "text", &p.Text
		case PartData:
			if isJSONObject(p.Data) {
				lp.Kind, lp.Data = "data", p.Data
			} else {
				s := string(p.Data)
				lp.Kind, lp.Text = "text", &s
			}
		case PartURL:
			lp.Kind = "file"
			lp.File = &legacyFileJSON{URI: p.URL, MimeType: p.MediaType, Name: p.Filename}
		case PartRaw:
			lp.Kind = "file"
			lp.File = &legacyFileJSON{Bytes: base64.StdEncoding.EncodeToString(p.Raw), MimeType: p.MediaType, Name: p.Filename}
		default:
			continue
		}
		out = append(out, lp)
	}
	return out
}

func isJSONObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

type legacyMessage struct {
	Kind             string         `json:"kind"`
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []legacyPart   `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

func toLegacyMessage(m *Message) *legacyMessage {
	if m == nil {
		return nil
	}
	return &legacyMessage{
		Kind: "message", MessageID: m.MessageID, ContextID: m.ContextID, TaskID: m.TaskID,
		Role: m.Role.legacy(), Parts: legacyParts(m.Parts), Metadata: m.Metadata,
		Extensions: m.Extensions, ReferenceTaskIDs: m.ReferenceTaskIDs,
	}
}

type legacyStatus struct {
	State     string         `json:"state"`
	Message   *legacyMessage `json:"message,omitempty"`
	Timestamp string         `json:"timestamp,omitempty"`
}

func toLegacyStatus(s TaskStatus) legacyStatus {
	out := legacyStatus{State: s.State.legacy(), Message: toLegacyMessage(s.Message)}
	if !s.Timestamp.IsZero() {
		out.Timestamp = s.Timestamp.UTC().Format(timeLayout)
	}
	return out
}

type legacyArtifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []legacyPart   `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

func toLegacyArtifact(a Artifact) legacyArtifact {
	return legacyArtifact{
		ArtifactID: a.ArtifactID, Name: a.Name, Description: a.Description,
		Parts: legacyParts(a.Parts), Metadata: a.Metadata, Extensions: a.Extensions,
	}
}

type legacyTask struct {
	Kind      string           `json:"kind"`
	ID        string           `json:"id"`
	ContextID string           `json:"contextId"`
	Status    legacyStatus     `json:"status"`
	Artifacts []legacyArtifact `json:"artifacts,omitempty"`
	History   []legacyMessage  `json:"history,omitempty"`
	Metadata  map[string]any   `json:"metadata,omitempty"`
}

func toLegacyTask(t *Task) *legacyTask {
	out := &legacyTask{
		Kind: "task", ID: t.ID, ContextID: t.ContextID,
		Status: toLegacyStatus(t.Status), Metadata: t.Metadata,
	}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, toLegacyArtifact(a))
	}
	for i := range t.History {
		out.History = append(out.History, *toLegacyMessage(&t.History[i]))
	}
	return out
}

type legacyStatusUpdate struct {
	Kind      string         `json:"kind"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    legacyStatus   `json:"status"`
	Final     bool           `json:"final"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

type legacyArtifactUpdate struct {
	Kind      string         `json:"kind"`
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  legacyArtifact `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// legacyEvent returns the 0.3 form of e: the object itself, with its kind.
// A status update is final when its state ends the stream.
func legacyEvent(e Event) any {
	switch {
	case e.Task != nil:
		return toLegacyTask(e.Task)
	case e.Message != nil:
		return toLegacyMessage(e.Message)
	case e.StatusUpdate != nil:
		u := e.StatusUpdate
		return &legacyStatusUpdate{
			Kind: "status-update", TaskID: u.TaskID, ContextID: u.ContextID,
			Status: toLegacyStatus(u.Status), Final: u.Final || !u.Status.State.Active(), Metadata: u.Metadata,
		}
	case e.ArtifactUpdate != nil:
		u := e.ArtifactUpdate
		return &legacyArtifactUpdate{
			Kind: "artifact-update", TaskID: u.TaskID, ContextID: u.ContextID,
			Artifact: toLegacyArtifact(u.Artifact), Append: u.Append, LastChunk: u.LastChunk, Metadata: u.Metadata,
		}
	}
	return nil
}

// legacySendParams are the params of message/send and message/stream.
type legacySendParams struct {
	Message       *legacyMessage        `json:"message"`
	Configuration *legacySendConfigJSON `json:"configuration,omitempty"`
	Metadata      map[string]any        `json:"metadata,omitempty"`
}

type legacySendConfigJSON struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	HistoryLength       *int     `json:"historyLength,omitempty"`
	Blocking            *bool    `json:"blocking,omitempty"`
}
