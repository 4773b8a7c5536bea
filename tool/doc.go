// Package tool defines what a model can call and how one call is run.
//
// A Tool is a definition (name, description, JSON Schema of the input,
// optional output schema) and a Call that takes the call's ID and its
// arguments as raw JSON. Arguments stay JSON from the model to the tool.
// Optional interfaces add what the framework acts on: Metadata
// (MetadataProvider), an argument hook (ArgumentPreparer), system-prompt
// text (InstructionProvider), a permission rule (PermissionChecker),
// pending results (LongRunner), streaming (Streamer), and caller-executed
// declarations (DeclarationOnly).
//
// # Building tools
//
// NewFunc builds a typed tool from func(ctx, In) (Out, error): the input
// schema is derived from In, so schema and decoding never drift.
// NewFuncWithSchema takes a hand-written schema, New a hand-written
// definition and a function of raw JSON, NewStreamFunc a function that
// yields pieces, and NewDeclaration a tool the framework never runs.
//
// # The tag dialect
//
// The schema of In is derived with github.com/invopop/jsonschema:
//
//   - A field's property name is its `json` tag name, else its Go name.
//     Fields tagged json:"-" or jsonschema:"-" and unexported fields are
//     left out; the fields of embedded structs are promoted, as
//     encoding/json does.
//   - A field is required when it is not a pointer and its json tag has
//     neither omitempty nor omitzero; otherwise it is optional.
//     jsonschema:"required" makes any field required.
//   - `jsonschema:"..."` holds comma-separated keywords: description=…,
//     title=…, enum=… (repeat for each value), default=…, example=…,
//     minimum=…, maximum=…, exclusiveMinimum=…, exclusiveMaximum=…,
//     multipleOf=… (numbers), minLength=…, maxLength=…, pattern=…,
//     format=… (strings, asserted), minItems=…, maxItems=…,
//     uniqueItems=true (arrays; other keywords apply to the items), required,
//     nullable. A comma inside a value is written \,; the
//     `jsonschema_description:"…"` tag takes free text with commas, and
//     `jsonschema_extras:"key=value"` adds keywords of your own.
//   - A plain `description:"…"` tag describes a field too; a description in
//     the jsonschema tags wins over it.
//   - Go types map to JSON types: bool to boolean; every int and uint size
//     to integer; float32 and float64 to number; string to string; slices
//     and arrays to array ([]byte to a base64 string); maps to object
//     (string or integer keys); nested structs to object, inlined; pointers
//     to their element; time.Time to a date-time string; json.RawMessage
//     and any to any value.
//   - Struct objects do not allow properties they do not declare.
//   - A value may sit at most MaxSchemaDepth (32) levels below the root (a
//     struct field, a slice element and a map value each go one level
//     down); a deeper type is an error at construction. A type that
//     contains itself is emitted once under $defs and referenced with $ref;
//     every other nested type is inlined.
//   - In must be a struct or a pointer to one; anything else is an error
//     at construction, as are channels, functions, complex numbers and
//     non-empty interfaces anywhere in it, and fields promoted through an
//     embedded pointer to an unexported struct, which no decoder can
//     allocate.
//
// # The argument pipeline
//
// Invoke (or an Invoker) runs one call: per call, in this order, optional
// JSON repair (RepairJSON); the tool's PrepareArguments hook on the raw
// object; coercion toward the schema ("3" to 3 where a number is wanted,
// "true" to true, numbers to strings where a string is wanted, a JSON
// string to the array or object it holds, a null optional property
// dropped); validation with github.com/santhosh-tekuri/jsonschema/v5,
// compiled once per tool; decoding into In. A failure at any step is an
// error result listing every bad field by JSON path and the arguments
// received, and the tool's body does not run. Errors, timeouts,
// cancellation and panics become error results too, so a run never aborts
// on a tool's failure.
//
// Most calls carry arguments that are already right, and for those the
// pipeline has a fast path: a plan built once per tool from the compiled
// schema (and a typed tool's argument type) reads the JSON text in one pass,
// checks each value against its schema and stores it straight into In (for
// a struct of scalar fields, at each field's offset, with In on the stack).
// It is an optimization, not a second set of rules: it accepts only arguments
// that the steps above would accept without changing them, and then gives
// exactly what they give. Anything it does not check itself (arguments that
// need repair or coercion, a missing or unknown property, a broken
// constraint, a duplicate key, keywords such as anyOf, oneOf, $ref or
// patternProperties, a PrepareArguments hook) sends the call through the
// full pipeline, which remains the validator of record and produces the
// error results.
//
// # Results
//
// A Result carries content the model sees (text, images, JSON), details it
// does not see, Terminate (a batch ends the run only if every result sets
// it, see AllTerminate), an error flag, a Status (success, failed,
// cancelled, timeout, denied, pending) with an error code, and Actions for
// the graph (a state update, a transfer, an escalation).
//
// # Inside a call
//
// CallID returns the call's ID; RunState returns the state the ToolsNode
// put in the context; ReportProgress sends progress updates that become
// ToolUpdate events, valid only while the call runs. Streaming tools'
// pieces are forwarded as updates and merged into the final result.
// Long-running tools return PendingResult and are completed later by call
// ID (Pending).
//
// # Permission, toolsets, instructions
//
// CheckPermission and Authorize evaluate a tool's own checker and then a
// run-level Policy; deny and ask become structured results the model can
// read. They judge the arguments they are given, which must be those the
// tool runs with: Invoker.Prepare returns them (repaired, prepared,
// coerced, validated), and Invoke checks the tool's own checker on them
// and runs the tool with exactly those. Toolsets (Static, Combine, WithPrefix, Filter, Include, Exclude)
// are resolved per run by Resolve, which separates what the model sees
// (VisibleIf) from what the framework executes (ExecutableIf) and rejects
// duplicate names; a call of an unknown name gets a result suggesting the
// nearest names. CollectInstructions gathers tools' system-prompt text.
// NewSetModelResponse turns a schema into structured output for models
// without native support, and NewRetrieval makes a tool of a Retriever.
package tool
