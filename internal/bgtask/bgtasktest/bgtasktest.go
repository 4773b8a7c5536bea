package bgtasktest

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// blockedRead is what a goroutine's stack shows while a task_output call
// waits for its task: parked in a select inside bgtask's output.
const blockedRead = "/internal/bgtask.(*Manager[...]).output("

// WaitBlockedRead waits, for up to ten seconds, until a task_output call
// waits for its task to end, and fails t if none does.
func WaitBlockedRead(t testing.TB) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, " [select") && strings.Contains(g, blockedRead) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no task_output call waits for its task")
		}
	}
}
