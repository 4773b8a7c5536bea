package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/trellis-go/trellis/model"
)

// ErrExhausted is returned, wrapped, when a Model is called after its last
// step was played and it has no Fallback.
var ErrExhausted = errors.New("scripted: script exhausted")

// Step is one reply of a script: a fixed assistant message, a function of the
// request, or a failure. Build steps with Reply, CallTools, Respond, Func and
// Fail.
type Step struct {
	msg    model.Message
	usage  model.Usage
	finish string
	fn     func(req *model.Request) (*model.Response, error)
	err    error
}

// Reply returns a step that answers with text.
func Reply(text string) Step {
	return Step{msg: model.Assistant(text)}
}

// ReplyJSON returns a step that answers with v encoded as JSON, the way a
// model answers a request for structured output. If v cannot be encoded the
// step fails with the encoding error.
func ReplyJSON(v any) Step {
	b, err := json.Marshal(v)
	if err != nil {
		return Fail(fmt.Errorf("scripted: encoding reply: %w", err))
	}
	return Reply(string(b))
}

// CallTools returns a step that asks for the given tool calls, in order, as
// parallel calls of one assistant message. Calls without an ID get a
// deterministic one when the step is played (see Model).
func CallTools(calls ...model.ToolCall) Step {
	return Step{msg: model.Assistant("", calls...)}
}

// Respond returns a step that answers with msg. Its role is set to
// assistant.
func Respond(msg model.Message) Step {
	msg.Role = model.RoleAssistant
	return Step{msg: msg}
}

// Func returns a step that computes its reply from the request, so a script
// can react to tool results or to the conversation so far. A nil Response
// with a nil error is treated as an empty reply. Missing call IDs, the
// model name and the finish reason are filled in as for fixed steps.
func Func(fn func(req *model.Request) (*model.Response, error)) Step {
	return Step{fn: fn}
}

// Policy returns a Model named name that answers every request with the
// message fn makes of it, as an offline stand-in for a model that plays a
// part by reading the conversation it is given: its replies do not depend
// on the order of the calls, so one policy serves agents whose parallel
// tools finish in any order. An error of fn fails the call, wrapped with
// name. The message's role is set to assistant.
func Policy(name string, fn func(req *model.Request) (model.Message, error)) *Model {
	step := Func(func(req *model.Request) (*model.Response, error) {
		msg, err := fn(req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		msg.Role = model.RoleAssistant
		return &model.Response{Message: msg}, nil
	})
	return &Model{Name: name, Fallback: &step}
}

// Fail returns a step that fails with err.
func Fail(err error) Step {
	if err == nil {
		err = errors.New("scripted: Fail called with a nil error")
	}
	return Step{err: err}
}

// Call returns a tool call of the named tool with the given JSON arguments
// and no ID; the Model assigns one when the step is played.
func Call(name, args string) model.ToolCall {
	return model.ToolCall{Name: name, Arguments: json.RawMessage(args)}
}

// CallWithID returns a tool call with an explicit ID.
func CallWithID(id, name, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// WithText returns a copy of s whose reply also carries text, for example the
// words a model says before its tool calls. It has no effect on Func and
// Fail steps.
func (s Step) WithText(text string) Step {
	if text == "" {
		s.msg.Content = nil
	} else {
		s.msg.Content = []model.Part{model.TextPart(text)}
	}
	return s
}

// WithUsage returns a copy of s that reports usage. TotalTokens is computed
// when left zero. It has no effect on Func and Fail steps.
func (s Step) WithUsage(u model.Usage) Step {
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	s.usage = u
	return s
}

// WithFinishReason returns a copy of s that reports reason instead of the
// default ("tool_calls" when the reply calls tools, "stop" otherwise).
func (s Step) WithFinishReason(reason string) Step {
	s.finish = reason
	return s
}

// Model is a model that plays a script of replies deterministically. It is
// meant for tests and for examples that run offline.
//
// Each call of Generate or Stream plays the next step. Tool calls without an
// ID get "call_<n>_<i>" — n counts the calls made to the model from 1, i the
// calls of the reply from 1 — prefixed with "<Name>_" when Name is set, so
// that several scripted agents in one conversation never reuse an ID.
// Every request is recorded for tests to inspect.
//
// Set the exported fields before the first call; after that a Model is safe
// for concurrent use.
type Model struct {
	// Name is the model name reported by Info and in every Response. It
	// defaults to "scripted".
	Name string
	// StructuredOutput is what Info reports about native structured output.
	StructuredOutput bool
	// Fallback, when not nil, is played for every call after the script ran
	// out instead of failing with ErrExhausted.
	Fallback *Step

	mu       sync.Mutex
	steps    []Step
	calls    int
	requests []model.Request
}

var (
	_ model.Model     = (*Model)(nil)
	_ model.Describer = (*Model)(nil)
)

// New returns a Model that plays steps in order.
func New(steps ...Step) *Model {
	return &Model{steps: slices.Clone(steps)}
}

// Info describes the model: provider "scripted", its Name, and whether it
// claims native structured output.
func (m *Model) Info() model.Info {
	return model.Info{Provider: "scripted", Name: m.name(), StructuredOutput: m.StructuredOutput}
}

func (m *Model) name() string {
	if m.Name == "" {
		return "scripted"
	}
	return m.Name
}

// Requests returns copies of the requests the model has received, in the
// order they arrived.
func (m *Model) Requests() []model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]model.Request, len(m.requests))
	for i, r := range m.requests {
		out[i] = cloneRequest(r)
	}
	return out
}

