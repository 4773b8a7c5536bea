// Package transcript reads a conversation the way the examples' offline
// models do: what the tools answered since the user last spoke, and what
// the user last said.
package transcript
