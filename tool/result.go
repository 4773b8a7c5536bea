package tool

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
)

// Status is the outcome of a call.
type Status string

// The outcomes of a call.
const (
	// StatusSuccess: the tool ran and produced its result.
	StatusSuccess Status = "success"
	// StatusFailed: the arguments were invalid, the tool returned an error
	// or panicked, or the tool was unknown.
	StatusFailed Status = "failed"
	// StatusCancelled: the call's context was cancelled.
	StatusCancelled Status = "cancelled"
	// StatusTimeout: the call's deadline passed.
	StatusTimeout Status = "timeout"
	// StatusDenied: a permission check denied the call or asked for approval.
	StatusDenied Status = "denied"
	// StatusPending: a long-running tool started work that completes later.
	StatusPending Status = "pending"
)

// Error codes carried by Result.ErrorCode. Tools may use their own codes too.
const (
	CodeInvalidArguments = "invalid_arguments"
	CodeToolError        = "tool_error"
	CodePanic            = "panic"
	CodeTimeout          = "timeout"
	CodeCancelled        = "cancelled"
	CodeUnknownTool      = "unknown_tool"
	CodePermissionDenied = "permission_denied"
	CodeApprovalRequired = "approval_required"
	CodeDeclarationOnly  = "declaration_only"
	CodeInvalidSchema    = "invalid_schema"
)

// Actions are requests a tool makes of the graph that runs it. The tool
// package does not interpret them; the ToolsNode does.
type Actions struct {
	// Update is a state update; its meaning is defined by the ToolsNode.
	Update any `json:"update,omitempty"`
	// TransferTo names an agent to hand control to.
	TransferTo string `json:"transfer_to,omitempty"`
	// Escalate asks to end the current agent's loop and return control to
	// its parent.
	Escalate bool `json:"escalate,omitempty"`
}

// IsZero reports whether a requests nothing.
func (a Actions) IsZero() bool { return a.Update == nil && a.TransferTo == "" && !a.Escalate }

// Result is what a call produces.
type Result struct {
	// Content is what the model sees, in order.
	Content []model.Part `json:"content,omitempty"`
	// Details is structured data for logs and user interfaces; the model
	// never sees it.
	Details any `json:"details,omitempty"`
	// Terminate asks to end the run after this batch of calls. A batch ends
	// the run only if every result in it sets Terminate (see AllTerminate).
	Terminate bool `json:"terminate,omitempty"`
	// IsError marks a result that reports a failure.
	IsError bool `json:"is_error,omitempty"`
	// Pending marks the placeholder result of a long-running call that is
	// completed later by call ID.
	Pending bool `json:"pending,omitempty"`
	// Status is the call's outcome. Invoke fills it in when a tool leaves it
	// empty: success, or failed when IsError is set, or pending when Pending
	// is set. IsError wins over a success status.
	Status Status `json:"status,omitempty"`
	// ErrorCode names the kind of failure, for example CodeInvalidArguments.
	ErrorCode string `json:"error_code,omitempty"`
	// Metadata goes into the metadata of the tool message that answers the
	// call (model.Message.Metadata): it travels with the conversation in
	// the state and its checkpoints, and no model sees it. Keys that start
	// with "trellis." are the framework's; those by which the ToolsNode
	// records the run's route (nodes.MetaTerminate and its kin) come from
	// Terminate and Actions only, and are dropped from Metadata.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Actions are requests the tool makes of the graph.
	Actions Actions `json:"actions,omitzero"`
	// Err is the Go error behind an error result, for middleware (retry,
	// circuit breaker) to classify with errors.Is and errors.As. It is not
	// serialized and the model never sees it.
	Err error `json:"-"`
}

// Text returns a successful result with one text part.
func Text(text string) Result {
	return Result{Content: []model.Part{model.TextPart(text)}, Status: StatusSuccess}
}

// Parts returns a successful result with the given content.
func Parts(parts ...model.Part) Result {
	return Result{Content: parts, Status: StatusSuccess}
}

// JSON returns a successful result with one JSON part holding v marshalled.
// If v cannot be marshalled, JSON returns an error result that says so.
func JSON(v any) Result { return jsonResult(v, nil) }

// jsonResult is JSON with slot, when not nil, as the storage of the
// result's part (see onePart).
func jsonResult(v any, slot *model.Part) Result {
	raw, err := json.Marshal(v)
	if err != nil {
		return ErrorResult(CodeToolError, fmt.Errorf("tool: marshal result: %w", err))
	}
	return Result{Content: onePart(slot, model.JSONPart(raw)), Status: StatusSuccess}
}

// ErrorResult returns a failed result whose content is err's message.
func ErrorResult(code string, err error) Result {
	msg := "error"
	if err != nil {
		msg = err.Error()
	}
	return Result{
		Content:   []model.Part{model.TextPart(msg)},
		IsError:   true,
		Status:    StatusFailed,
		ErrorCode: code,
		Err:       err,
	}
}

// Errorf returns a failed result with code CodeToolError and a formatted
// message.
func Errorf(format string, args ...any) Result {
	return ErrorResult(CodeToolError, fmt.Errorf(format, args...))
}

