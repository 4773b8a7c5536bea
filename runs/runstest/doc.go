// Package runstest is the conformance suite of the runs layer: one set of
// tests that every backend of package runs passes (runs/postgres and
// runs/sqlite run it from their own tests), covering runs to their end,
// input written through reducers, interrupts and resumes, each busy-thread
// strategy, cancellation from another Manager, resumable streams, owner
// scoping, thread search, delayed and scheduled runs, the hand-back of a
// worker that shuts down, and the fencing of a worker whose lease was
// taken over.
package runstest
