package model

import (
	"bytes"
	"encoding/json"
	"iter"
	"maps"
	"slices"
	"strings"
)

// Accumulator assembles the chunks of a streamed reply into a Response.
//
// Text fragments are concatenated in arrival order. Tool-call fragments are
// merged by their Index, so several parallel calls whose fragments arrive
// interleaved are rebuilt correctly: the first non-empty ID and Name seen for
// an index are kept, and argument fragments are concatenated. A fragment
// whose non-empty ID differs from the one its index holds starts a new call
// at that index, after the others there (some compatible servers stream
// every call at index 0). Reasoning fragments are merged by their Index
// too, their text and data concatenated, into reasoning parts that come
// before the text in the message's content. The last non-empty finish
// reason and model, and the last usage, win; chunks' metadata is merged
// into the message's. Whole parts (Chunk.Part) follow the text in the
// message's content, in arrival order.
//
// The zero value is ready to use. An Accumulator is not safe for concurrent
// use, and must not be copied once used (it holds a strings.Builder).
type Accumulator struct {
	reasoning []*pendingReasoning
	text      strings.Builder
	parts     []Part
	calls     []*pendingCall
	byIdx     map[int]*pendingCall
	usage     Usage
	finish    string
	model     string
	meta      map[string]string
}

type pendingReasoning struct {
	index      int
	redacted   bool
	text, data strings.Builder
}

type pendingCall struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// Add merges one chunk into the reply being assembled.
func (a *Accumulator) Add(c Chunk) {
	if d := c.Reasoning; d != nil {
		a.addReasoning(d)
	}
	a.text.WriteString(c.Text)
	if c.Part != nil {
		a.parts = append(a.parts, clonePart(*c.Part))
	}
	if d := c.ToolCall; d != nil {
		p := a.byIdx[d.Index]
		if p != nil && d.ID != "" && p.id != "" && d.ID != p.id {
			p = nil // another call at the same index
		}
		if p == nil {
			if a.byIdx == nil {
				a.byIdx = make(map[int]*pendingCall)
			}
			p = &pendingCall{index: d.Index}
			a.byIdx[d.Index] = p
			a.calls = append(a.calls, p)
		}
		if p.id == "" {
			p.id = d.ID
		}
		if p.name == "" {
			p.name = d.Name
		}
		p.args.WriteString(d.Arguments)
	}
	if c.Usage != nil {
		a.usage = *c.Usage
	}
	if c.FinishReason != "" {
		a.finish = c.FinishReason
	}
	if c.Model != "" {
		a.model = c.Model
	}
	if len(c.Metadata) > 0 {
		if a.meta == nil {
			a.meta = make(map[string]string, len(c.Metadata))
		}
		maps.Copy(a.meta, c.Metadata)
	}
}

func (a *Accumulator) addReasoning(d *ReasoningDelta) {
	var p *pendingReasoning
	for _, r := range a.reasoning {
		if r.index == d.Index {
			p = r
			break
		}
	}
	if p == nil {
		p = &pendingReasoning{index: d.Index}
		a.reasoning = append(a.reasoning, p)
	}
	p.redacted = p.redacted || d.Redacted
	p.text.WriteString(d.Text)
	p.data.WriteString(d.Data)
}

// Response returns the reply assembled so far. Tool calls are ordered by
// their stream index; a call whose arguments never arrived gets the empty
// object "{}". Arguments are otherwise kept exactly as streamed, even when
// they are not valid JSON, so that later stages can repair or reject them.
//
// Response may be called more than once; each call returns a new Response.
func (a *Accumulator) Response() *Response {
	msg := Message{Role: RoleAssistant}
	if len(a.reasoning) > 0 {
		ordered := slices.Clone(a.reasoning)
		slices.SortStableFunc(ordered, func(x, y *pendingReasoning) int { return x.index - y.index })
		for _, r := range ordered {
			var data []byte
			if r.data.Len() > 0 {
				data = []byte(r.data.String())
			}
			if r.redacted {
				msg.Content = append(msg.Content, RedactedReasoningPart(data))
			} else {
				msg.Content = append(msg.Content, ReasoningPart(r.text.String(), data))
			}
		}
	}
	if a.text.Len() > 0 {
		msg.Content = append(msg.Content, TextPart(a.text.String()))
	}
	for _, p := range a.parts {
		msg.Content = append(msg.Content, clonePart(p))
	}
	if len(a.calls) > 0 {
		ordered := slices.Clone(a.calls)
		slices.SortStableFunc(ordered, func(x, y *pendingCall) int { return x.index - y.index })
		msg.ToolCalls = make([]ToolCall, len(ordered))
		for i, p := range ordered {
			args := p.args.String()
			if strings.TrimSpace(args) == "" {
				args = "{}"
			}
			msg.ToolCalls[i] = ToolCall{ID: p.id, Name: p.name, Arguments: json.RawMessage(args)}
		}
	}
	if len(a.meta) > 0 {
		msg.Metadata = maps.Clone(a.meta)
	}
	return &Response{Message: msg, Usage: a.usage, FinishReason: a.finish, Model: a.model}
}

// clonePart returns p with its own copies of its byte slices.
func clonePart(p Part) Part {
	p.Data = bytes.Clone(p.Data)
	p.JSON = bytes.Clone(p.JSON)
	return p
}

// Collect drains seq and returns the assembled reply, or the first error the
// sequence reports.
func Collect(seq iter.Seq2[Chunk, error]) (*Response, error) {
	var a Accumulator
	for c, err := range seq {
		if err != nil {
			return nil, err
		}
		a.Add(c)
	}
	return a.Response(), nil
}

// ResponseChunks returns a sequence that replays a complete reply as chunks:
// one complete fragment per reasoning part, its text, each provider part
// (PartProvider) whole, one complete fragment per tool call, then a final
// chunk with the usage, finish reason and model.
// It lets a model that cannot stream implement Stream; collecting the
// sequence gives back an equivalent Response.
func ResponseChunks(resp *Response) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		if resp == nil {
			return
		}
		n := 0
		for _, p := range resp.Message.Content {
			if !p.IsReasoning() {
				continue
			}
			d := &ReasoningDelta{Index: n, Text: p.Text, Data: string(p.Data), Redacted: p.Type == PartRedactedReasoning}
			n++
			if !yield(Chunk{Reasoning: d}, nil) {
				return
			}
		}
		if text := resp.Message.Text(); text != "" {
			if !yield(Chunk{Text: text}, nil) {
				return
			}
		}
		for _, p := range resp.Message.Content {
			if p.Type != PartProvider {
				continue
			}
			if !yield(Chunk{Part: &p}, nil) {
				return
			}
		}
		for i, tc := range resp.Message.ToolCalls {
			d := &ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, Arguments: string(tc.Arguments)}
			if !yield(Chunk{ToolCall: d}, nil) {
				return
			}
		}
		usage := resp.Usage
		yield(Chunk{Usage: &usage, FinishReason: resp.FinishReason, Model: resp.Model, Metadata: maps.Clone(resp.Message.Metadata)}, nil)
	}
}
