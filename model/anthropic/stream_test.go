package anthropic_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

// message_delta carries cumulative counts field by field: a field it leaves
// out keeps the value message_start gave it.
func TestStreamUsageIsUpdatedFieldByField(t *testing.T) {
	start := event{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":10,"cache_read_input_tokens":28,"output_tokens":1}}}`}
	tail := func(usage string) []event {
		return []event{
			start,
			streamText[1], streamText[3], streamText[5],
			{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":` + usage + `}`},
			streamText[7],
		}
	}
	tests := []struct {
		name  string
		usage string
		want  model.Usage
	}{
		{"output only", `{"output_tokens":15}`, model.Usage{InputTokens: 510, OutputTokens: 15, TotalTokens: 525, CachedInputTokens: 28}},
		{"input without cache fields", `{"input_tokens":472,"output_tokens":15}`, model.Usage{InputTokens: 510, OutputTokens: 15, TotalTokens: 525, CachedInputTokens: 28}},
		{"cache read only", `{"cache_read_input_tokens":40,"output_tokens":15}`, model.Usage{InputTokens: 522, OutputTokens: 15, TotalTokens: 537, CachedInputTokens: 40}},
		{"every field", `{"input_tokens":480,"cache_creation_input_tokens":0,"cache_read_input_tokens":28,"output_tokens":15}`, model.Usage{InputTokens: 508, OutputTokens: 15, TotalTokens: 523, CachedInputTokens: 28}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, sseReply(tail(tt.usage)))
			m, _ := newModel(t, s)
			resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
			require.NoError(t, err)
			assert.Equal(t, tt.want, resp.Usage)
		})
	}
}

// An overloaded_error that follows message_start, before any text or tool
// call, is retried: nothing of the reply was yielded.
func TestStreamErrorBeforeContentIsRetried(t *testing.T) {
	s := newServer(t, sequence(
		sseReply([]event{streamText[0], streamText[1], streamText[2], {"error", errorOverloadedEvent}}),
		sseReply(streamText[:3]), // cut short before any text
		sseReply(streamText),
	))
	m, w := newModel(t, s)
	var chunks []model.Chunk
	for c, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		chunks = append(chunks, c)
	}
	assert.Len(t, s.Received(), 3)
	assert.Len(t, w.All(), 2)
	require.Len(t, chunks, 4, "the chunks of the reply, once each")
	assert.Equal(t, model.Chunk{Model: "claude-sonnet-4-5-20250929"}, chunks[0])
	assert.Equal(t, "Paris", chunks[1].Text)
	assert.Equal(t, " is sunny.", chunks[2].Text)
	assert.Equal(t, "stop", chunks[3].FinishReason)
}

// A reply with no content at all is complete, not an error.
func TestStreamEmptyReply(t *testing.T) {
	s := newServer(t, sseReply([]event{streamText[0], streamText[6], streamText[7]}))
	m, w := newModel(t, s)
	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Empty(t, resp.Message.Content)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, model.Usage{InputTokens: 25, OutputTokens: 15, TotalTokens: 40}, resp.Usage)
	assert.Len(t, s.Received(), 1)
	assert.Empty(t, w.All())
}

// An error event of a type Anthropic does not document has no HTTP status:
// the stream began with 200, which is not the error's.
func TestStreamErrorEventOfUnknownType(t *testing.T) {
	events := append(append([]event{}, streamText[:4]...),
		event{"error", `{"type":"error","error":{"type":"mystery_error","message":"Something odd"}}`})
	s := newServer(t, sseReply(events))
	m, _ := newModel(t, s)
	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	var pe *model.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 0, pe.StatusCode)
	assert.Equal(t, "mystery_error", pe.Type)
	assert.Equal(t, "Something odd", pe.Message)
	assert.NotContains(t, err.Error(), "200")
}

// Cancelling the context while the server holds the stream open ends the
// sequence with the context's error and releases the connection.
func TestStreamCancelMidStream(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newServer(t, func(w http.ResponseWriter, _ int) {
		sse(w, streamText[:4])
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
	m, w := newModel(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var texts []string
	var gotErr error
	for c, err := range m.Stream(ctx, userReq("x")) {
		if err != nil {
			gotErr = err
			break
		}
		if c.Text != "" {
			texts = append(texts, c.Text)
			cancel()
		}
	}
	assert.Equal(t, []string{"Paris"}, texts)
	require.ErrorIs(t, gotErr, context.Canceled)
	assert.False(t, errors.Is(gotErr, io.ErrUnexpectedEOF))
	assert.Empty(t, w.All())
}
