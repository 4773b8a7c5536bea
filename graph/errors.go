package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Typed errors below wrap or match them for errors.Is.
var (
	// ErrInvalidGraph is matched by every error Compile returns.
	ErrInvalidGraph = errors.New("invalid graph")
	// ErrStepLimit is matched by *StepLimitError.
	ErrStepLimit = errors.New("superstep limit reached")
	// ErrNodePanic is matched by a *NodeError that recovered a panic.
	ErrNodePanic = errors.New("node panicked")
	// ErrNodeTimeout is matched by a *NodeError whose attempt exceeded the
	// node's own timeout (not the run's deadline).
	ErrNodeTimeout = errors.New("node timed out")
	// ErrRoute is matched by *RouteError.
	ErrRoute = errors.New("invalid route")
)

// CompileError lists everything Compile found wrong with a graph.
type CompileError struct {
	// Graph is the graph's name.
	Graph string
	// Problems are the individual findings, each naming what is wrong.
	Problems []string
}

// Error returns the error's message.
func (e *CompileError) Error() string {
	name := e.Graph
	if name == "" {
		name = "graph"
	}
	if len(e.Problems) == 1 {
		return fmt.Sprintf("%s: %s", name, e.Problems[0])
	}
	return fmt.Sprintf("%s: %d problems:\n  - %s", name, len(e.Problems), strings.Join(e.Problems, "\n  - "))
}

// Is reports whether target is ErrInvalidGraph.
func (e *CompileError) Is(target error) bool { return target == ErrInvalidGraph }

// StepLimitError reports a run that still had nodes to run after its
// superstep limit.
type StepLimitError struct {
	// Limit is the superstep limit in force.
	Limit int
	// Nodes are the nodes of the last superstep that ran.
	Nodes []string
}

// Error returns the error's message.
func (e *StepLimitError) Error() string {
	return fmt.Sprintf("graph: superstep limit of %d reached; last superstep ran %s", e.Limit, strings.Join(quote(e.Nodes), ", "))
}

// Is reports whether target is ErrStepLimit.
func (e *StepLimitError) Is(target error) bool { return target == ErrStepLimit }

// NodeError is a node's failure: the error it returned, a panic it raised,
// or its timeout. It carries the node's name and where it ran.
type NodeError struct {
	// Node is the failing node.
	Node string
	// Path is the chain of subgraph nodes that led to the graph holding
	// Node, empty for the top-level graph.
	Path []string
	// Step is the superstep in which the node ran.
	Step int
	// Attempts is how many times the node was tried.
	Attempts int
	// Err is the node's error; for a panic, an error describing the panic value.
	Err error
	// Panic is the recovered panic value, nil if the node did not panic.
	Panic any
	// Stack is the goroutine stack at the panic, nil if the node did not panic.
	Stack []byte
}

// Error returns the error's message.
func (e *NodeError) Error() string {
	var b strings.Builder
	b.WriteString("graph: node ")
	for _, p := range e.Path {
		b.WriteString(fmt.Sprintf("%q/", p))
	}
	b.WriteString(fmt.Sprintf("%q", e.Node))
	if e.Attempts > 1 {
		b.WriteString(fmt.Sprintf(" (after %d attempts)", e.Attempts))
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }

// Is matches ErrNodePanic for a recovered panic.
func (e *NodeError) Is(target error) bool { return target == ErrNodePanic && e.Panic != nil }

// timeoutError is the error of an attempt that outlived its node's timeout.
// It matches ErrNodeTimeout and context.DeadlineExceeded whatever error the
// node returned once its context expired.
type timeoutError struct {
	after time.Duration
	err   error
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("%v after %v: %v", ErrNodeTimeout, e.after, e.err)
}

func (e *timeoutError) Unwrap() error { return e.err }

func (e *timeoutError) Is(target error) bool {
	return target == ErrNodeTimeout || target == context.DeadlineExceeded
}

// RouteError reports a route that chose a destination it had not declared,
// or a route function that failed.
type RouteError struct {
	// From is the node whose outgoing route failed (START for the entry).
	From string
	// Dest is the destination chosen.
	Dest string
	// Declared are the destinations the route declared.
	Declared []string
	// Err is set when the route function itself panicked; a panic with an
	// error wraps that error.
	Err error
}

// Error returns the error's message.
func (e *RouteError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("graph: route after %q: %v", e.From, e.Err)
	}
	return fmt.Sprintf("graph: route after %q chose %q, which is not among its declared destinations (%s)", e.From, e.Dest, strings.Join(quote(e.Declared), ", "))
}

// Is reports whether target is ErrRoute.
func (e *RouteError) Is(target error) bool { return target == ErrRoute }

// Unwrap returns the error of the route function's panic, if any.
func (e *RouteError) Unwrap() error { return e.Err }

func quote(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}
