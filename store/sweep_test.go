package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/store"
)

// countingStore counts sweeps and fails the first. SweepEvery calls
// nothing else: the embedded Store is nil.
type countingStore struct {
	store.Store
	sweeps atomic.Int32
}

func (c *countingStore) Sweep(context.Context) (int, error) {
	if c.sweeps.Add(1) == 1 {
		return 0, errors.New("first sweep fails")
	}
	return 0, nil
}

func TestSweepEveryKeepsSweepingAfterAnErrorUntilCanceled(t *testing.T) {
	s := &countingStore{}
	ctx, cancel := context.WithCancel(t.Context())
	var failures atomic.Int32
	done := make(chan error, 1)
	go func() { done <- store.SweepEvery(ctx, s, time.Millisecond, func(error) { failures.Add(1) }) }()
	require.Eventually(t, func() bool { return s.sweeps.Load() >= 3 }, 10*time.Second, time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("SweepEvery did not return after cancel")
	}
	assert.Equal(t, int32(1), failures.Load())
}
