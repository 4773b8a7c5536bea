//go:build unix

package wasm

import "syscall"

// openNonblock keeps the opening of a FIFO or a device from waiting for a
// peer: a host call cannot be interrupted, so a wait would outlive the
// call's time limit and hold Runtime.Close. It has no effect on regular
// files and directories, the only kinds rootFS lets a program use.
const openNonblock = syscall.O_NONBLOCK
