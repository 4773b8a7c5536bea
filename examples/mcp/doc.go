// Command mcp shows Trellis and the Model Context Protocol working both ways:
//
//  1. a Trellis toolset is served as an MCP server over streamable HTTP on
//     127.0.0.1, and an mcp.Toolset uses it as any MCP client would;
//  2. the MCP reference server (@modelcontextprotocol/server-everything) is
//     run over stdio and its tools are called as Trellis tools, when it is
//     installed (cd .ci && npm ci, or -everything PATH, or
//     TRELLIS_MCP_EVERYTHING=PATH); otherwise the step is skipped with a
//     message;
//  3. a broker gives on-demand access to both servers through four tools.
//
// It needs no network beyond 127.0.0.1 and no model: the calls a model would
// make are made directly.
//
//	go run ./examples/mcp [-everything path/to/mcp-server-everything]
package main
