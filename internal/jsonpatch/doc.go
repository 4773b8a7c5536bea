// Package jsonpatch computes and applies JSON Patches (RFC 6902) between
// JSON documents decoded by encoding/json (nil, bool, float64 or
// json.Number, string, []any, map[string]any): the state deltas of the
// AG-UI handler.
package jsonpatch
