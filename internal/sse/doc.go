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
// Written here rather than taken from a library: the reader is some
// eighty lines, and the clients need it bounded (one event's data capped,
// failing with the same error as their other stream limits) and fed by
// their own HTTP requests, while the event-stream libraries of the Go
// ecosystem come with HTTP clients and servers of their own. A fuzz target
// checks it against the format's rules, written out line by line.
package sse
