package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// Policy is an exponential backoff with jitter.
type Policy struct {
	// Initial is the wait before the first retry.
	Initial time.Duration
	// Factor multiplies each wait for the next one; below 1 (or NaN) is
	// read as 1.
	Factor float64
	// Max caps each wait, and the wait asked for that Next accepts. Zero
	// or less is no cap.
	Max time.Duration
	// Jitter is how much of each wait is random, from 0 (exact waits) to
	// 1; it is clamped to that range.
	Jitter float64
}

// Wait returns the wait before retry n, counted from 0: Initial·Factor^n,
// capped at Max, with jitter.
func (p Policy) Wait(n int) time.Duration {
	if p.Initial <= 0 {
		return 0
	}
	f := p.Factor
	if math.IsNaN(f) || f < 1 {
		f = 1
	}
	w := float64(p.Initial) * math.Pow(f, float64(max(n, 0)))
	if p.Max > 0 && w > float64(p.Max) {
		w = float64(p.Max)
	}
	d := time.Duration(math.MaxInt64) // float64(MaxInt64) rounds up, past it
	if w < float64(math.MaxInt64) {
		d = time.Duration(w)
	}
	return Jitter(d, p.Jitter)
}

// Next returns the wait before retry n: the wait the other side asked for
// when asked is positive, else Wait(n). It reports false when the asked
// wait is longer than Max: the caller should stop retrying then, rather
// than wait longer than it allows or sooner than it was asked to.
func (p Policy) Next(n int, asked time.Duration) (time.Duration, bool) {
	if asked > 0 {
		if p.Max > 0 && asked > p.Max {
			return 0, false
		}
		return asked, true
	}
	return p.Wait(n), true
}

// Jitter draws a wait uniformly from [d·(1−j), d], so that the retries of
// callers that failed together spread out. j is clamped to [0, 1]; 0 (or
// NaN) returns d.
func Jitter(d time.Duration, j float64) time.Duration {
	if math.IsNaN(j) || j <= 0 || d <= 0 {
		return d
	}
	j = min(j, 1)
	low := float64(d) * (1 - j)
	return time.Duration(low + rand.Float64()*(float64(d)-low))
}
