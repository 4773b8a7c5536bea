package bench

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if backend := os.Getenv(workerEnv); backend != "" {
		os.Exit(runsWorker(backend))
	}
	goleak.VerifyTestMain(m)
}
