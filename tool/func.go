package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool/internal/arguments"
)

// config holds the optional settings shared by this package's tools.
type config struct {
	metadata     Metadata
	title        string
	prepare      prepareFunc
	instruction  string
	checker      PermissionChecker
	longRunning  bool
	outputSchema json.RawMessage
}

// Option configures a tool built by NewFunc, NewFuncWithSchema,
// NewStreamFunc or New.
type Option func(*config)

// WithMetadata sets the tool's metadata.
func WithMetadata(m Metadata) Option {
	return func(c *config) { c.metadata = m }
}

// WithTitle sets the tool's title (see Titled): a short name for people,
// such as "Search the docs", which models never see.
func WithTitle(title string) Option {
	return func(c *config) { c.title = title }
}

// WithPrepareArguments sets the hook that rewrites the raw argument object
// before coercion and validation (see ArgumentPreparer).
func WithPrepareArguments(fn func(args map[string]any) map[string]any) Option {
	return func(c *config) { c.prepare = fn }
}

// WithInstruction sets text the tool adds to the system prompt (see
// InstructionProvider).
func WithInstruction(text string) Option {
	return func(c *config) { c.instruction = text }
}

// WithPermission sets the tool's own permission checker, consulted before
// the run's policy (see CheckPermission).
func WithPermission(c PermissionChecker) Option {
	return func(cfg *config) { cfg.checker = c }
}

// WithLongRunning marks the tool as long-running: its calls may return a
// pending result (PendingResult) that is completed later by call ID.
func WithLongRunning() Option {
	return func(c *config) { c.longRunning = true }
}

// WithOutputSchema sets the JSON Schema of the tool's structured result,
// published in its definition. SchemaFor derives one from a Go type.
func WithOutputSchema(schema json.RawMessage) Option {
	return func(c *config) { c.outputSchema = schema }
}

// core is what every tool of this package holds: its definition, compiled
// input schema and options.
type core struct {
	def    model.ToolDefinition
	schema *Schema
	cfg    config
	prof   *profile // set by bind
}

// bind finds the profile of t, the tool that holds c, once and for all
// its calls (see profile).
func (c *core) bind(t Tool) {
	var iv Invoker
	p := new(profile)
	iv.profileOf(t, p)
	// The profile serves t alone, whose permission check is c's: the
	// checker set WithPermission, if any.
	p.checker = c.cfg.checker
	p.onePart = resultsOnePart(t)
	c.prof = p
}

// toolProfile returns the profile bind found.
func (c *core) toolProfile() *profile { return c.prof }

func newCore(name, description string, schema json.RawMessage, opts []Option) (core, error) {
	if err := checkName(name); err != nil {
		return core{}, err
	}
	var cfg config
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	s, err := CompileSchema(schema)
	if err != nil {
		return core{}, fmt.Errorf("tool %q: input schema: %w", name, err)
	}
	if len(cfg.outputSchema) > 0 {
		if _, err := CompileSchema(cfg.outputSchema); err != nil {
			return core{}, fmt.Errorf("tool %q: output schema: %w", name, err)
		}
	}
	return core{
		def: model.ToolDefinition{
			Name:         name,
			Description:  description,
			InputSchema:  s.JSON(),
			OutputSchema: cfg.outputSchema,
		},
		schema: s,
		cfg:    cfg,
	}, nil
}

// checkName accepts the names every provider accepts: 1 to 64 ASCII
// letters, digits, underscores and hyphens.
func checkName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w: name %q must be 1 to 64 characters long", ErrInvalidTool, name)
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return fmt.Errorf("%w: name %q may hold only letters, digits, '_' and '-'", ErrInvalidTool, name)
		}
	}
	return nil
}

// Definition returns the tool's definition.
func (c *core) Definition() model.ToolDefinition { return c.def }

// CompiledSchema returns the tool's compiled input schema.
func (c *core) CompiledSchema() *Schema { return c.schema }

// Metadata returns the tool's metadata (WithMetadata).
func (c *core) Metadata() Metadata { return c.cfg.metadata }

// Title returns the tool's title (WithTitle), "" when it has none.
func (c *core) Title() string { return c.cfg.title }

// Instruction returns the tool's system-prompt text (WithInstruction).
func (c *core) Instruction() string { return c.cfg.instruction }

// LongRunning reports whether the tool was built WithLongRunning.
func (c *core) LongRunning() bool { return c.cfg.longRunning }

// CheckPermission consults the checker set WithPermission; without one it
// allows.
func (c *core) CheckPermission(ctx context.Context, req PermissionRequest) (Decision, error) {
	if c.cfg.checker == nil {
		return Allow(), nil
	}
	return c.cfg.checker.CheckPermission(ctx, req)
}

func (c *core) argumentPreparer() prepareFunc { return c.cfg.prepare }

// fastSchema returns the schema the tool's fast plan checks.
func (c *core) fastSchema() *Schema { return c.schema }

// argumentPlan compiles the plan that checks the tool's arguments and
// decodes them into a t. A tool with a PrepareArguments hook of its own
// takes the full pipeline for every call (see arguments.Compile).
func (c *core) argumentPlan(t reflect.Type) *arguments.Plan {
	return arguments.Compile(c.schema.c, t, c.cfg.prepare)
}

