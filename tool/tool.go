package tool

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/trellis-go/trellis/model"
)

// Tool is something a model can call.
//
// Definition is what the model is told about the tool; Call runs it. The
// arguments stay JSON from the model to the tool: Call receives them as the
// model produced them (or as the argument pipeline rewrote them), never as a
// map. Executors do not call Call directly: they call Invoke, which runs the
// argument pipeline, converts errors and panics into error results, and never
// runs a tool's body with arguments that failed validation.
//
// Implementations must be safe for concurrent use.
type Tool interface {
	// Definition returns the tool's name, description and schemas.
	Definition() model.ToolDefinition
	// Call runs the tool for the call with the given ID.
	Call(ctx context.Context, callID string, args json.RawMessage) (Result, error)
}

// Metadata describes how a tool behaves. The framework acts on it: a cache
// middleware may cache read-only tools, a permission policy may ask before a
// destructive one, an executor runs a batch sequentially when one of its
// tools is Sequential, and Invoke truncates content beyond MaxResultSize.
type Metadata struct {
	// ReadOnly says the tool does not change anything outside itself.
	ReadOnly bool `json:"read_only,omitempty"`
	// Destructive says the tool may delete or overwrite data.
	Destructive bool `json:"destructive,omitempty"`
	// ConcurrencySafe says several calls of the tool may run at once.
	ConcurrencySafe bool `json:"concurrency_safe,omitempty"`
	// OpenWorld says the tool reaches systems outside the application's
	// control, such as the web.
	OpenWorld bool `json:"open_world,omitempty"`
	// SearchOrRead says the tool searches for or reads information.
	SearchOrRead bool `json:"search_or_read,omitempty"`
	// MaxResultSize, when positive, caps the bytes of content the model sees;
	// Invoke truncates larger results and says so in the content.
	MaxResultSize int `json:"max_result_size,omitempty"`
	// Sequential forces any batch that contains a call of the tool to run
	// sequentially.
	Sequential bool `json:"sequential,omitempty"`
	// ConcurrencyGroup, when not empty, names a group of tools whose calls
	// share a concurrency cap set on the executor (for example all tools
	// that talk to one rate-limited API).
	ConcurrencyGroup string `json:"concurrency_group,omitempty"`
}

// MetadataProvider is implemented by tools that describe their behaviour.
type MetadataProvider interface {
	Metadata() Metadata
}

// ArgumentPreparer is implemented by tools that rewrite their raw argument
// object before it is coerced and validated: to tolerate a provider's quirk
// or to fill a default the model left out. The map is the decoded argument
// object; numbers in it are json.Number values. PrepareArguments may modify
// and return it or return a new map.
type ArgumentPreparer interface {
	PrepareArguments(args map[string]any) map[string]any
}

// InstructionProvider is implemented by tools that add text to the system
// prompt, for example to explain when to use them. CollectInstructions
// gathers the instructions of a run's tools in order.
type InstructionProvider interface {
	// Instruction returns text for the system prompt, or "" for none.
	Instruction() string
}

// LongRunner is implemented by tools whose calls may return a pending result
// (Result.Pending) that is completed later by call ID, for example through
// Pending.Complete.
type LongRunner interface {
	LongRunning() bool
}

// Streamer is implemented by tools that produce their result in pieces.
// Invoke forwards each piece as a progress Update and merges the pieces into
// the final result: content is appended in order (adjacent text parts are
// joined), the last non-nil Details, Status and ErrorCode win, and Terminate,
// IsError and Pending are set when any piece sets them. An error ends the
// stream and becomes an error result that keeps the content received so far.
//
// The arguments Stream receives have been through the same pipeline as
// Call's.
type Streamer interface {
	Tool
	Stream(ctx context.Context, callID string, args json.RawMessage) iter.Seq2[Result, error]
}

// DeclarationOnly is implemented by tools that the framework never runs:
// the model sees their definition, and the caller executes their calls
// outside the framework (a browser, a client application, an upstream
// service). See NewDeclaration.
type DeclarationOnly interface {
	DeclarationOnly() bool
}

// SchemaProvider is implemented by tools that hold their compiled input
// schema, so that Invoke never compiles it per call. Every tool built by
// this package implements it; other implementations of Tool may return the
// result of CompileSchema, built once. A nil Schema means the tool has none.
type SchemaProvider interface {
	CompiledSchema() *Schema
}

// Titled is implemented by tools with a title: a short name for people —
// user interfaces, traces, logs — such as "Search the docs" for the tool
// search_docs. It is display data only: models see the name and the
// description, and nothing in the framework acts on the title.
type Titled interface {
	Title() string
}

// TitleOf returns t's title (see Titled), or "" when it has none; display
// code usually falls back to the tool's name.
func TitleOf(t Tool) string {
	if tt, ok := As[Titled](t); ok {
		return tt.Title()
	}
	return ""
}

// Wrapper is implemented by tools that wrap another tool, such as those
// returned by Rename and WithPrefix. As follows Unwrap to find a capability
// that the wrapper does not implement itself, so a wrapper that changes a
// capability (its input schema, its metadata) implements that capability
// itself.
type Wrapper interface {
	Unwrap() Tool
}

// As finds the first tool in t's chain of wrappers (t, t.Unwrap(), ...) that
// implements C and returns it as a C.
func As[C any](t Tool) (C, bool) {
	for depth := 0; t != nil && depth < 64; depth++ {
		if c, ok := t.(C); ok {
			return c, true
		}
		w, ok := t.(Wrapper)
		if !ok {
			break
		}
		t = w.Unwrap()
	}
	var zero C
	return zero, false
}

// MetadataOf returns t's metadata, or the zero Metadata when t describes none.
func MetadataOf(t Tool) Metadata {
	if p := ownProfile(t); p != nil {
		return p.meta
	}
	return askMetadata(t)
}

// askMetadata asks t for its metadata, through its wrappers.
func askMetadata(t Tool) Metadata {
	if p, ok := As[MetadataProvider](t); ok {
		return p.Metadata()
	}
	return Metadata{}
}

// IsDeclarationOnly reports whether the framework must leave t's calls to
// the caller.
func IsDeclarationOnly(t Tool) bool {
	if p := ownProfile(t); p != nil {
		return p.declOnly
	}
	return askDeclarationOnly(t)
}

// askDeclarationOnly asks t, through its wrappers, whether it is
// declaration-only.
func askDeclarationOnly(t Tool) bool {
	d, ok := As[DeclarationOnly](t)
	return ok && d.DeclarationOnly()
}

// IsLongRunning reports whether t's calls may return pending results.
func IsLongRunning(t Tool) bool {
	l, ok := As[LongRunner](t)
	return ok && l.LongRunning()
}

// Name returns t's name, the Name of its definition.
func Name(t Tool) string { return t.Definition().Name }
