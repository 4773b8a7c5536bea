// Package sse reads and writes server-sent events (the text/event-stream
// format of the HTML standard), the one reader and writer of the module:
// the A2A and AG-UI clients read streams with Reader, and the A2A server,
// the AG-UI handler and the LangGraph-compatible server write them with
// Write and Encode.
//
// Reader follows the format's parsing rules: lines end with CRLF, LF or
// CR; a leading byte order mark is skipped; comments and unknown fields
// are skipped; an event is dispatched at the blank line that ends it, and
// only when it has at least one data line. An event the stream ends
// before its blank line is incomplete and is discarded, as the format
// says, whatever server sent it.
//
// The format is small and the module needs a bounded reader (one event's
// data is capped, and the cap fails with the same error as the clients'
// other stream limits), which no library of the Go ecosystem offers
// without pulling an HTTP client of its own along; so it is written here,
// once, with a fuzz target that checks it against the format's rules.
package sse
