package model_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

func seqOf(chunks ...model.Chunk) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		for _, c := range chunks {
			if !yield(c, nil) {
				return
			}
		}
	}
}

func delta(index int, id, name, args string) model.Chunk {
	return model.Chunk{ToolCall: &model.ToolCallDelta{Index: index, ID: id, Name: name, Arguments: args}}
}

func TestAccumulator(t *testing.T) {
	usage := model.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}
	tests := []struct {
		name   string
		chunks []model.Chunk
		want   *model.Response
	}{
		{
			name:   "empty stream",
			chunks: nil,
			want:   &model.Response{Message: model.Message{Role: model.RoleAssistant}},
		},
		{
			name: "text only",
			chunks: []model.Chunk{
				{Model: "m-1", Text: "Hel"}, {Text: "lo, "}, {Text: "world"},
				{FinishReason: "stop", Usage: &usage},
			},
			want: &model.Response{
				Message:      model.Assistant("Hello, world"),
				Usage:        usage,
				FinishReason: "stop",
				Model:        "m-1",
			},
		},
		{
			name: "single call fragmented",
			chunks: []model.Chunk{
				delta(0, "call_1", "get_weather", ""),
				delta(0, "", "", `{"ci`),
				delta(0, "", "", `ty":"Pa`),
				delta(0, "", "", `ris"}`),
				{FinishReason: "tool_calls"},
			},
			want: &model.Response{
				Message: model.Assistant("", model.ToolCall{
					ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`),
				}),
				FinishReason: "tool_calls",
			},
		},
		{
			name: "parallel calls interleaved by index",
			chunks: []model.Chunk{
				{Text: "Checking both."},
				delta(1, "call_b", "get_time", ""),
				delta(0, "call_a", "get_weather", `{"city":`),
				delta(2, "call_c", "get_weather", `{"city":"Oslo"}`),
				delta(1, "", "", `{"tz":"Europe/Paris"}`),
				delta(0, "", "", `"Paris"}`),
				{FinishReason: "tool_calls", Usage: &usage},
			},
			want: &model.Response{
				Message: model.Assistant("Checking both.",
					model.ToolCall{ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					model.ToolCall{ID: "call_b", Name: "get_time", Arguments: json.RawMessage(`{"tz":"Europe/Paris"}`)},
					model.ToolCall{ID: "call_c", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)},
				),
				Usage:        usage,
				FinishReason: "tool_calls",
			},
		},
		{
			name: "repeated ID and name in later fragments are not duplicated",
			chunks: []model.Chunk{
				delta(0, "call_1", "search", `{"q":`),
				delta(0, "call_1", "search", `"go"}`),
			},
			want: &model.Response{
				Message: model.Assistant("", model.ToolCall{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"q":"go"}`)}),
			},
		},
		{
			name: "ID arriving after the first fragment is kept",
			chunks: []model.Chunk{
				delta(0, "", "search", `{}`),
				delta(0, "call_late", "", ``),
			},
			want: &model.Response{
				Message: model.Assistant("", model.ToolCall{ID: "call_late", Name: "search", Arguments: json.RawMessage(`{}`)}),
			},
		},
		{
			name:   "call without arguments gets an empty object",
			chunks: []model.Chunk{delta(0, "call_1", "now", ""), delta(0, "", "", "  ")},
			want: &model.Response{
				Message: model.Assistant("", model.ToolCall{ID: "call_1", Name: "now", Arguments: json.RawMessage(`{}`)}),
			},
		},
		{
			name: "last usage and finish reason win",
			chunks: []model.Chunk{
				{Usage: &model.Usage{InputTokens: 1}},
				{FinishReason: "length"},
				{Usage: &usage},
				{FinishReason: "stop"},
			},
			want: &model.Response{Message: model.Message{Role: model.RoleAssistant}, Usage: usage, FinishReason: "stop"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a model.Accumulator
			for _, c := range tt.chunks {
				a.Add(c)
			}
			assert.Equal(t, tt.want, a.Response())

			got, err := model.Collect(seqOf(tt.chunks...))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestAccumulatorResponseIsIndependent(t *testing.T) {
	var a model.Accumulator
	a.Add(model.Chunk{Text: "a"})
	a.Add(delta(0, "c1", "t", `{}`))
	first := a.Response()
	a.Add(model.Chunk{Text: "b"})
	a.Add(delta(1, "c2", "t", `{}`))
	second := a.Response()

	assert.Equal(t, "a", first.Message.Text())
	assert.Len(t, first.Message.ToolCalls, 1)
	assert.Equal(t, "ab", second.Message.Text())
	assert.Len(t, second.Message.ToolCalls, 2)
}

func TestCollectStopsAtError(t *testing.T) {
	boom := errors.New("connection reset")
	yielded := 0
	seq := func(yield func(model.Chunk, error) bool) {
		yielded++
		if !yield(model.Chunk{Text: "partial"}, nil) {
			return
		}
		yielded++
		if !yield(model.Chunk{}, boom) {
			return
		}
		yielded++
		yield(model.Chunk{Text: "never"}, nil)
	}
	resp, err := model.Collect(seq)
	require.ErrorIs(t, err, boom)
	assert.Nil(t, resp)
	assert.Equal(t, 2, yielded, "Collect must stop pulling after an error")
}

func TestAccumulatorReasoning(t *testing.T) {
	var a model.Accumulator
	for _, c := range []model.Chunk{
		{Reasoning: &model.ReasoningDelta{Index: 0, Text: "The user wants "}},
		{Reasoning: &model.ReasoningDelta{Index: 1, Data: "ENC", Redacted: true}},
		{Reasoning: &model.ReasoningDelta{Index: 0, Text: "the weather."}},
		{Reasoning: &model.ReasoningDelta{Index: 0, Data: "sig-"}},
		{Text: "Let me look."},
		{Reasoning: &model.ReasoningDelta{Index: 0, Data: "1"}},
		{Reasoning: &model.ReasoningDelta{Index: 1, Data: "RYPTED"}},
		delta(0, "c1", "weather", `{"city":"Oslo"}`),
	} {
		a.Add(c)
	}
	msg := a.Response().Message
	want := []model.Part{
		model.ReasoningPart("The user wants the weather.", []byte("sig-1")),
		model.RedactedReasoningPart([]byte("ENCRYPTED")),
		model.TextPart("Let me look."),
	}
	assert.Equal(t, want, msg.Content)
	assert.Equal(t, "Let me look.", msg.Text(), "reasoning is not part of the text")
	assert.Equal(t, "The user wants the weather.", msg.Reasoning())
	require.Len(t, msg.ToolCalls, 1)
}

func TestResponseChunksRoundTripsReasoning(t *testing.T) {
	msg := model.Assistant("Done.", model.ToolCall{ID: "c1", Name: "a", Arguments: json.RawMessage(`{}`)})
	msg.Content = append([]model.Part{
		model.ReasoningPart("first", []byte("s1")),
		model.ReasoningPart("", nil), // a provider that shows nothing of it
		model.RedactedReasoningPart([]byte("xyz")),
	}, msg.Content...)
	resp := &model.Response{Message: msg, FinishReason: "tool_calls"}
	got, err := model.Collect(model.ResponseChunks(resp))
	require.NoError(t, err)
	assert.Equal(t, resp, got)

	var kinds []string
	for c := range model.ResponseChunks(resp) {
		switch {
		case c.Reasoning != nil:
			kinds = append(kinds, "reasoning")
		case c.Text != "":
			kinds = append(kinds, "text")
		case c.ToolCall != nil:
			kinds = append(kinds, "call")
		default:
			kinds = append(kinds, "final")
		}
	}
	assert.Equal(t, []string{"reasoning", "reasoning", "reasoning", "text", "call", "final"}, kinds)
}

func TestResponseChunksRoundTrip(t *testing.T) {
	resp := &model.Response{
		Message: model.Assistant("Let me look.",
			model.ToolCall{ID: "c1", Name: "a", Arguments: json.RawMessage(`{"x":1}`)},
			model.ToolCall{ID: "c2", Name: "b", Arguments: json.RawMessage(`{"y":[2]}`)},
		),
		Usage:        model.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7},
		FinishReason: "tool_calls",
		Model:        "m",
	}
	got, err := model.Collect(model.ResponseChunks(resp))
	require.NoError(t, err)
	assert.Equal(t, resp, got)

	var n int
	for c, err := range model.ResponseChunks(resp) {
		require.NoError(t, err)
		n++
		if n == 4 {
			assert.Equal(t, "tool_calls", c.FinishReason, "the last chunk ends the reply")
			require.NotNil(t, c.Usage)
		} else {
			assert.Empty(t, c.FinishReason)
		}
	}
	assert.Equal(t, 4, n)

	// Early break is honoured.
	n = 0
	for range model.ResponseChunks(resp) {
		n++
		break
	}
	assert.Equal(t, 1, n)

	got, err = model.Collect(model.ResponseChunks(nil))
	require.NoError(t, err)
	assert.Equal(t, &model.Response{Message: model.Message{Role: model.RoleAssistant}}, got)
}

// decodeDeltas turns fuzz input into a chunk sequence: each record is a
// control byte (kind and index), then a length-prefixed payload.
func decodeDeltas(data []byte) []model.Chunk {
	var out []model.Chunk
	for len(data) >= 2 {
		ctl, n := data[0], int(data[1])
		data = data[2:]
		if n > len(data) {
			n = len(data)
		}
		payload := string(data[:n])
		data = data[n:]
		idx := int(ctl>>3) - 4 // includes negative indices
		switch ctl & 7 {
		case 0:
			out = append(out, model.Chunk{Text: payload})
		case 1:
			out = append(out, delta(idx, payload, "", ""))
		case 2:
			out = append(out, delta(idx, "", payload, ""))
		case 3:
			out = append(out, delta(idx, "", "", payload))
		case 4:
			out = append(out, model.Chunk{Reasoning: &model.ReasoningDelta{Index: idx, Text: payload}})
		case 5:
			out = append(out, model.Chunk{Reasoning: &model.ReasoningDelta{Index: idx, Data: payload, Redacted: idx%2 != 0}})
		case 6:
			out = append(out, model.Chunk{FinishReason: payload})
		default:
			v := int(binary.LittleEndian.Uint16(append([]byte(payload), 0, 0)))
			out = append(out, model.Chunk{Usage: &model.Usage{InputTokens: v, TotalTokens: v}})
		}
	}
	return out
}

func FuzzAccumulator(f *testing.F) {
	f.Add([]byte{0, 5, 'h', 'e', 'l', 'l', 'o'})
	f.Add([]byte{1 | 4<<3, 2, 'c', '1', 2 | 4<<3, 1, 'f', 3 | 4<<3, 3, '{', '"', 'a', 3 | 5<<3, 2, '{', '}', 3 | 4<<3, 4, '"', ':', '1', '}'})
	f.Add([]byte{3, 200, '{'})
	f.Add([]byte{7, 2, 0xff, 0xff, 6, 4, 's', 't', 'o', 'p'})
	f.Add([]byte{})
	f.Add([]byte{4 | 5<<3, 3, 'h', 'm', 'm', 5 | 5<<3, 2, 's', 'g', 4 | 4<<3, 1, 'a', 0, 2, 'o', 'k'})
	f.Fuzz(func(t *testing.T, data []byte) {
		chunks := decodeDeltas(data)
		var a model.Accumulator
		var text strings.Builder
		// The calls of each index, in order; a new ID at an index whose
		// current call has another one starts a new call there.
		type call struct {
			id   string
			args strings.Builder
		}
		byIndex := map[int][]*call{}
		total := 0
		// The reasoning of each index: text, data, and whether redacted.
		type thought struct {
			text, data strings.Builder
			redacted   bool
		}
		thoughts := map[int]*thought{}
		for _, c := range chunks {
			a.Add(c)
			text.WriteString(c.Text)
			if d := c.Reasoning; d != nil {
				th := thoughts[d.Index]
				if th == nil {
					th = &thought{}
					thoughts[d.Index] = th
				}
				th.text.WriteString(d.Text)
				th.data.WriteString(d.Data)
				th.redacted = th.redacted || d.Redacted
			}
			if d := c.ToolCall; d != nil {
				list := byIndex[d.Index]
				if len(list) == 0 || d.ID != "" && list[len(list)-1].id != "" && list[len(list)-1].id != d.ID {
					list = append(list, &call{})
					byIndex[d.Index] = list
					total++
				}
				cur := list[len(list)-1]
				cur.args.WriteString(d.Arguments)
				if cur.id == "" {
					cur.id = d.ID
				}
			}
		}
		resp := a.Response()
		require.Equal(t, text.String(), resp.Message.Text())
		require.Len(t, resp.Message.ToolCalls, total)

		// The reasoning parts come first, one per index in index order.
		order := make([]int, 0, len(thoughts))
		for i := range thoughts {
			order = append(order, i)
		}
		slices.Sort(order)
		require.GreaterOrEqual(t, len(resp.Message.Content), len(order))
		var reasoning strings.Builder
		for k, i := range order {
			p, want := resp.Message.Content[k], thoughts[i]
			require.Equal(t, want.data.String(), string(p.Data), "data of the reasoning at index %d", i)
			if want.redacted {
				require.Equal(t, model.PartRedactedReasoning, p.Type, "part %d", k)
				require.Empty(t, p.Text)
			} else {
				require.Equal(t, model.PartReasoning, p.Type, "part %d", k)
				require.Equal(t, want.text.String(), p.Text)
				reasoning.WriteString(want.text.String())
			}
		}
		require.Equal(t, reasoning.String(), resp.Message.Reasoning())
		for _, p := range resp.Message.Content[len(order):] {
			require.False(t, p.IsReasoning(), "reasoning after the text")
		}

		indices := make([]int, 0, len(byIndex))
		for i := range byIndex {
			indices = append(indices, i)
		}
		slices.Sort(indices)
		k := 0
		for _, i := range indices {
			for _, want := range byIndex[i] {
				tc := resp.Message.ToolCalls[k]
				k++
				args := want.args.String()
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				require.Equal(t, args, string(tc.Arguments), "arguments of a call at index %d", i)
				require.Equal(t, want.id, tc.ID, "id of a call at index %d", i)
			}
		}
	})
}

// benchChunks is a streamed reply of 200 text fragments and three parallel
// tool calls of 20 fragments each, interleaved.
func benchChunks() []model.Chunk {
	var chunks []model.Chunk
	for range 200 {
		chunks = append(chunks, model.Chunk{Text: "word "})
	}
	for i := range 3 {
		chunks = append(chunks, delta(i, "call_"+string(rune('a'+i)), "search", ""))
	}
	for range 20 {
		for i := range 3 {
			chunks = append(chunks, delta(i, "", "", `"abcdefgh",`))
		}
	}
	usage := model.Usage{InputTokens: 1, OutputTokens: 1, TotalTokens: 2}
	return append(chunks, model.Chunk{FinishReason: "tool_calls", Usage: &usage})
}

func BenchmarkAccumulator(b *testing.B) {
	chunks := benchChunks()
	b.ReportAllocs()
	for b.Loop() {
		var a model.Accumulator
		for _, c := range chunks {
			a.Add(c)
		}
		_ = a.Response()
	}
}

func BenchmarkCollectResponseChunks(b *testing.B) {
	resp := &model.Response{
		Message: model.Assistant("Hello there, how can I help?",
			model.ToolCall{ID: "c1", Name: "a", Arguments: json.RawMessage(`{"x":1}`)}),
		FinishReason: "tool_calls",
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := model.Collect(model.ResponseChunks(resp)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAccumulatorSeparatesCallsThatShareAnIndex(t *testing.T) {
	// Some compatible servers stream every parallel call at index 0; each
	// call's first fragment carries its own ID.
	var a model.Accumulator
	for _, d := range []model.ToolCallDelta{
		{Index: 0, ID: "call_a", Name: "get_weather", Arguments: `{"city":`},
		{Index: 0, Arguments: `"Paris"}`},
		{Index: 0, ID: "call_b", Name: "get_time", Arguments: `{"tz":"UTC"}`},
		{Index: 0, ID: "call_b", Arguments: ``}, // a repeated ID continues its call
	} {
		a.Add(model.Chunk{ToolCall: &d})
	}
	calls := a.Response().Message.ToolCalls
	require.Len(t, calls, 2)
	assert.Equal(t, model.ToolCall{ID: "call_a", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}, calls[0])
	assert.Equal(t, model.ToolCall{ID: "call_b", Name: "get_time", Arguments: json.RawMessage(`{"tz":"UTC"}`)}, calls[1])
}
