package testserver_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// envFake makes the test binary a stand-in for the server (fakeServer):
// it says what the variable holds, then waits for its standard input to
// close.
const envFake = "TRELLIS_TESTSERVER_FAKE"

func TestMain(m *testing.M) {
	if say, ok := os.LookupEnv(envFake); ok {
		fakeServer(say)
		return
	}
	goleak.VerifyTestMain(m)
}

// fakeServer writes say (when not empty) as a line to standard output and
// exits when standard input closes, as the server does; "exit" exits at
// once instead, with status 3.
func fakeServer(say string) {
	if say == "exit" {
		os.Exit(3)
	}
	if say != "" {
		fmt.Println(say)
	}
	buf := make([]byte, 1)
	for {
		if _, err := os.Stdin.Read(buf); err != nil {
			return
		}
	}
}
