//go:build linux

package shell

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"syscall"
)

// sweep signals every process, other than this one, whose environment
// carries tag in the variable markerVar: processes a command started that
// left its process group (setsid, a daemon's double fork) and that a
// signal to the group does not reach. It sends SIGKILL when hard is set,
// SIGTERM otherwise, and returns those of the processes it signalled that
// were not in the process group group (which the signals to the group
// reach anyway). A process that removed the variable from its environment
// is not found.
func sweep(tag string, group int, hard bool) []int {
	if tag == "" {
		return nil
	}
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	self := os.Getpid()
	var signalled, outside []int
	// A process may start others while it is being killed: scan again
	// until a scan finds no process it has not signalled already.
	for range 10 {
		fresh := false
		for _, pid := range tagged(tag, self) {
			if !slices.Contains(signalled, pid) {
				signalled, fresh = append(signalled, pid), true
				if pg, err := syscall.Getpgid(pid); err == nil && pg != group {
					outside = append(outside, pid)
				}
				_ = syscall.Kill(pid, sig)
			}
		}
		if !fresh || !hard {
			break
		}
	}
	return outside
}

// tagged returns the processes other than self whose environment carries
// tag. Processes whose environment cannot be read (another user's, or
// one that has just ended) are left out.
func tagged(tag string, self int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	var pids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err == nil && hasTag(env, tag) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hasTag reports whether env, a process's environment as /proc shows it
// (NUL-separated KEY=value entries), gives markerVar a value that lists
// tag.
func hasTag(env []byte, tag string) bool {
	prefix := []byte(markerVar + "=")
	for entry := range bytes.SplitSeq(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(entry, prefix); ok {
			for _, f := range bytes.Fields(v) {
				if string(f) == tag {
					return true
				}
			}
		}
	}
	return false
}
