package gemini_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/gemini"
)

func TestStreamYieldsThoughtsThenTextAndKeepsTheSignature(t *testing.T) {
	s := newServer(t, sseReply(streamThinkingText))
	m, _ := newModel(t, s, gemini.WithThoughts())
	var chunks []model.Chunk
	for c, err := range m.Stream(context.Background(), userReq("Why is the sky blue?")) {
		require.NoError(t, err)
		chunks = append(chunks, c)
	}
	require.NotEmpty(t, chunks)
	require.NotNil(t, chunks[0].Reasoning, "the thought comes first")
	var acc model.Accumulator
	for _, c := range chunks {
		acc.Add(c)
	}
	resp := acc.Response()
	assert.Equal(t, "The sky is blue because air scatters blue light most.", resp.Message.Text())
	assert.Contains(t, resp.Message.Reasoning(), "Rayleigh")
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Equal(t, model.Usage{InputTokens: 8, OutputTokens: 64, TotalTokens: 72}, resp.Usage)
	assert.Equal(t, "Cp8BAVSoXO4=", resp.Message.Metadata[gemini.MetaTextSignature])

	calls := s.Received()
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:streamGenerateContent", calls[0].Path)

	// The text's signature goes back on the text.
	_, err := model.Collect(m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.User("q"), resp.Message, model.User("more")}}))
	require.NoError(t, err)
	assert.Contains(t, s.Received()[1].Body, `{"text":"The sky is blue because air scatters blue light most.","thoughtSignature":"Cp8BAVSoXO4="}`)
}

func TestStreamOfCallsAgreesWithGenerate(t *testing.T) {
	s := newServer(t, sseReply(streamCalls))
	m, _ := newModel(t, s)
	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "tool_calls", resp.FinishReason)
	require.Len(t, resp.Message.ToolCalls, 2)
	assert.Equal(t, "get_weather", resp.Message.ToolCalls[0].Name)
	assert.JSONEq(t, `{"timezone":"Europe/Paris"}`, string(resp.Message.ToolCalls[1].Arguments))
	assert.Equal(t, "CiQBVKhc7Q==", resp.Message.Metadata[gemini.MetaCallSignature+resp.Message.ToolCalls[0].ID])
	assert.Equal(t, model.Usage{InputTokens: 50, OutputTokens: 20, TotalTokens: 70}, resp.Usage)
}

// An error event before anything was yielded is retried like an error
// status; the same error after the reply began ends the stream.
func TestStreamErrorsAreRetriedOnlyBeforeTheReplyBegins(t *testing.T) {
	errorEvent := func(w http.ResponseWriter, _ int) { sse(w, []string{errorOverloaded}) }
	s := newServer(t, sequence(errorEvent, sseReply(streamThinkingText)))
	m, w := newModel(t, s)
	resp, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.NoError(t, err)
	assert.Equal(t, "stop", resp.FinishReason)
	assert.Len(t, w.All(), 1)

	s = newServer(t, sseReply([]string{streamThinkingText[1], errorOverloaded}))
	m, w = newModel(t, s)
	_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
	pe, ok := errors.AsType[*model.ProviderError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 503, pe.StatusCode)
	assert.Empty(t, w.All())
	assert.Len(t, s.Received(), 1)
}

func TestStreamCutShortIsAnError(t *testing.T) {
	s := newServer(t, sseReply(streamThinkingText[:2]))
	m, _ := newModel(t, s, gemini.WithMaxRetries(0))
	_, err := model.Collect(m.Stream(context.Background(), userReq("x")))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	s = newServer(t, sseReply(nil))
	m, w := newModel(t, s)
	_, err = model.Collect(m.Stream(context.Background(), userReq("x")))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Len(t, w.All(), 2, "an empty stream is retried")
}

func TestStreamThatStopsEarlyLeavesNothingRunning(t *testing.T) {
	s := newServer(t, sseReply(streamThinkingText))
	m, _ := newModel(t, s)
	for _, err := range m.Stream(context.Background(), userReq("x")) {
		require.NoError(t, err)
		break
	}
	// goleak in TestMain checks that the stream's body was closed.
}
