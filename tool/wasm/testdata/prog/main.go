//go:build wasip1

// Command prog is the guest program of the package's tests, built with
// GOOS=wasip1 GOARCH=wasm. Its first argument selects what it does; the
// call's JSON arguments arrive on standard input.
package main

import (
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// calls counts the runs of this instance: it must always be 1.
var calls int

func main() {
	calls++
	if len(os.Args) < 2 {
		fail("no mode")
	}
	arg := func(i int) string {
		if len(os.Args) <= i {
			fail("missing argument")
		}
		return os.Args[i]
	}
	switch os.Args[1] {
	case "echo":
		b, _ := io.ReadAll(os.Stdin)
		os.Stdout.Write(b)
	case "text":
		os.Stdout.WriteString("plain text")
	case "args":
		os.Stdout.WriteString(strings.Join(os.Args, "\n"))
	case "env":
		os.Stdout.WriteString(strings.Join(os.Environ(), "\n"))
	case "calls":
		os.Stdout.WriteString(strconv.Itoa(calls))
	case "exit":
		code, _ := strconv.Atoi(arg(2))
		os.Stdout.WriteString("partial")
		os.Stderr.WriteString("something went wrong\n")
		os.Exit(code)
	case "panic":
		panic("boom")
	case "spin":
		for {
			calls++
		}
	case "sleep":
		time.Sleep(time.Hour)
	case "alloc":
		mib, _ := strconv.Atoi(arg(2))
		b := make([]byte, mib<<20)
		for i := range b {
			b[i] = byte(i)
		}
		os.Stdout.WriteString(strconv.Itoa(len(b)))
	case "flood":
		n, _ := strconv.Atoi(arg(2))
		line := []byte(strings.Repeat("x", 99) + "\n")
		for i := 0; i < n; i++ {
			os.Stdout.Write(line)
		}
	case "read":
		b, err := os.ReadFile(arg(2))
		if err != nil {
			fail(err.Error())
		}
		os.Stdout.Write(b)
	case "write":
		b, _ := io.ReadAll(os.Stdin)
		if err := os.WriteFile(arg(2), b, 0o644); err != nil {
			fail(err.Error())
		}
		os.Stdout.WriteString("written")
	case "ls":
		entries, err := os.ReadDir(arg(2))
		if err != nil {
			fail(err.Error())
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		os.Stdout.WriteString(strings.Join(names, "\n"))
	case "symlink":
		if err := os.Symlink(arg(2), arg(3)); err != nil {
			fail(err.Error())
		}
		os.Stdout.WriteString("linked")
	case "remove":
		if err := os.Remove(arg(2)); err != nil {
			fail(err.Error())
		}
		os.Stdout.WriteString("removed")
	case "time":
		os.Stdout.WriteString(strconv.FormatInt(time.Now().UnixNano(), 10) + " " + strconv.FormatUint(rand.Uint64(), 10))
	default:
		fail("unknown mode " + os.Args[1])
	}
}

func fail(msg string) {
	os.Stderr.WriteString(msg + "\n")
	os.Exit(1)
}
