//go:build unix

package shell

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// groups reports that a command runs in a process group of its own, which
// is killed with it.
const groups = true

// defaultShell is the shell commands run with unless WithShell says
// otherwise.
func defaultShell() (string, []string) { return "/bin/sh", []string{"-c"} }

// isolate starts cmd in a process group of its own, led by the shell, so
// that every process the command starts (pipelines, jobs sent to the
// background with &) can be signalled at once.
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// interrupt asks cmd's process group to end: SIGTERM, or SIGKILL when
// there is no grace period to wait through. It reports os.ErrProcessDone
// when the group is gone already, as exec.Cmd.Cancel expects.
func interrupt(cmd *exec.Cmd, hard bool) error {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	return signalGroup(cmd.Process.Pid, sig)
}

// killGroup kills what is left of the process group led by pid, after the
// shell that led it has been waited for: processes the command left
// running. It reports whether there were any.
func killGroup(pid int) bool {
	return signalGroup(pid, syscall.SIGKILL) == nil
}

func signalGroup(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return os.ErrProcessDone
	}
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// signalOf names the signal that ended a process, "" when it exited.
func signalOf(ps *os.ProcessState) string {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return ""
	}
	return ws.Signal().String()
}
