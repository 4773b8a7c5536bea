package arguments

import "errors"

// Sentinel errors; package tool exports them under the same names.
var (
	// ErrInvalidTool: a tool cannot be built as asked (here: an argument
	// type the pipeline cannot derive a schema for or decode into).
	ErrInvalidTool = errors.New("tool: invalid tool")
	// ErrInvalidSchema: a JSON Schema does not compile.
	ErrInvalidSchema = errors.New("tool: invalid schema")
	// ErrUnrepairable: Repair found no JSON value it could recover.
	ErrUnrepairable = errors.New("tool: JSON cannot be repaired")
)

// FieldError is one problem with one value of a call's arguments.
type FieldError struct {
	// Path locates the value, as a JSON path ("$.items[2].name").
	Path string
	// Message says what is wrong with it.
	Message string
}

// Error reports arguments that could not be repaired, parsed, validated
// or decoded: every problem, by JSON path. Package tool reports it as a
// tool.ArgumentError, with the tool's name and the arguments received.
type Error struct {
	// Fields lists every problem, by JSON path.
	Fields []FieldError
	// Cause is the underlying error, when there is one.
	Cause error
}

// Error lists the problems.
func (e *Error) Error() string {
	msg := "invalid arguments:"
	for _, f := range e.Fields {
		msg += "\n- " + f.Path + ": " + f.Message
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Cause }
