package backoff

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestWaitGrowsByTheFactorUpToTheCap(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Factor: 3, Max: 2 * time.Second}
	var got []time.Duration
	for n := range 5 {
		got = append(got, p.Wait(n))
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond, 2 * time.Second, 2 * time.Second}, got)
	assert.Equal(t, 100*time.Millisecond, Policy{Initial: 100 * time.Millisecond, Factor: 0.5}.Wait(3), "a factor below 1 is read as 1")
	assert.Equal(t, time.Duration(math.MaxInt64), Policy{Initial: time.Second, Factor: 10}.Wait(400), "no cap: the wait saturates")
}

func TestWaitWithJitterStaysWithinItsRange(t *testing.T) {
	p := Policy{Initial: time.Second, Factor: 2, Max: time.Minute, Jitter: 0.5}
	seen := map[time.Duration]bool{}
	for range 200 {
		w := p.Wait(1)
		assert.GreaterOrEqual(t, w, time.Second)
		assert.LessOrEqual(t, w, 2*time.Second)
		seen[w] = true
	}
	assert.Greater(t, len(seen), 1, "jitter varies the waits")
	assert.Equal(t, time.Second, Jitter(time.Second, math.NaN()))
	for range 50 {
		assert.LessOrEqual(t, Jitter(time.Second, 7), time.Second, "jitter above 1 is read as 1")
	}
}

func TestNextHonoursTheAskedWaitWithinTheCap(t *testing.T) {
	p := Policy{Initial: time.Second, Factor: 2, Max: 10 * time.Second}
	d, ok := p.Next(0, 3*time.Second)
	assert.True(t, ok)
	assert.Equal(t, 3*time.Second, d, "the asked wait, not the backoff")
	_, ok = p.Next(0, 11*time.Second)
	assert.False(t, ok, "an asked wait past the cap stops the retries")
	d, ok = p.Next(2, 0)
	assert.True(t, ok)
	assert.Equal(t, 4*time.Second, d, "without an asked wait, the backoff")
}
