package memory_test

import (
	"testing"

	"github.com/trellis-go/trellis/state"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/state/savertest"
)

func TestConformance(t *testing.T) {
	savertest.Run(t, func(t *testing.T) state.Saver { return memory.New() })
}

func TestZeroValueConforms(t *testing.T) {
	savertest.Run(t, func(t *testing.T) state.Saver { return new(memory.Saver) })
}
