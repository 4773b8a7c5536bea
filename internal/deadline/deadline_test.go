package deadline

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// late has a deadline but never reports it passed, like a context whose
// timer has not fired yet.
type late struct {
	context.Context
	at time.Time
}

func (c late) Deadline() (time.Time, bool) { return c.at, true }

func TestPassed(t *testing.T) {
	assert.False(t, Passed(context.Background()), "no deadline")
	assert.True(t, Passed(late{context.Background(), time.Now().Add(-time.Millisecond)}), "the timer has not fired, the deadline has passed")
	assert.False(t, Passed(late{context.Background(), time.Now().Add(time.Hour)}))
}
