package tool

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/internal/arguments"
)

// The argument pipeline (repair, parse, prepare, coerce, validate, decode,
// and the one-pass plans) lives in tool/internal/args; this file is its
// public face: the compiled Schema, the errors it reports, and the
// functions users call on their own.

// MaxSchemaDepth is how deeply the types of a derived schema may nest: a
// value may sit at most this many levels below the root, where a struct
// field, a slice or array element and a map value each go one level down.
// A type that nests deeper is an error at construction. A self-referencing
// type does not count against the cap: it is emitted once under $defs and
// referenced with $ref.
const MaxSchemaDepth = arguments.MaxDepth

// SchemaFor derives the JSON Schema of T's JSON form, following the tag
// dialect documented in the package overview and in docs/tools.md. Nested
// types are inlined, so the schema is one plain tree; only a type that
// contains itself is placed under $defs and referenced with $ref.
func SchemaFor[T any]() (json.RawMessage, error) {
	return arguments.Derive(reflect.TypeFor[T]())
}

// Schema is a compiled input schema: the validator and the coercion plan
// built from it. Compile a schema once (CompileSchema) and reuse it; a
// Schema is safe for concurrent use.
type Schema struct {
	c *arguments.Schema
}

// CompileSchema compiles a JSON Schema (draft 2020-12 unless its $schema
// names another draft). References outside the schema itself are refused:
// compiling never reads files or the network. Formats ("date-time",
// "email", ...) are asserted.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	c, err := arguments.CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	return &Schema{c: c}, nil
}

// MustCompileSchema is like CompileSchema but panics on error. It is meant
// for schemas written into the program.
func MustCompileSchema(raw json.RawMessage) *Schema {
	s, err := CompileSchema(raw)
	if err != nil {
		panic(err)
	}
	return s
}

// JSON returns the schema's text.
func (s *Schema) JSON() json.RawMessage { return s.c.JSON() }

// Coerce moves a decoded value (numbers as json.Number, as Parse decodes
// them) toward the schema and reports whether anything changed. Containers
// are changed in place; a value that already fits is not copied. See the
// package documentation for the rules.
func (s *Schema) Coerce(v any) (any, bool) { return s.c.Coerce(v) }

// Validate checks a decoded value against the schema. It returns nil or an
// *ArgumentError listing every problem by JSON path, in path order.
func (s *Schema) Validate(v any) error {
	if err := s.c.Validate(v); err != nil {
		return argumentError("", nil, err)
	}
	return nil
}

// Parse decodes JSON text into the values Coerce and Validate work on:
// objects as map[string]any, arrays as []any, numbers as json.Number.
// Trailing data after the value is an error (a *SyntaxError).
func Parse(raw []byte) (any, error) {
	v, err := arguments.Parse(raw)
	return v, publicCause(err)
}

// RepairJSON makes a best effort to turn the almost-JSON that models
// sometimes produce into JSON. It returns valid JSON or an error, never
// anything else; valid JSON is returned unchanged. It handles:
//
//   - Markdown code fences (```json ... ```) and prose before the value;
//   - trailing and repeated commas, and missing commas between members;
//   - single-quoted and backtick-quoted strings;
//   - unquoted keys, and unquoted string values ({status: done});
//   - Python and JavaScript literals: True, False, None, undefined, NaN,
//     Infinity (the last three become null);
//   - comments (// and /* */);
//   - raw control characters and invalid escapes inside strings, and quotes
//     inside strings the model did not escape ("he said "hi"");
//   - numbers such as +1, .5, 1., 01;
//   - truncated input: an unterminated string, number or literal is
//     completed, a member without a value is dropped, and open arrays and
//     objects are closed.
//
// Text after the first complete value is ignored.
func RepairJSON(raw []byte) ([]byte, error) { return arguments.Repair(raw) }

// CanonicalJSON returns raw in a canonical form: compact, object keys
// sorted, numbers and strings as written. Two argument texts that decode to
// the same value get the same canonical form, which makes it a cache or
// deduplication key (with the tool's name; never with the call's ID).
func CanonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	v, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// SyntaxError reports JSON text that does not parse.
type SyntaxError struct {
	// Offset is the byte offset of the problem.
	Offset int
	msg    string
}

// Error says what is wrong and where.
func (e *SyntaxError) Error() string { return fmt.Sprintf("%s (at byte %d)", e.msg, e.Offset) }

// publicCause returns err with the pipeline's own syntax error as a
// *SyntaxError.
func publicCause(err error) error {
	if se, ok := err.(*arguments.SyntaxError); ok {
		return &SyntaxError{Offset: se.Offset, msg: se.Msg}
	}
	return err
}

