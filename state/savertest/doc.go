// Package savertest is a conformance suite for checkpoint stores.
//
// A store that implements state.Saver proves it keeps the contract by
// running the suite from one of its own tests:
//
//	func TestConformance(t *testing.T) {
//		savertest.Run(t, func(t *testing.T) state.Saver {
//			s := mystore.New()
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite covers round trips of every field, the latest checkpoint,
// not-found and conflict errors and what they name, pending writes (upsert by
// task ID, order, atomicity), namespaces, history listing with Limit and
// Before, thread deletion, pruning, concurrent use, large and binary
// payloads, isolation from callers' mutations, and context cancellation.
//
// Beyond the letter of state.Saver it also expects what every store in this
// module does: a zero CreatedAt is set to the time of the Put; a Put without
// a thread ID or checkpoint ID, a write without a task ID, a negative List
// limit and a Prune keeping fewer than one checkpoint are errors; and a List
// Before a checkpoint that does not exist is an error wrapping
// state.ErrNotFound.
package savertest
