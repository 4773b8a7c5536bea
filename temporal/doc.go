// Package temporal runs Trellis graphs as Temporal workflows: durable runs
// whose every superstep is recorded by a Temporal server, so that a run
// survives the loss of its workers and continues, on any worker, where it
// stopped.
//
// It is a module of its own (github.com/trellis-go/trellis/temporal), so
// that only programs that import it compile the Temporal SDK.
//
// A Runner wraps one compiled graph. Its workflow keeps the superstep loop
// (graph.Stepper): it plans each superstep, runs the superstep's tasks as
// activities — one per task, concurrently — and merges their outputs at
// the barrier as a run of the graph does (node order, reducers, conflict
// errors). Edges, conditional edges, joins, fan-outs (Send) and command
// nodes behave as in graph. The loop starts no goroutine, reads no clock
// and draws no random number, so Temporal can replay it; the graph's
// routing functions run in the workflow too and must be deterministic.
//
//	r := temporal.New("agent", g)
//	r.Register(w)                                  // w: a worker.Worker
//	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: q}, r.Name(), input)
//	var out State
//	err = run.Get(ctx, &out)
//
// # Tasks
//
// A task activity runs its node once with graph.RunTask (the node's
// timeout applies; a panic becomes an error naming the node). Temporal
// retries it by the node's graph.RetryPolicy, mapped by RetryPolicy; errors
// the policy's RetryOn refuses, panics, and every error of a node without
// a policy fail the task at once. Nodes doing long work call Heartbeat.
// A subgraph node runs its whole subgraph within its task.
//
// # Interrupts, queries, cancellation
//
// A node that calls graph.Interrupt fails its task with the pending
// interrupts; the workflow then waits for an answer to each (the signal
// SignalResume, or the update UpdateResume, which rejects an answer to an
// interrupt that is not pending) and runs the interrupted tasks again with
// the answers (the superstep's other tasks keep their outputs). Static
// interrupts (graph.InterruptBefore, InterruptAfter) pause it likewise. QueryState returns the run's Status:
// the state after the last superstep, the running nodes and the pending
// interrupts. Cancelling the workflow asks its running tasks to stop
// (they learn of it when they heartbeat) and, once they have, ends the run
// with a *temporal.CanceledError of the SDK.
//
// # Streaming
//
// QueryEvents returns a run's events after a cursor (an EventPage): the
// workflow records each node's output, the state after each superstep, the
// interrupts and the run's end; tasks publish what their nodes emit while
// they run (custom events, model tokens, nodes starting and ending: ask for
// them with WithStreamModes) through a Sink, by default SignalSink, which
// signals the events into the workflow's log. A caller polls the query;
// package temporalruns does so for runs.Client.Stream.
//
// # Checkpoints and forks
//
// The workflow keeps, in memory and rebuilt on replay, a Checkpoint for
// its input and one after each superstep: the state, the tasks due next
// and the interrupts it waited for there, under an ID ("step-N") that is
// the same on every replay. QueryHistory returns them (History and
// GetCheckpoint read them across the runs of a workflow continued as
// new), newest first as a checkpointer's history. Fork starts a new
// workflow that goes on from one of them, optionally with its state
// changed.
//
// # Long runs
//
// WithContinueAsNew makes the workflow continue as new every n supersteps,
// and it does whenever Temporal suggests it, carrying a Continuation (the
// graph.Stepper's Save and the stream's numbering): the run's result is the
// same. Histories recorded before continue-as-new existed replay unchanged
// (the decision is versioned with workflow.GetVersion).
//
// Package temporalruns implements runs.Client over a Temporal client, for
// code written against the runs layer. See docs/temporal.md for when to
// choose this package or package runs.
package temporal
