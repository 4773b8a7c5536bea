// Command devserver runs a Temporal server for the integration tests of
// module github.com/trellis-go/trellis/temporal.
//
// It is the server's own test server (package temporaltest of
// go.temporal.io/server): every service in one process, in-memory
// persistence, a frontend on 127.0.0.1 at a port the system chooses, and
// one namespace registered at start. When the server is ready, devserver
// writes one line to its standard output,
//
//	ready <host:port> <namespace>
//
// and runs until its standard input is closed (its parent exited) or it
// receives SIGINT or SIGTERM.
//
// It is a module of its own because go.temporal.io/server v1.32.1 does not
// build with the go.temporal.io/api that module temporal's SDK requires:
// the tests talk to this server over gRPC and share no code with it. It is
// built once and cached (see .ci/run); the tests never build it.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/temporaltest"
)

func main() {
	// NewServer panics when the server cannot start; the panic's message
	// reaches the parent through standard error.
	ts := temporaltest.NewServer()
	defer ts.Stop()

	fmt.Printf("ready %s %s\n", ts.GetFrontendHostPort(), ts.GetDefaultNamespace())

	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
}
