// Package model is the vocabulary Trellis speaks with language models:
// messages and their content parts, tool calls and tool definitions, and the
// Model interface that providers implement.
//
// The types are plain structs that serialize to stable JSON, so a conversation
// can live in a graph's state and in its checkpoints unchanged. Providers live
// in sub-packages (openai, anthropic, scripted); nothing in this package talks
// to the network.
package model
