//go:build !unix

package wasm_test

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on this platform") }