// FuncTool is a typed tool built from a Go function. Its input schema is
// derived from In (or given by hand), so the schema and the decoding never
// drift; the arguments are coerced, validated and decoded into In before
// the function runs. Arguments that need no coercion are usually checked
// and decoded in one pass (see "The argument pipeline" in the package
// documentation), with the same outcome.
type FuncTool[In, Out any] struct {
	core
	plan    *arguments.Plan
	fn      func(context.Context, In) (Out, error)
	onePart bool // its results are one part (see newFrames)
	text    bool // Out is string (see textCaller)
}

// NewFunc builds a typed tool from fn. In must be a struct (or a pointer to
// one): its JSON Schema, derived with the tag dialect documented in the
// package overview, becomes the tool's input schema. Out becomes the
// result's content: a string is a text part; a model.Part or []model.Part
// is used as is; a Result is used as is; json.RawMessage is a JSON part;
// anything else is marshalled into a JSON part.
func NewFunc[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) (*FuncTool[In, Out], error) {
	schema, err := arguments.DeriveObject(reflect.TypeFor[In]())
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	return newFuncTool(name, description, schema, fn, opts)
}

// MustFunc is like NewFunc but panics on error. It is meant for tools
// defined at program start.
func MustFunc[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...Option) *FuncTool[In, Out] {
	t, err := NewFunc(name, description, fn, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

// NewFuncWithSchema builds a typed tool whose input schema is written by
// hand. The arguments are validated against schema and then decoded into
// In, which may be any type JSON decodes into (a struct, a map, ...);
// keeping the two consistent is the caller's part.
func NewFuncWithSchema[In, Out any](name, description string, schema json.RawMessage, fn func(context.Context, In) (Out, error), opts ...Option) (*FuncTool[In, Out], error) {
	if len(schema) == 0 {
		return nil, fmt.Errorf("tool %q: %w: empty schema", name, ErrInvalidSchema)
	}
	return newFuncTool(name, description, schema, fn, opts)
}

func newFuncTool[In, Out any](name, description string, schema json.RawMessage, fn func(context.Context, In) (Out, error), opts []Option) (*FuncTool[In, Out], error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: tool %q has a nil function", ErrInvalidTool, name)
	}
	c, err := newCore(name, description, schema, opts)
	if err != nil {
		return nil, err
	}
	t := &FuncTool[In, Out]{core: c, plan: c.argumentPlan(reflect.TypeFor[In]()), fn: fn, onePart: onePartOut[Out](), text: reflect.TypeFor[Out]() == reflect.TypeFor[string]()}
	t.bind(t)
	return t, nil
}

// Call runs the tool: it coerces, validates and decodes args and calls the
// function. Invalid arguments give an error result (with a nil error) and
// the function does not run. Executors use Invoke instead, which runs the
// same pipeline once and adds error, panic and progress handling.
func (t *FuncTool[In, Out]) Call(ctx context.Context, callID string, args json.RawMessage) (Result, error) {
	if in, ok := arguments.Fast[In](t.plan, args); ok {
		return t.callDecoded(ctx, callID, in)
	}
	a, aerr := runArguments(t.def.Name, args, t.schema, t.cfg.prepare, false, true)
	if aerr != nil {
		return argumentResult(aerr), nil
	}
	return t.callParsed(ctx, callID, a.Value, args)
}

// callFast is callDecoded on arguments it decodes itself, without the call
// ID check: Invoke's ctx carries the ID. It runs the function itself rather
// than through another call, every call of a typed tool taking this path.
func (t *FuncTool[In, Out]) callFast(ctx context.Context, args json.RawMessage, shared bool) (Result, bool, error) {
	in, ok := arguments.FastShared[In](t.plan, args, shared)
	if !ok {
		return Result{}, false, nil
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return returnedResult(out), true, err
	}
	return toResultIn(out, callctx.TakePart(ctx)), true, nil
}

// callText is callFast for a tool whose output is a string (see
// textCaller); it returns the string.
func (t *FuncTool[In, Out]) callText(ctx context.Context, args json.RawMessage, shared bool) (string, bool, error) {
	if !t.text {
		return "", false, nil
	}
	in, ok := arguments.FastShared[In](t.plan, args, shared)
	if !ok {
		return "", false, nil
	}
	out, err := t.fn(ctx, in)
	return *(*string)(unsafe.Pointer(&out)), true, err // Out is string
}

// textOut reports whether Out is string.
func (t *FuncTool[In, Out]) textOut() bool { return t.text }

func (t *FuncTool[In, Out]) self() Tool { return t }

func (t *FuncTool[In, Out]) resultsOnePart() bool { return t.onePart }

func (t *FuncTool[In, Out]) callParsed(ctx context.Context, callID string, args any, received json.RawMessage) (Result, error) {
	in, err := arguments.Value[In](t.plan, args)
	if err != nil {
		return argumentResult(argumentError(t.def.Name, received, err)), nil
	}
	return t.callDecoded(ctx, callID, in)
}

// callDecoded runs the function with arguments that passed the pipeline.
func (t *FuncTool[In, Out]) callDecoded(ctx context.Context, callID string, in In) (Result, error) {
	if CallID(ctx) != callID {
		ctx = WithCallID(ctx, callID)
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return returnedResult(out), err
	}
	return toResult(out), nil
}

// returnedResult is the result a typed function returned along with an
// error, when its output is a Result: Invoke keeps its Details and Metadata
// in the error result.
func returnedResult[Out any](out Out) Result {
	switch o := any(out).(type) {
	case Result:
		return o
	case *Result:
		if o != nil {
			return *o
		}
	}
	return Result{}
}

// toResult converts a typed function's output into a result.
func toResult[Out any](out Out) Result { return toResultIn(out, nil) }

// toResultIn is toResult with slot, when not nil, as the storage of a
// result of one part (see newFrames).
func toResultIn[Out any](out Out, slot *model.Part) Result {
	switch o := any(out).(type) {
	case nil:
		return Result{Status: StatusSuccess}
	case Result:
		return o
	case *Result:
		if o == nil {
			return Result{Status: StatusSuccess}
		}
		return *o
	case string:
		return Result{Content: onePart(slot, model.TextPart(o)), Status: StatusSuccess}
	case model.Part:
		return Result{Content: onePart(slot, o), Status: StatusSuccess}
	case []model.Part:
		return Parts(o...)
	case json.RawMessage:
		if !json.Valid(o) {
			return ErrorResult(CodeToolError, fmt.Errorf("tool: result is not valid JSON"))
		}
		return Result{Content: onePart(slot, model.JSONPart(o)), Status: StatusSuccess}
	}
	return jsonResult(any(out), slot)
}

// onePart returns content holding p alone: in slot when there is one,
// else in a slice of its own. Content in a slot has no room to grow, so
// that an append copies it.
func onePart(slot *model.Part, p model.Part) []model.Part {
	if slot == nil {
		return []model.Part{p}
	}
	*slot = p
	return unsafe.Slice(slot, 1)
}

// onePartOut reports whether a typed function's output of type Out
// becomes a result of one part (see toResultIn).
func onePartOut[Out any]() bool {
	switch any(*new(Out)).(type) {
	case Result, *Result, []model.Part:
		return false
	}
	t := reflect.TypeFor[Out]()
	return t != reflect.TypeFor[any]() && t.Kind() != reflect.Interface
}

// CallFunc runs a tool whose arguments stay raw JSON.
type CallFunc func(ctx context.Context, callID string, args json.RawMessage) (Result, error)

// RawTool is a tool whose schema is written by hand and whose function
// receives the arguments as JSON. Invoke still repairs, prepares, coerces
// and validates them first; the function receives the result as JSON text.
type RawTool struct {
	core
	fn CallFunc
}

// New builds a tool from a hand-written definition (name, description,
// input schema and optional output schema) and a function that receives
// the arguments as JSON. An empty input schema means an object with no
// properties.
func New(def model.ToolDefinition, fn CallFunc, opts ...Option) (*RawTool, error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: tool %q has a nil function", ErrInvalidTool, def.Name)
	}
	if len(def.OutputSchema) > 0 {
		opts = append([]Option{WithOutputSchema(def.OutputSchema)}, opts...)
	}
	c, err := newCore(def.Name, def.Description, def.InputSchema, opts)
	if err != nil {
		return nil, err
	}
	t := &RawTool{core: c, fn: fn}
	t.bind(t)
	return t, nil
}

