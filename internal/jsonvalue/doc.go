// Package jsonvalue encodes values a run records (states, node outputs,
// event payloads) as JSON without failing the run: a value that does not
// encode is recorded as a JSON string saying so.
package jsonvalue
