// Command custom-middleware shows how to write executor middleware of your
// own and compose it with the standard middleware: a call budget per tool
// (a middleware with state), an argument normalizer (a middleware that
// rewrites the request), and an audit trail (a middleware written with
// executor.Intercept), around the permission and timeout middleware of
// package middleware, in a parallel executor. The tool calls a model would
// make are made directly, so it needs no model.
//
//	go run ./examples/custom-middleware
package main
