package graph

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/trellis-go/trellis/internal/backoff"
)

// RetryPolicy retries a failing node. The zero value of each field takes the
// default given beside it.
type RetryPolicy struct {
	// MaxAttempts is the number of tries in all, the first included (default 3).
	MaxAttempts int
	// InitialInterval is the wait before the second try (default 500ms).
	InitialInterval time.Duration
	// BackoffFactor multiplies the wait after each retry (default 2).
	BackoffFactor float64
	// MaxInterval caps the wait (default 30s).
	MaxInterval time.Duration
	// Jitter, when true, draws each wait uniformly from [wait/2, wait].
	Jitter bool
	// RetryOn reports whether an error deserves another try. By default every
	// error is retried except panics and the run's own cancellation. A
	// RetryOn that panics stops the retries: the node fails with its error,
	// which then mentions the panic.
	RetryOn func(error) bool
}

func (p RetryPolicy) validate() error {
	switch {
	case p.MaxAttempts < 0:
		return fmt.Errorf("retry policy: negative MaxAttempts %d", p.MaxAttempts)
	case p.InitialInterval < 0 || p.MaxInterval < 0:
		return errors.New("retry policy: negative interval")
	case p.BackoffFactor < 0 || math.IsNaN(p.BackoffFactor):
		return fmt.Errorf("retry policy: invalid BackoffFactor %v", p.BackoffFactor)
	}
	return nil
}

func (p *RetryPolicy) attempts() int {
	if p == nil {
		return 1
	}
	if p.MaxAttempts == 0 {
		return 3
	}
	return p.MaxAttempts
}

// delay returns the wait before try number attempt+1 (attempt counts from 1).
func (p *RetryPolicy) delay(attempt int) time.Duration {
	d := p.InitialInterval
	if d == 0 {
		d = 500 * time.Millisecond
	}
	f := p.BackoffFactor
	if f == 0 {
		f = 2
	}
	limit := p.MaxInterval
	if limit == 0 {
		limit = 30 * time.Second
	}
	j := 0.0
	if p.Jitter {
		j = 0.5
	}
	return backoff.Policy{Initial: d, Factor: f, Max: limit, Jitter: j}.Wait(attempt - 1)
}

// retryable reports whether err deserves another try, cancellation aside.
// A RetryOn that panics ends the retries: err is returned with the panic.
func (p *RetryPolicy) retryable(err error) (retry bool, out error) {
	if errors.Is(err, ErrNodePanic) || isInterrupt(err) {
		return false, err
	}
	if p.RetryOn == nil {
		return true, err
	}
	defer func() {
		if v := recover(); v != nil {
			retry, out = false, fmt.Errorf("%w (not retried: RetryOn panicked: %v)", err, v)
		}
	}()
	return p.RetryOn(err), err
}

// WithDefaults returns p with every zero field that has a default set to
// it, for executors that apply the policy themselves (see NodeSettings).
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 3
	}
	if p.InitialInterval == 0 {
		p.InitialInterval = 500 * time.Millisecond
	}
	if p.BackoffFactor == 0 {
		p.BackoffFactor = 2
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = 30 * time.Second
	}
	return p
}

// Retries reports whether p retries a node that failed with err, attempts
// left aside: never a panic nor an interrupt; otherwise as RetryOn says
// (every error without one). A RetryOn that panics means no.
func (p RetryPolicy) Retries(err error) bool {
	retry, _ := p.retryable(err)
	return retry
}