// Calls returns how many times the model has been called.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Remaining returns how many steps of the script have not been played.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(len(m.steps)-m.calls, 0)
}

// Generate plays the next step.
func (m *Model) Generate(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req == nil {
		return nil, errors.New("scripted: nil request")
	}
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.requests = append(m.requests, cloneRequest(*req))
	var step *Step
	if n <= len(m.steps) {
		step = &m.steps[n-1]
	} else {
		step = m.Fallback
	}
	m.mu.Unlock()

	if step == nil {
		return nil, fmt.Errorf("%w: call %d of a script of %d steps (model %q); last message: %s",
			ErrExhausted, n, len(m.steps), m.name(), describeLast(req.Messages))
	}
	prefix := ""
	if m.Name != "" {
		prefix = m.Name + "_"
	}
	return step.play(req, m.name(), prefix, n)
}

// Stream plays the next step as a stream: text in word-sized chunks, each
// tool call in several argument fragments with the calls of one reply
// interleaved, then a final chunk with usage, finish reason and model.
// Collecting the stream gives the reply Generate would have returned.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		resp, err := m.Generate(ctx, req)
		if err != nil {
			yield(model.Chunk{}, err)
			return
		}
		for _, c := range chunksOf(resp) {
			if err := ctx.Err(); err != nil {
				yield(model.Chunk{}, err)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

func (s *Step) play(req *model.Request, name, idPrefix string, n int) (*model.Response, error) {
	if s.err != nil {
		return nil, s.err
	}
	var resp *model.Response
	if s.fn != nil {
		r, err := s.fn(req)
		if err != nil {
			return nil, err
		}
		if r == nil {
			r = &model.Response{}
		}
		c := *r
		c.Message = cloneMessage(r.Message)
		resp = &c
	} else {
		resp = &model.Response{Message: cloneMessage(s.msg), Usage: s.usage, FinishReason: s.finish}
	}
	resp.Message.Role = model.RoleAssistant
	for i := range resp.Message.ToolCalls {
		tc := &resp.Message.ToolCalls[i]
		if tc.ID == "" {
			tc.ID = fmt.Sprintf("%scall_%d_%d", idPrefix, n, i+1)
		}
		if len(tc.Arguments) == 0 {
			tc.Arguments = json.RawMessage("{}")
		}
	}
	if resp.FinishReason == "" {
		resp.FinishReason = "stop"
		if resp.Message.HasToolCalls() {
			resp.FinishReason = "tool_calls"
		}
	}
	if resp.Model == "" {
		resp.Model = name
	}
	return resp, nil
}

// chunksOf splits a reply into stream chunks.
func chunksOf(resp *model.Response) []model.Chunk {
	var out []model.Chunk
	// Reasoning first, word by word, each part's data after its text.
	k := 0
	for _, p := range resp.Message.Content {
		if !p.IsReasoning() {
			continue
		}
		redacted := p.Type == model.PartRedactedReasoning
		out = append(out, model.Chunk{Reasoning: &model.ReasoningDelta{Index: k, Redacted: redacted}})
		for _, w := range splitWords(p.Text) {
			out = append(out, model.Chunk{Reasoning: &model.ReasoningDelta{Index: k, Text: w}})
		}
		if len(p.Data) > 0 {
			out = append(out, model.Chunk{Reasoning: &model.ReasoningDelta{Index: k, Data: string(p.Data)}})
		}
		k++
	}
	for _, w := range splitWords(resp.Message.Text()) {
		out = append(out, model.Chunk{Text: w})
	}
	// Provider parts arrive whole, after the text (as model.Accumulator
	// puts them).
	for _, p := range resp.Message.Content {
		if p.Type == model.PartProvider {
			out = append(out, model.Chunk{Part: &p})
		}
	}
	// Fragment each call's arguments, then interleave: round r carries the
	// r-th fragment of every call that still has one.
	frags := make([][]string, len(resp.Message.ToolCalls))
	rounds := 0
	for i, tc := range resp.Message.ToolCalls {
		frags[i] = splitThirds(string(tc.Arguments))
		rounds = max(rounds, len(frags[i]))
	}
	for r := range rounds {
		for i, tc := range resp.Message.ToolCalls {
			if r >= len(frags[i]) {
				continue
			}
			d := &model.ToolCallDelta{Index: i, Arguments: frags[i][r]}
			if r == 0 {
				d.ID, d.Name = tc.ID, tc.Name
			}
			out = append(out, model.Chunk{ToolCall: d})
		}
	}
	usage := resp.Usage
	out = append(out, model.Chunk{Usage: &usage, FinishReason: resp.FinishReason, Model: resp.Model, Metadata: maps.Clone(resp.Message.Metadata)})
	return out
}

// splitWords cuts text before every word that follows white space, so that
// "Hello big world" becomes "Hello", " big", " world".
func splitWords(text string) []string {
	var out []string
	start := 0
	prevSpace := false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if !space && prevSpace && i > start {
			// Cut before the run of spaces that precedes this word.
			cut := i
			for cut > start {
				pr, size := utf8.DecodeLastRuneInString(text[:cut])
				if !unicode.IsSpace(pr) {
					break
				}
				cut -= size
			}
			if cut > start {
				out = append(out, text[start:cut])
				start = cut
			}
		}
		prevSpace = space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// splitThirds cuts s into up to three fragments on rune boundaries.
func splitThirds(s string) []string {
	if len(s) < 3 {
		return []string{s}
	}
	var out []string
	size := (len(s) + 2) / 3
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func describeLast(msgs []model.Message) string {
	if len(msgs) == 0 {
		return "none"
	}
	last := msgs[len(msgs)-1]
	text := last.Text()
	if len(text) > 60 {
		cut := 60
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut] + "..."
	}
	s := fmt.Sprintf("%s %q", last.Role, text)
	if len(last.ToolCalls) > 0 {
		names := make([]string, len(last.ToolCalls))
		for i, tc := range last.ToolCalls {
			names[i] = tc.Name
		}
		s += " calling " + strings.Join(names, ", ")
	}
	if last.ToolCallID != "" {
		s += " answering " + last.ToolCallID
	}
	return s
}

// cloneMessage returns a copy of m that shares no memory with it.
func cloneMessage(m model.Message) model.Message {
	m.Content = slices.Clone(m.Content)
	for i := range m.Content {
		p := &m.Content[i]
		p.Data = bytes.Clone(p.Data)
		p.JSON = bytes.Clone(p.JSON)
	}
	m.ToolCalls = slices.Clone(m.ToolCalls)
	for i := range m.ToolCalls {
		m.ToolCalls[i].Arguments = bytes.Clone(m.ToolCalls[i].Arguments)
	}
	m.Metadata = maps.Clone(m.Metadata)
	return m
}

// cloneRequest returns a copy of r that shares no memory with it.
func cloneRequest(r model.Request) model.Request {
	r.Messages = slices.Clone(r.Messages)
	for i := range r.Messages {
		r.Messages[i] = cloneMessage(r.Messages[i])
	}
	r.Tools = slices.Clone(r.Tools)
	for i := range r.Tools {
		t := &r.Tools[i]
		t.InputSchema = bytes.Clone(t.InputSchema)
		t.OutputSchema = bytes.Clone(t.OutputSchema)
	}
	if r.ResponseFormat != nil {
		rf := *r.ResponseFormat
		rf.Schema = bytes.Clone(rf.Schema)
		r.ResponseFormat = &rf
	}
	r.Settings.Temperature = clonePtr(r.Settings.Temperature)
	r.Settings.TopP = clonePtr(r.Settings.TopP)
	r.Settings.Seed = clonePtr(r.Settings.Seed)
	r.Settings.Stop = slices.Clone(r.Settings.Stop)
	return r
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