// Call runs the tool's function with args unchanged. Invoke validates the
// arguments before it calls Call.
func (t *RawTool) Call(ctx context.Context, callID string, args json.RawMessage) (Result, error) {
	if CallID(ctx) != callID {
		ctx = WithCallID(ctx, callID)
	}
	return t.fn(ctx, callID, args)
}

// Declaration is a tool that the framework never runs: the model sees its
// definition and the caller executes its calls (a client application, a
// browser, an upstream service) and answers them with tool messages.
type Declaration struct {
	core
}

// NewDeclaration builds a declaration-only tool. Its input schema must
// compile; an empty one means an object with no properties.
func NewDeclaration(def model.ToolDefinition) (*Declaration, error) {
	var opts []Option
	if len(def.OutputSchema) > 0 {
		opts = append(opts, WithOutputSchema(def.OutputSchema))
	}
	c, err := newCore(def.Name, def.Description, def.InputSchema, opts)
	if err != nil {
		return nil, err
	}
	d := &Declaration{core: c}
	d.bind(d)
	return d, nil
}

// DeclarationOnly reports true: the caller executes this tool.
func (d *Declaration) DeclarationOnly() bool { return true }

// Call refuses to run: it returns an error result with ErrorCode
// CodeDeclarationOnly.
func (d *Declaration) Call(context.Context, string, json.RawMessage) (Result, error) {
	return ErrorResult(CodeDeclarationOnly, fmt.Errorf("%w: tool %q", ErrDeclarationOnly, d.def.Name)), nil
}
