package handoff

import (
	"errors"
	"fmt"
)

var (
	// ErrDepthLimit is matched by *DepthError.
	ErrDepthLimit = errors.New("handoff: depth limit reached")
	// ErrInvalidResult is matched by the error of a handoff whose agent's
	// answer the validator rejected on the last attempt.
	ErrInvalidResult = errors.New("handoff: the agent's answer was rejected")
	// ErrNoAnswer is matched by the error of a handoff whose agent ended
	// without an assistant message to return.
	ErrNoAnswer = errors.New("handoff: the agent gave no answer")
)

// DepthError reports a handoff refused because too many handoffs were
// already running inside one another. The agent did not run.
type DepthError struct {
	// Agent is the agent the call tried to reach.
	Agent string
	// Depth is how many handoffs were running above the call.
	Depth int
	// Limit is the tool's depth limit.
	Limit int
}

// Error says which handoff was refused and why.
func (e *DepthError) Error() string {
	return fmt.Sprintf("handoff: cannot hand off to %q: %d handoffs are already running inside one another, the limit is %d", e.Agent, e.Depth, e.Limit)
}

// Is reports whether target is ErrDepthLimit.
func (e *DepthError) Is(target error) bool { return target == ErrDepthLimit }
