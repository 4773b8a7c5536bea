package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/memory"
	"github.com/trellis-go/trellis/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts ...store.Option) store.Store {
		s := memory.New(opts...)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}
