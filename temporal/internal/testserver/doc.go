// Package testserver starts the Temporal server of module temporal's
// integration tests as a child process.
//
// The server is the program of temporal/internal/devserver, a module of its
// own (it needs a go.temporal.io/api the SDK of module temporal does not
// build with). Building it takes minutes, so tests never build it: .ci/run
// builds it once into a cache keyed by its sources (see Binary), and tests
// that need it skip, with the command that builds it, when it is absent —
// or fail when the environment variable CI is "true".
package testserver
