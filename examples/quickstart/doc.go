// Command quickstart builds a small graph — a writer, two reviewers that run
// in parallel, and an editor that loops until the reviewers approve — and
// streams its run as a live trace.
//
//	go run ./examples/quickstart
package main
