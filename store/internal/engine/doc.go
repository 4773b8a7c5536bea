// Package engine is what the store backends share: the store.Store
// methods over a Driver, which only keeps rows. Validation, embedding,
// filtering, search by meaning (exact, or through an approximate index for
// large prefixes) and namespace listing happen here once.
package engine
