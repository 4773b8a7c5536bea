// Package langchaingo adapts tools between Trellis and langchaingo
// (github.com/tmc/langchaingo/tools), whose tools take and return one
// string.
//
// FromTool makes a langchaingo tool — a calculator, a search API client, a
// database query tool — a Trellis tool: the model gives it one string
// argument, "input", and the tool's answer is the call's text. ToTool goes
// the other way, so that a Trellis tool (a typed function tool, an MCP
// tool) serves a langchaingo agent: the agent's input string is read as the
// tool's JSON arguments, or, for a tool that takes one string argument, as
// that argument.
//
// The package is a module of its own, so that applications that do not
// use langchaingo do not depend on it.
package langchaingo
