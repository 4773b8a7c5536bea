package tool

import (
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/tool/internal/arguments"
)

// Sentinel errors. Typed errors below match them with errors.Is.
var (
	// ErrInvalidArguments: a call's arguments could not be repaired, parsed,
	// validated or decoded. See ArgumentError.
	ErrInvalidArguments = errors.New("tool: invalid arguments")
	// ErrInvalidTool: a tool cannot be built as asked (a bad name, an
	// argument type that is not a struct, an unsupported field type, ...).
	ErrInvalidTool = arguments.ErrInvalidTool
	// ErrInvalidSchema: a JSON Schema does not compile.
	ErrInvalidSchema = arguments.ErrInvalidSchema
	// ErrUnrepairable: RepairJSON found no JSON value it could recover.
	ErrUnrepairable = arguments.ErrUnrepairable
	// ErrDuplicateTool: two tools of one run share a name. See DuplicateToolError.
	ErrDuplicateTool = errors.New("tool: duplicate tool name")
	// ErrUnknownTool: a call names a tool the run does not have. See UnknownToolError.
	ErrUnknownTool = errors.New("tool: unknown tool")
	// ErrDeclarationOnly: a declaration-only tool was asked to run.
	ErrDeclarationOnly = errors.New("tool: declaration-only tool is executed by the caller")
	// ErrPermission: a permission check denied a call or asked for approval.
	// See PermissionError.
	ErrPermission = errors.New("tool: permission not granted")
	// ErrPanic: a tool panicked. See PanicError.
	ErrPanic = errors.New("tool: panic")
	// ErrNotPending: a completion names a call that is not pending.
	ErrNotPending = errors.New("tool: call is not pending")
	// ErrAlreadyPending: a call ID is already pending.
	ErrAlreadyPending = errors.New("tool: call is already pending")
)

// PanicError is the error behind the result of a call whose tool panicked.
type PanicError struct {
	// Tool is the tool's name.
	Tool string
	// Value is what the tool panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack string
}

// Error says which tool panicked and with what.
func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %q panicked: %v", e.Tool, e.Value)
}

// Is reports whether target is ErrPanic.
func (e *PanicError) Is(target error) bool { return target == ErrPanic }

// DuplicateToolError reports two tools with one name in a run's tool list.
type DuplicateToolError struct {
	// Name is the shared name.
	Name string
	// First and Second name the sources (toolsets) of the two tools.
	First, Second string
}

// Error names the tool and both sources.
func (e *DuplicateToolError) Error() string {
	return fmt.Sprintf("tool: duplicate tool name %q: provided by toolset %q and by toolset %q", e.Name, e.First, e.Second)
}

// Is reports whether target is ErrDuplicateTool.
func (e *DuplicateToolError) Is(target error) bool { return target == ErrDuplicateTool }

// UnknownToolError reports a call of a tool the run does not have.
type UnknownToolError struct {
	// Name is the name the call used.
	Name string
	// Suggestions are the nearest known names, nearest first.
	Suggestions []string
	// Available are all known names.
	Available []string
}

// Error is the text the model reads: the unknown name, the nearest
// names and the available ones.
func (e *UnknownToolError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown tool %q.", e.Name)
	if len(e.Suggestions) > 0 {
		b.WriteString(" Did you mean ")
		for i, s := range e.Suggestions {
			if i > 0 {
				b.WriteString(" or ")
			}
			fmt.Fprintf(&b, "%q", s)
		}
		b.WriteString("?")
	}
	const maxListed = 30
	switch {
	case len(e.Available) == 0:
		b.WriteString(" No tools are available.")
	case len(e.Available) <= maxListed:
		b.WriteString(" Available tools: " + strings.Join(e.Available, ", ") + ".")
	default:
		fmt.Fprintf(&b, " Available tools: %s, and %d more.", strings.Join(e.Available[:maxListed], ", "), len(e.Available)-maxListed)
	}
	return b.String()
}

// Is reports whether target is ErrUnknownTool.
func (e *UnknownToolError) Is(target error) bool { return target == ErrUnknownTool }
