package cputime_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/cputime"
)

// Work the process does shows in its CPU time.
func TestSelfGrowsWithWork(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("the platform reports no CPU time")
	}
	before, ok := cputime.Self()
	require.True(t, ok)
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i % 7
		}
		after, _ := cputime.Self()
		if after > before {
			break
		}
		require.True(t, time.Now().Before(deadline), "no CPU time counted after 10 s of work")
	}
	require.NotZero(t, x)
}
