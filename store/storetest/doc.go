// Package storetest is a conformance suite for store.Store backends.
//
// A backend proves it keeps the contract by running the suite from one of
// its own tests, with a new, empty store for every subtest built with the
// options the suite passes (a clock, an embedder, an exact limit):
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, opts ...store.Option) store.Store {
//			s := mystore.New(opts...)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite covers round trips and versions, not-found, invalid-argument
// and conflict errors, namespaces and their prefixes, atomic batches,
// conditional writes racing, filters (equality and ranges on numbers and
// strings, fields missing or of another type, nested fields,
// paging, order), namespace listing, expiry and sweeping, search by
// meaning both exact and through the approximate index (which must see
// writes made after it was built), isolation from callers' mutations,
// cancellation and closing.
//
// Embedder is the deterministic embedder the suite uses; tests of other
// packages may use it too.
package storetest