// PendingResult returns the placeholder result of a long-running call: the
// model sees text (for example "report generation started"), and the call
// is completed later by its ID.
func PendingResult(text string) Result {
	r := Result{Pending: true, Status: StatusPending}
	if text != "" {
		r.Content = []model.Part{model.TextPart(text)}
	}
	return r
}

// Text returns the text the result's content holds: text parts as they are,
// JSON parts as their JSON and text resources as their text, concatenated.
// Images, audio and binary resources are skipped.
func (r Result) Text() string {
	if len(r.Content) == 1 && r.Content[0].Type == model.PartText {
		return r.Content[0].Text
	}
	var b strings.Builder
	for _, p := range r.Content {
		switch p.Type {
		case model.PartText:
			b.WriteString(p.Text)
		case model.PartJSON:
			b.Write(p.JSON)
		case model.PartResource:
			if p.Data == nil {
				b.WriteString(p.Text)
			}
		}
	}
	return b.String()
}

// Message returns the tool message that answers the call with the given ID
// and tool name.
func (r Result) Message(callID, toolName string) model.Message {
	m := model.ToolMessage(callID, toolName, r.IsError, r.Content...)
	m.Metadata = maps.Clone(r.Metadata)
	return m
}

// AllTerminate reports whether a batch of results ends the run: it does only
// when the batch is not empty and every result sets Terminate, so one tool
// cannot end a run in which other tools were also called.
func AllTerminate(results []Result) bool {
	if len(results) == 0 {
		return false
	}
	for _, r := range results {
		if !r.Terminate {
			return false
		}
	}
	return true
}

// normalize fills in the status a tool left empty and keeps IsError and
// Status consistent.
func (r *Result) normalize() {
	switch {
	case r.Status == StatusSuccess && r.IsError:
		r.Status = StatusFailed
	case r.Status == "" && r.Pending:
		r.Status = StatusPending
	case r.Status == "" && r.IsError:
		r.Status = StatusFailed
	case r.Status == "":
		r.Status = StatusSuccess
	}
	switch r.Status {
	case StatusFailed, StatusCancelled, StatusTimeout, StatusDenied:
		r.IsError = true
	case StatusPending:
		r.Pending = true
	}
}

// merge appends a streamed piece to r.
func (r *Result) merge(piece Result) {
	for _, p := range piece.Content {
		n := len(r.Content)
		if p.Type == model.PartText && n > 0 && r.Content[n-1].Type == model.PartText {
			r.Content[n-1].Text += p.Text
			continue
		}
		r.Content = append(r.Content, p)
	}
	if piece.Details != nil {
		r.Details = piece.Details
	}
	if len(piece.Metadata) > 0 {
		if r.Metadata == nil {
			r.Metadata = make(map[string]string, len(piece.Metadata))
		}
		maps.Copy(r.Metadata, piece.Metadata)
	}
	if piece.Status != "" {
		r.Status = piece.Status
	}
	if piece.ErrorCode != "" {
		r.ErrorCode = piece.ErrorCode
	}
	if piece.Err != nil {
		r.Err = piece.Err
	}
	r.Terminate = r.Terminate || piece.Terminate
	r.IsError = r.IsError || piece.IsError
	r.Pending = r.Pending || piece.Pending
	if piece.Actions.Update != nil {
		r.Actions.Update = piece.Actions.Update
	}
	if piece.Actions.TransferTo != "" {
		r.Actions.TransferTo = piece.Actions.TransferTo
	}
	r.Actions.Escalate = r.Actions.Escalate || piece.Actions.Escalate
}

// contentSize is the number of bytes of r's content the model would see.
func contentSize(parts []model.Part) int {
	n := 0
	for _, p := range parts {
		n += partSize(p)
	}
	return n
}

func partSize(p model.Part) int {
	switch p.Type {
	case model.PartText:
		return len(p.Text)
	case model.PartJSON:
		return len(p.JSON)
	default:
		return len(p.Data) + len(p.URL)
	}
}

// Truncate returns r with its content cut to at most max bytes (text and
// JSON bytes, image data and URLs). Content that does not fit is cut at a
// UTF-8 boundary (a JSON part that does not fit whole becomes text, since a
// prefix of JSON is not JSON; an image that does not fit is dropped), and a
// final text part tells the model how much it was not shown. A max of zero
// or less, or content that fits, leaves r unchanged.
func Truncate(r Result, max int) Result {
	total := contentSize(r.Content)
	if max <= 0 || total <= max {
		return r
	}
	out := make([]model.Part, 0, len(r.Content)+1)
	budget := max
	for _, p := range r.Content {
		size := partSize(p)
		if size <= budget {
			out = append(out, p)
			budget -= size
			continue
		}
		if budget > 0 {
			switch p.Type {
			case model.PartText:
				out = append(out, model.TextPart(textcut.Prefix(p.Text, budget)))
			case model.PartJSON:
				out = append(out, model.TextPart(textcut.Prefix(string(p.JSON), budget)))
			}
		}
		break
	}
	shown := contentSize(out)
	out = append(out, model.TextPart(fmt.Sprintf("\n[result truncated: showing %d of %d bytes]", shown, total)))
	r.Content = out
	return r
}
