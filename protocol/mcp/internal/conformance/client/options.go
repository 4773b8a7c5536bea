package main

import (
	"strings"

	"github.com/trellis-go/trellis/protocol/mcp"
)

// options returns the toolset's options for a scenario.
func options(scenario string) []mcp.Option {
	opts := []mcp.Option{mcp.WithClientInfo("trellis-conformance-client", "v0")}
	if strings.HasPrefix(scenario, "auth/") {
		// Without OAuth a refused handshake will not succeed on a retry:
		// fail at once rather than at the suite's timeout.
		opts = append(opts, mcp.WithReconnect(0))
	}
	return opts
}
