package anthropic_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/model/modelmw"
)

var _ modelmw.TokenCounter = (*anthropic.Model)(nil)

func TestCountTokensAsksTheCountEndpoint(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, `{"input_tokens": 2095}`))
	m, _ := newModel(t, s)
	n, err := m.CountTokens(t.Context(), &model.Request{
		Messages: []model.Message{model.System("Be brief."), model.User("Hello, Claude")},
		Tools:    []model.ToolDefinition{{Name: "get_weather", Description: "Weather of a city.", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
	})
	require.NoError(t, err)
	assert.Equal(t, 2095, n)

	calls := s.Received()
	require.Len(t, calls, 1)
	assert.Equal(t, http.MethodPost, calls[0].Method)
	assert.Equal(t, "/v1/messages/count_tokens", calls[0].Path)
	var sent struct {
		Model    string            `json:"model"`
		System   []json.RawMessage `json:"system"`
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		MaxTokens *int `json:"max_tokens"`
	}
	require.NoError(t, json.Unmarshal([]byte(calls[0].Body), &sent))
	assert.Equal(t, "claude-sonnet-4-5", sent.Model)
	assert.Len(t, sent.System, 1)
	require.Len(t, sent.Messages, 1)
	assert.Equal(t, "user", sent.Messages[0].Role)
	require.Len(t, sent.Tools, 1)
	assert.Equal(t, "get_weather", sent.Tools[0].Name)
	assert.Nil(t, sent.MaxTokens, "the count endpoint takes no max_tokens")
}

func TestCountTokensReportsTheAPIsError(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"}}`))
	m, _ := newModel(t, s)
	_, err := m.CountTokens(t.Context(), &model.Request{Messages: []model.Message{model.User("x")}})
	require.Error(t, err)
	assert.ErrorIs(t, err, model.ErrBadRequest)
}
