//go:build !unix

package mcp

import "os"

// processAlive reports whether the process pid exists: outside unix,
// whether a handle on it can still be opened.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}

// killProcess kills the process pid at once.
func killProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	defer p.Release()
	return p.Kill()
}
