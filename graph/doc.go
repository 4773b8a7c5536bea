// Package graph is Trellis's workflow engine: directed graphs of nodes over a
// typed, shared state, run in bulk-synchronous supersteps.
//
// # State and nodes
//
// The state is a Go value, usually a struct. A node is a function that
// receives the state by value and returns the state it wants:
//
//	func(ctx context.Context, s State) (State, error)
//
// Reading and writing the state is plain Go. A node writes a field by
// assigning it; fields it does not assign are not written.
//
// # Supersteps
//
// A run proceeds in supersteps. The nodes triggered together run concurrently
// on the same snapshot of the state. At the barrier their writes are merged in
// node order (the order in which the nodes were added), never in completion
// order, so a run is deterministic whatever the timing. A field written by one
// task takes the value the task returned; a field written by several tasks is
// merged by the field's reducer (see WithReducer and package state), and two
// writes to a field without one are a *state.ConflictError naming the field
// and the nodes. The next superstep runs the nodes chosen by edges,
// conditional edges, command nodes, joins and fan-outs (Send).
//
// A superstep with one task runs it on the caller's goroutine and merges
// nothing: the sequential path costs a function call and a few checks.
//
// # Building and compiling
//
// A Builder collects nodes and edges; Compile validates the whole graph
// (unknown and unreachable nodes, a missing entry, undeclared route targets,
// subgraph state mismatches, misplaced reducers) and returns a frozen Graph
// that any number of goroutines may run at once.
//
// # Running
//
// Invoke returns the final state. Stream returns an iter.Seq2 of events:
// the state after each superstep (ModeValues), each node's writes
// (ModeUpdates), node lifecycle with durations (ModeEvents), events nodes
// emit themselves (ModeCustom, EmitCustom), model tokens (ModeMessages) and
// superstep boundaries (ModeDebug). Events of subgraphs reach the parent's
// stream with their Path.
//
// # Failure
//
// A node's error or panic becomes a *NodeError naming the node (and, for a
// panic, carrying the stack); the superstep's writes are then discarded.
// Cancelling the context stops the run within the current superstep and
// returns the context's error. A run that still has work after its superstep
// limit fails with a *StepLimitError. Nodes can have a RetryPolicy and a
// timeout.
//
// # Other executors
//
// A Stepper lets an executor of its own run a graph one superstep at a
// time: it plans each superstep's tasks and merges their outputs, while
// the executor runs each task with RunTask wherever it likes, receiving
// the task's events through TaskScope.Events. Stepper.Save and
// RestoreStepper move a run from one Stepper to another between
// supersteps. Module github.com/trellis-go/trellis/temporal runs graphs as
// Temporal workflows this way.
package graph
