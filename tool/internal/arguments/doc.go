// Package arguments is the argument pipeline of package tool: what turns
// the arguments a model sent for a tool call into a value the tool's
// function takes, or into an error that lists every problem.
//
// The full pipeline runs, in order: JSON repair (Repair, when the invoker
// asks for it), parsing (Parse), a tool's PrepareArguments hook, coercion
// toward the schema (Schema.Coerce), validation (Schema.Validate) and, for
// a typed tool, decoding into its argument type. Check runs it on the
// arguments' text.
//
// A typed tool compiles a Plan (Compile) from its schema and argument
// type. Plan.Decode checks and decodes the arguments in one pass when the
// plan's one-pass reader accepts them (fastpath.go; for structs of scalar
// fields, the flat shortcut of fastflat.go), and through the full pipeline
// when not. The one-pass reader is an optimization, never a second set of
// rules: it accepts only what the full pipeline accepts unchanged and
// stores exactly what it decodes (see fastplan.go, and the tests that hold
// the two to each other). Its building is split by keyword family:
// plan_scalar.go, plan_array.go, plan_object.go and plan_bind.go.
//
// Schemas of Go types are derived by Derive, following the tag dialect
// documented in package tool.
package arguments
