//go:build unix

package mcp

import "syscall"

// processAlive reports whether the process pid exists (a process that was
// not reaped counts as existing).
func processAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// killProcess kills the process pid at once.
func killProcess(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
