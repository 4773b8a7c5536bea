// Package callroom is the storage a ToolsNode lends the executor it runs a
// batch with: room for the batch's results, taken from a pool and given
// back once the node has read them into tool messages, and, for a single
// call, the frame that holds the call's context (see internal/callctx), which
// comes in the same allocation as the node's run context
// (internal/runctx.Working).
//
// The loan travels in the context, so that Execute stays the one contract
// of executor.Executor: the node lends the storage to the executor it
// calls (Room.Lend), and that executor, and no other, takes it (Take) —
// once, whatever else reads the context: a wrapper executor, or a tool
// that runs a batch of its own with the same executor, allocates its own
// as before. Executors written outside the module never see it.
package callroom
