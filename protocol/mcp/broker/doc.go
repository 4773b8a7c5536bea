// Package broker gives a model on-demand access to the tools of MCP servers
// through four tools, instead of listing every remote tool up front:
// mcp_list_servers, mcp_list_tools, mcp_describe_tools and mcp_call_tool.
//
// It suits large or long-tail tool surfaces: the model lists the servers,
// lists one server's tools by short description, asks for the schemas of the
// few it needs, and calls one. Tools the model uses on every turn are better
// served directly by an mcp.Toolset, whose tools the model sees with their
// schemas and which permission policies judge by their own metadata.
//
// Servers are named in the broker's configuration (mcp.Config values, over
// any transport), or given as ad-hoc streamable HTTP URLs that match the
// broker's allow-list (WithAllowedURLs); any other URL gets an error result
// that says why it was refused, and so does a redirect to one. WithPolicy applies a permission policy to
// the remote tool a call targets, with that tool's metadata.
package broker
