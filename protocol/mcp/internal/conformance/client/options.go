package main

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/tool"
)

// options returns the toolset's options for a scenario: the client accepts
// every elicitation with no fields of its own, so the schema's defaults
// are what it sends (elicitation-sep1034-client-defaults), logs the
// server's messages to its standard error, and authorizes itself with
// OAuth in the auth/ scenarios.
func options(scenario string) ([]mcp.Option, error) {
	opts := []mcp.Option{
		mcp.WithClientInfo("trellis-conformance-client", "v0"),
		mcp.WithElicitation(func(context.Context, tool.ElicitRequest) (tool.ElicitResult, error) {
			return tool.ElicitResult{Action: "accept"}, nil
		}),
		mcp.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))),
	}
	if strings.HasPrefix(scenario, "auth/") {
		cfg, err := oauth(scenario)
		if err != nil {
			return nil, err
		}
		// A refused authorization will not succeed on a retry: fail at
		// once rather than at the suite's timeout.
		opts = append(opts, mcp.WithOAuth(cfg), mcp.WithReconnect(0))
	}
	return opts, nil
}
