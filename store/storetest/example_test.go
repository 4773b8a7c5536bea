package storetest_test

import (
	"testing"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/memory"
	"github.com/trellis-go/trellis/store/storetest"
)

// A backend proves it keeps the store.Store contract by running the suite
// from a test, with a new store for every subtest.
func ExampleRun() {
	_ = func(t *testing.T) { // func TestConformance(t *testing.T)
		storetest.Run(t, func(t *testing.T, opts ...store.Option) store.Store {
			s := memory.New(opts...)
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	}
}
