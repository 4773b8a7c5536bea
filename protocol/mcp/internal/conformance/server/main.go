// Command server is a Trellis MCP server exposing what the scenarios of the
// MCP conformance suite ask of a server, over streamable HTTP on a loopback
// address. It prints the endpoint's URL as its first line of output and
// serves until it is interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/protocol/mcp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the loopback address to listen on")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "conformance server:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv, err := newServer(ctx, port)
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: http.NewServeMux(), ReadHeaderTimeout: 10 * time.Second}
	hs.Handler.(*http.ServeMux).Handle("/mcp", srv.Handler(&sdk.StreamableHTTPOptions{
		// Stored events let a client resume a stream (server-sse-polling).
		EventStore: sdk.NewMemoryEventStore(nil),
	}))
	fmt.Printf("http://127.0.0.1:%d/mcp\n", port)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Warn("shutdown", "err", err)
	}
	return nil
}

// newServer builds the MCP server: the scenarios' tools, resources,
// prompts and completions, and browser
// origins of this loopback port allowed (dns-rebinding-protection expects
// requests from the server's own localhost origin to be served).
func newServer(ctx context.Context, port int) (*mcp.Server, error) {
	set, err := toolset()
	if err != nil {
		return nil, err
	}
	return mcp.NewServer(ctx, set, append(extras(),
		mcp.WithImplementation("trellis-conformance-server", "v0"),
		mcp.WithAllowedOrigins(
			fmt.Sprintf("http://127.0.0.1:%d", port),
			fmt.Sprintf("http://localhost:%d", port),
		),
	)...)
}
