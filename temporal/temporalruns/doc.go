// Package temporalruns implements the runs layer's Client
// (github.com/trellis-go/trellis/runs) over a Temporal client, so that code
// written against runs.Client starts, follows, answers and cancels graph
// runs that execute as Temporal workflows (package temporal) instead of on
// River.
//
//	m := temporalruns.New(c, "agents")             // c: a client.Client
//	var runner runs.Client = m
//	run, err := runner.Start(ctx, runs.Request{Graph: "agent", Input: input})
//	for ev, err := range runner.Stream(ctx, run.ID, 0) { ... }
//
// A graph is addressed by the name its temporal.Runner registered its
// workflow under; workers run the workflows, and the Manager only talks to
// the server. It is a package of its own so that a worker, which imports
// package temporal, compiles nothing of the runs layer.
//
// # What maps, and what does not
//
// A run is a workflow execution whose ID is the thread's: Run.ID and
// Run.Thread are the same, and a run continued as new keeps its ID. An
// interrupted run does not end: its workflow waits, Get and Wait report it
// StatusInterrupted, and Start with Request.Resume answers it (the update
// temporal.UpdateResume), after which the same run goes on. Stream reads
// the workflow's events with the query temporal.QueryEvents; a stream of a
// run that waits for answers ends with a KindRunEnd event of status
// interrupted that the workflow did not record (its Seq is the one of the
// event before it), and a stream resumed after it goes on with the run.
//
// What a Manager does and Temporal cannot do as it does fails with an
// *UnsupportedError, which matches errors.ErrUnsupported: a thread's second
// run (a Manager continues the thread's state; a workflow ID's next
// execution would start afresh), busy-thread strategies other than
// StrategyReject, IfNotExistsReject, StepLimit and CancelRollback.
// ThreadState reads the checkpoints the workflow holds (the query
// temporal.QueryHistory), at the latest or at a given checkpoint; History
// and Fork, which runs.Client does not have, are the counterparts of
// runs.Manager's History and ForkThread (Fork starts a new thread: a
// workflow ID holds one run). A missing run or thread matches
// runs.ErrNotFound, a busy thread runs.ErrThreadBusy, an answer to an
// interrupt that is not pending runs.ErrInvalid and temporal.ErrNotPending.
package temporalruns
