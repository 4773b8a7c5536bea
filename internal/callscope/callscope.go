// Package callscope lets a package learn which tool call its caller runs
// in without importing package tool: the graph engine, below tool in the
// layers, numbers the interrupts of each invocation of a call apart.
//
// A context key whose type has the method of Key is answered by the
// innermost tool call's context (package tool's call context): its Value
// is what ScopeOfCall returns for the call's ID and a slot that belongs to
// that invocation of the call (a retry is a new invocation, with a slot of
// its own, empty). The key's package needs no import of this one; it only
// has the method.
package callscope

import "sync/atomic"

// Key is a context key that the innermost tool call answers (see the
// package documentation).
type Key interface {
	ScopeOfCall(callID string, slot *atomic.Value) any
}
