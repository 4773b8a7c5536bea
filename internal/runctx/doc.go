// Package runctx holds the context values through which tools see the run
// that calls them: its state and its conversation. Package tool exports
// them (tool.WithRun, tool.RunState, tool.Conversation); the nodes use this
// package directly to make a run's context and their own working copy of
// the state in one allocation.
package runctx