// FieldError is one problem with one value of a call's arguments.
type FieldError struct {
	// Path locates the value, as a JSON path ("$.items[2].name").
	Path string `json:"path"`
	// Message says what is wrong with it.
	Message string `json:"message"`
}

// ArgumentError reports arguments that could not be repaired, parsed,
// validated or decoded. The tool's body did not run.
type ArgumentError struct {
	// Tool is the tool's name.
	Tool string `json:"tool,omitempty"`
	// Fields lists every problem, by JSON path.
	Fields []FieldError `json:"fields"`
	// Received is the arguments as the model sent them (cut to 2 KiB).
	Received string `json:"received,omitempty"`
	// Cause is the underlying error, when there is one.
	Cause error `json:"-"`
}

// Error lists every problem by path, then the arguments received.
func (e *ArgumentError) Error() string {
	var b strings.Builder
	if e.Tool != "" {
		fmt.Fprintf(&b, "invalid arguments for tool %q:", e.Tool)
	} else {
		b.WriteString("invalid arguments:")
	}
	for _, f := range e.Fields {
		b.WriteString("\n- " + f.Path + ": " + f.Message)
	}
	if e.Received != "" {
		b.WriteString("\narguments received: " + e.Received)
	}
	return b.String()
}

// Is reports whether target is ErrInvalidArguments.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }

// Unwrap returns the underlying error.
func (e *ArgumentError) Unwrap() error { return e.Cause }

// argumentError is the pipeline's error err as an *ArgumentError of the
// tool toolName, which received the arguments received (nil: not shown).
func argumentError(toolName string, received json.RawMessage, err *arguments.Error) *ArgumentError {
	fields := make([]FieldError, len(err.Fields))
	for i, f := range err.Fields {
		fields[i] = FieldError(f)
	}
	ae := &ArgumentError{Tool: toolName, Fields: fields, Cause: publicCause(err.Cause)}
	if received != nil {
		ae.Received = receivedText(received)
	}
	return ae
}

// maxReceived is how much of the arguments received an ArgumentError shows.
const maxReceived = 2048

func receivedText(raw []byte) string {
	s := string(raw)
	if len(s) > maxReceived {
		return textcut.Prefix(s, maxReceived) + "…"
	}
	return s
}

// prepareFunc is a tool's PrepareArguments hook.
type prepareFunc = arguments.Prepare

// preparerSource is implemented by this package's tools, which take their
// hook from WithPrepareArguments (nil when there is none).
type preparerSource interface {
	argumentPreparer() prepareFunc
}

// preparerOf returns t's PrepareArguments hook, or nil: the first in t's
// chain of wrappers (see As), whether set with WithPrepareArguments or by
// implementing ArgumentPreparer.
func preparerOf(t Tool) prepareFunc {
	for depth := 0; t != nil && depth < 64; depth++ {
		if p, ok := t.(ArgumentPreparer); ok {
			return p.PrepareArguments
		}
		if s, ok := t.(preparerSource); ok {
			if f := s.argumentPreparer(); f != nil {
				return f
			}
		}
		w, ok := t.(Wrapper)
		if !ok {
			break
		}
		t = w.Unwrap()
	}
	return nil
}

// runArguments runs the argument pipeline (see arguments.Check) for the tool
// toolName on the arguments it received.
func runArguments(toolName string, received json.RawMessage, sch *Schema, prepare prepareFunc, repair, needValue bool) (arguments.Arguments, *ArgumentError) {
	var c *arguments.Schema
	if sch != nil {
		c = sch.c
	}
	a, err := arguments.Check(received, c, prepare, repair, needValue)
	if err != nil {
		return a, argumentError(toolName, received, err)
	}
	return a, nil
}

// argumentResult is the error result of arguments that failed the pipeline.
func argumentResult(err *ArgumentError) Result {
	return Result{
		Content:   []model.Part{model.TextPart(err.Error() + "\nThe tool did not run. Correct the arguments and call it again.")},
		Details:   err,
		IsError:   true,
		Status:    StatusFailed,
		ErrorCode: CodeInvalidArguments,
		Err:       err,
	}
}

// schemaErrorResult builds the error result of a tool whose own schema
// does not compile.
func schemaErrorResult(toolName string, err error) Result {
	return ErrorResult(CodeInvalidSchema, fmt.Errorf("tool %q cannot run: its input schema is invalid: %w", toolName, err))
}
