package bgtask

import "time"

// Limits are the settings the command toolsets share: their options
// (WithTimeout, WithMaxTimeout, WithMaxOutput, WithMaxTasks,
// WithKillGrace) set them through the setters below, which record what is
// wrong with a value in Problems.
type Limits struct {
	// Timeout bounds a command whose call gives no timeout_ms.
	Timeout time.Duration
	// MaxTimeout is the longest a call's timeout_ms can ask for.
	MaxTimeout time.Duration
	// MaxOutput is how many bytes of output one result shows, and of
	// unread output a task keeps.
	MaxOutput int
	// MaxTasks is how many background tasks may run at once.
	MaxTasks int
	// KillGrace is how long a command being stopped has between SIGTERM
	// and SIGKILL.
	KillGrace time.Duration
}

// Problem records what is wrong with an option's value.
type Problem func(format string, args ...any)

// SetTimeout sets Timeout, which must be positive.
func (l *Limits) SetTimeout(d time.Duration, problem Problem) {
	if d <= 0 {
		problem("WithTimeout: the timeout must be positive, not %v", d)
	}
	l.Timeout = d
}

// SetMaxTimeout sets MaxTimeout, which must be positive.
func (l *Limits) SetMaxTimeout(d time.Duration, problem Problem) {
	if d <= 0 {
		problem("WithMaxTimeout: the maximum timeout must be positive, not %v", d)
	}
	l.MaxTimeout = d
}

// SetMaxOutput sets MaxOutput, which must be at least 1.
func (l *Limits) SetMaxOutput(n int, problem Problem) {
	if n < 1 {
		problem("WithMaxOutput: n must be at least 1, not %d", n)
	}
	l.MaxOutput = n
}

// SetMaxTasks sets MaxTasks, which must be at least 1.
func (l *Limits) SetMaxTasks(n int, problem Problem) {
	if n < 1 {
		problem("WithMaxTasks: n must be at least 1, not %d", n)
	}
	l.MaxTasks = n
}

// SetKillGrace sets KillGrace, which must not be negative.
func (l *Limits) SetKillGrace(d time.Duration, problem Problem) {
	if d < 0 {
		problem("WithKillGrace: the grace period must not be negative, not %v", d)
	}
	l.KillGrace = d
}
