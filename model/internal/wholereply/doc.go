// Package wholereply lets the providers' streams read the answer of a
// server that ignores a request's "stream": true and sends the whole reply
// as one JSON document: Capture, the streaming request's middleware, takes
// a successful JSON reply's body for itself and leaves the client's event
// decoder an empty stream, which the provider then reads as a one-shot
// reply.
package wholereply
