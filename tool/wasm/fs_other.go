//go:build !unix

package wasm

// openNonblock is the flag that keeps an open from waiting for a peer;
// there is no such wait to prevent here.
const openNonblock = 0
