// Command client is a Trellis MCP client the MCP conformance suite drives:
// the suite starts a test server for a scenario and runs this program with
// the server's URL as its last argument (and the scenario's name in
// MCP_CONFORMANCE_SCENARIO). The client connects as a Trellis toolset
// does, lists the server's tools and calls each of them, then leaves; it
// exits with status 1 when any step fails.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: client <server URL>")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		os.Exit(1)
	}
}

// arguments are those the client passes to the tools the suite's test
// servers list; other tools get none.
var arguments = map[string]string{
	"add_numbers": `{"a":5,"b":3}`,
}

func run(ctx context.Context, url, scenario string) error {
	opts, err := options(scenario)
	if err != nil {
		return err
	}
	ts, err := mcp.New(mcp.Config{Name: "conformance", URL: url}, opts...)
	if err != nil {
		return err
	}
	defer ts.Close()
	if err := ts.Init(ctx); err != nil {
		return err
	}
	tools, err := ts.Tools(ctx)
	if err != nil {
		return err
	}
	for _, t := range tools {
		name := t.Definition().Name
		args := arguments[name]
		if args == "" {
			args = "{}"
		}
		res, err := t.Call(tool.WithCallID(ctx, "conformance"), "conformance", json.RawMessage(args))
		if err != nil {
			return fmt.Errorf("calling %s: %w", name, err)
		}
		if res.IsError {
			return fmt.Errorf("calling %s: %s", name, res.Text())
		}
		fmt.Printf("%s: %s\n", name, res.Text())
	}
	return nil
}
