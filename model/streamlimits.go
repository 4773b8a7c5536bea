package model

import (
	"fmt"
	"time"

	"github.com/trellis-go/trellis/internal/streamlimit"
)

// The limits a provider puts on a streamed reply unless told otherwise
// (see StreamLimits).
const (
	// DefaultStreamIdleTimeout is how long a provider waits for the next
	// bytes of a stream, or for the reply's headers: 10 minutes. It is
	// long because a stream can rightly pause that long: the OpenAI Chat
	// Completions API sends nothing while a reasoning model thinks, which
	// at a high effort takes minutes, and a local server can say nothing
	// while it reads a long prompt. It is there for the server that never
	// speaks again, which without it holds the call until its context
	// ends.
	DefaultStreamIdleTimeout = 10 * time.Minute
	// DefaultMaxStreamEventBytes caps one event of a stream: 32 MiB, far
	// above what a reply's events hold (a server tool's whole result is
	// one event), and the size of the longest line the OpenAI client
	// reads.
	DefaultMaxStreamEventBytes = 32 << 20
	// DefaultMaxStreamBytes caps a whole streamed reply: 256 MiB, many
	// times the longest reply a model writes with the events' framing.
	DefaultMaxStreamBytes = 256 << 20
)

// The errors of a stream that reached one of its limits. The error a
// provider returns names the limit and its value, and matches one of these
// with errors.Is. None is transient: a provider does not retry them.
var (
	// ErrStreamIdle: the server sent nothing for the idle timeout.
	ErrStreamIdle = streamlimit.ErrIdle
	// ErrStreamEventTooLarge: one event of the stream exceeds its cap.
	ErrStreamEventTooLarge = streamlimit.ErrEventTooLarge
	// ErrStreamTooLarge: the whole streamed reply exceeds its cap.
	ErrStreamTooLarge = streamlimit.ErrTooLarge
)

// StreamLimits bound a provider's streamed replies (the providers' With
// StreamLimits option), so that a server that falls silent or sends
// without end cannot hold a call or its memory. A zero field takes its
// default.
type StreamLimits struct {
	// IdleTimeout is the longest the server may send nothing, from the
	// request to the reply's headers and between two pieces of the reply
	// (DefaultStreamIdleTimeout when zero; negative waits for ever).
	// Time the caller spends between two chunks does not count.
	IdleTimeout time.Duration
	// MaxEventBytes caps one event of the stream, in bytes as sent
	// (DefaultMaxStreamEventBytes when zero).
	MaxEventBytes int64
	// MaxBytes caps the whole reply, in bytes as sent
	// (DefaultMaxStreamBytes when zero).
	MaxBytes int64
}

// WithDefaults returns l with its zero fields set to their defaults.
func (l StreamLimits) WithDefaults() StreamLimits {
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultStreamIdleTimeout
	}
	if l.MaxEventBytes == 0 {
		l.MaxEventBytes = DefaultMaxStreamEventBytes
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultMaxStreamBytes
	}
	return l
}

// Check reports a cap that is negative.
func (l StreamLimits) Check() error {
	if l.MaxEventBytes < 0 || l.MaxBytes < 0 {
		return fmt.Errorf("stream limits: the caps must not be negative (MaxEventBytes %d, MaxBytes %d)", l.MaxEventBytes, l.MaxBytes)
	}
	return nil
}
