package tool

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/trellis-go/trellis/model"
)

// ErrNoPeer: a tool asked its caller to log, sample or elicit, and the call
// did not come from a caller that can (a tool served over MCP can; one a
// graph runs directly cannot), or that caller does not offer it (an MCP
// client without the sampling or elicitation capability).
var ErrNoPeer = errors.New("tool: the caller cannot serve this request")

// LogLevel is the severity of a log message sent to the caller, with MCP's
// (syslog's) names: debug, info, notice, warning, error, critical, alert,
// emergency.
type LogLevel string

// The log levels.
const (
	LogDebug   LogLevel = "debug"
	LogInfo    LogLevel = "info"
	LogNotice  LogLevel = "notice"
	LogWarning LogLevel = "warning"
	LogError   LogLevel = "error"
)

// SamplingRequest asks the caller's model for a message.
type SamplingRequest struct {
	// Messages are the conversation to answer: user and assistant messages.
	Messages []model.Message `json:"messages"`
	// SystemPrompt is the instruction the caller may give its model.
	SystemPrompt string `json:"system_prompt,omitempty"`
	// MaxTokens bounds the answer; zero means a caller's default.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature, when set, is the sampling temperature asked for.
	Temperature *float64 `json:"temperature,omitempty"`
	// Stop lists sequences that end the answer.
	Stop []string `json:"stop,omitempty"`
}

// SamplingResult is the caller's model's answer.
type SamplingResult struct {
	// Message is the answer, an assistant message.
	Message model.Message `json:"message"`
	// Model names the model that answered.
	Model string `json:"model,omitempty"`
	// StopReason says why it stopped ("endTurn", "maxTokens", ...).
	StopReason string `json:"stop_reason,omitempty"`
}

// ElicitRequest asks the caller's user for structured input.
type ElicitRequest struct {
	// Message is the question shown to the user.
	Message string `json:"message"`
	// Schema is the JSON schema of the answer: an object schema of
	// primitive properties (string, number, integer, boolean, enums).
	Schema json.RawMessage `json:"schema"`
}

// ElicitResult is the user's answer.
type ElicitResult struct {
	// Action is "accept", "decline" or "cancel".
	Action string `json:"action"`
	// Content is the answer, when Action is "accept".
	Content map[string]any `json:"content,omitempty"`
}

// Peer is the caller of a tool, when it can do more than take the result:
// an MCP client the tool is served to, for example. Log, Sample and Elicit
// reach it through the call's context.
type Peer interface {
	// Log sends a log message to the caller.
	Log(ctx context.Context, level LogLevel, logger string, data any) error
	// Sample asks the caller's model for a message.
	Sample(ctx context.Context, req SamplingRequest) (SamplingResult, error)
	// Elicit asks the caller's user for input.
	Elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error)
}

type peerKey struct{}

// WithPeer returns ctx carrying the caller p, for the tools called with it.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerOf returns the caller ctx carries, if any.
func PeerOf(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok && p != nil
}

// Log sends a log message (text, or any JSON value) to the caller of the
// tool ctx belongs to; without one it fails with ErrNoPeer.
func Log(ctx context.Context, level LogLevel, data any) error {
	p, ok := PeerOf(ctx)
	if !ok {
		return ErrNoPeer
	}
	return p.Log(ctx, level, CallID(ctx), data)
}

// Sample asks the caller's model for a message; without a caller that
// can, it fails with ErrNoPeer.
func Sample(ctx context.Context, req SamplingRequest) (SamplingResult, error) {
	p, ok := PeerOf(ctx)
	if !ok {
		return SamplingResult{}, ErrNoPeer
	}
	return p.Sample(ctx, req)
}

// Elicit asks the caller's user for input matching schema; without a
// caller that can, it fails with ErrNoPeer.
func Elicit(ctx context.Context, req ElicitRequest) (ElicitResult, error) {
	p, ok := PeerOf(ctx)
	if !ok {
		return ElicitResult{}, ErrNoPeer
	}
	return p.Elicit(ctx, req)
}
