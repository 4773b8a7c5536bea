//go:build !unix

package mcp

import "os/exec"

// isolate does nothing where process groups are not available.
func isolate(*exec.Cmd) {}

// killGroup does nothing where process groups are not available: closing the
// session already waits for the server's process.
func killGroup(int) error { return nil }
