// Package streamlimit bounds the streamed HTTP replies the clients read:
// the model providers' streams, the A2A client's and the AG-UI client's.
// Do sends a request and wraps the reply's body so that a server that
// falls silent (no byte for the idle timeout, waiting for the headers
// included) or sends an event or a whole reply past its cap fails the
// read with an *Error naming the limit, instead of holding the caller
// until its context ends or growing its memory without end. A silent
// server is cut off by canceling the request's context, the way the HTTP
// transport supports aborting a read in progress.
//
// The caps count bytes as they come off the wire, before any parser sees
// them, so that the parsers on top (the providers' SDKs among them) never
// hold more than one capped event. An event is a server-sent event: the
// lines up to the blank line that ends it, its field names and line ends
// included. A body that is not an event stream (a JSON reply) has no blank
// lines and counts as one event.
//
// internal/sse, the event-stream reader of the clients that parse one
// themselves (A2A, AG-UI), caps one event's data exactly, as their options
// promise, and reports the cap with the same *Error.
package streamlimit
