//go:build unix

package mcp

import (
	"errors"
	"os/exec"
	"syscall"
)

// isolate starts cmd in a process group of its own, so that closing the
// toolset can end the processes the server started too.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup ends what is left of the process group led by pid (processes the
// server started and left running). It is called after the server itself
// has exited and been waited for.
func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if err == nil || errors.Is(err, syscall.ESRCH) || errors.Is(err, syscall.EPERM) {
		return nil
	}
	return err
}
