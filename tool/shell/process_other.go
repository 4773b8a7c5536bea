//go:build !unix

package shell

import (
	"os"
	"os/exec"
)

// groups reports that there are no process groups here: only the shell is
// killed.
const groups = false

// defaultShell reports no default: outside unix, New needs WithShell.
func defaultShell() (string, []string) { return "", nil }

// isolate does nothing where process groups are not available.
func isolate(*exec.Cmd) {}

// interrupt kills the shell itself: without process groups, the processes
// it started are not reached, and there is no gentler signal to send.
func interrupt(cmd *exec.Cmd, _ bool) error { return cmd.Process.Kill() }

// killGroup does nothing where process groups are not available.
func killGroup(int) bool { return false }

// signalOf reports no signal: processes end with an exit code here.
func signalOf(*os.ProcessState) string { return "" }
