package agui

import (
	"context"
	"errors"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/nodes"
)

// The codes of RUN_ERROR, by the kind of failure.
const (
	codeHopLimit          = "hop_limit"
	codeCancelled         = "cancelled"
	codeTimeout           = "timeout"
	codeThreadBusy        = "thread_busy"
	codeNeedsCheckpointer = "needs_checkpointer"
	codeAgentError        = "agent_error"
)

// errorCode names the kind of a run's failure, for RUN_ERROR's code.
func errorCode(err error) string {
	var hop *nodes.HopLimitError
	switch {
	case errors.As(err, &hop):
		return codeHopLimit
	case errors.Is(err, context.Canceled):
		return codeCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return codeTimeout
	case errors.Is(err, graph.ErrThreadBusy):
		return codeThreadBusy
	case errors.Is(err, ErrNeedsCheckpointer):
		return codeNeedsCheckpointer
	}
	return codeAgentError
}

// defaultErrorText is what a client is told of an error without
// WithErrorText: the kind of failure, in a sentence, and nothing of the
// error's own text, which may hold a stack trace (a panic in the graph),
// file paths, addresses, or the names of models and tools.
func defaultErrorText(err error) string {
	switch errorCode(err) {
	case codeHopLimit:
		return "The agent made more rounds of tool calls than it may."
	case codeCancelled:
		return "The run was cancelled."
	case codeTimeout:
		return "The run took too long."
	case codeThreadBusy:
		return "The thread is running another turn; try again when it ends."
	case codeNeedsCheckpointer:
		return "The run paused, and only an agent with a checkpointer can resume it."
	}
	return "The agent failed."
}

// errorText is what the client is told of err: WithErrorText's wording,
// or defaultErrorText.
func (h *Handler) errorText(err error) string {
	if h.cfg.errorText != nil {
		return h.cfg.errorText(err)
	}
	return defaultErrorText(err)
}

// resultMetadata is what a tool result's event carries besides the
// content the model saw, for interfaces that render results: the call's
// status, error code and duration, the tool's title, and the result's
// Details (structured data no model sees, such as a plan's items), when
// they encode as JSON.
//
// A failed call's Details are not sent: they are where a panic's stack
// trace is kept (executor.PanicResult), and where tools put diagnostics
// (paths, commands, addresses) meant for logs. With WithErrorText, its
// wording of the call's error is sent as "error".
func (h *Handler) resultMetadata(e executor.Event) *resultMetadata {
	meta := &resultMetadata{Status: string(e.Result.Status), ErrorCode: e.Result.ErrorCode, Title: e.Title}
	if e.Duration > 0 {
		meta.DurationMs = e.Duration.Milliseconds()
	}
	if e.Result.IsError {
		if e.Result.Err != nil && h.cfg.errorText != nil {
			meta.Error = h.cfg.errorText(e.Result.Err)
		}
		return meta
	}
	if e.Result.Details != nil {
		if b, err := marshalDetails(e.Result.Details); err == nil && string(b) != "null" {
			meta.Details = b
		}
	}
	return meta
}
