package savertest_test

import (
	"testing"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/state/savertest"
)

// A store proves it keeps the state.Saver contract by running the suite from
// a test, with a fresh, empty store for every subtest.
func ExampleRun() {
	_ = func(t *testing.T) { // func TestConformance(t *testing.T)
		savertest.Run(t, func(t *testing.T) state.Saver {
			return memory.New()
		})
	}
}
