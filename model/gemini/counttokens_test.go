package gemini_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/gemini"
	"github.com/trellis-go/trellis/model/modelmw"
)

var _ modelmw.TokenCounter = (*gemini.Model)(nil)

func TestCountTokensAsksTheCountEndpoint(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, `{"totalTokens": 31}`))
	m, _ := newModel(t, s)
	n, err := m.CountTokens(t.Context(), &model.Request{
		Messages: []model.Message{model.System("Be brief."), model.User("The quick brown fox jumps over the lazy dog.")},
	})
	require.NoError(t, err)
	assert.Equal(t, 31, n)

	calls := s.Received()
	require.Len(t, calls, 1)
	assert.Equal(t, http.MethodPost, calls[0].Method)
	assert.Equal(t, "/v1beta/models/gemini-2.5-flash:countTokens", calls[0].Path)
	var sent struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
	}
	require.NoError(t, json.Unmarshal([]byte(calls[0].Body), &sent))
	require.Len(t, sent.Contents, 2, "the system instruction is counted as a first turn")
	assert.Equal(t, "Be brief.", sent.Contents[0].Parts[0].Text)
	assert.Equal(t, "user", sent.Contents[1].Role)
}

func TestCountTokensEstimatesToolDefinitions(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK, `{"totalTokens": 10}`))
	m, _ := newModel(t, s)
	tools := []model.ToolDefinition{{Name: "get_weather", Description: "Weather of a city.", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	n, err := m.CountTokens(t.Context(), &model.Request{Messages: []model.Message{model.User("hi")}, Tools: tools})
	require.NoError(t, err)
	assert.Equal(t, 10+modelmw.EstimateTokens(&model.Request{Tools: tools}), n)
	assert.NotContains(t, s.Received()[0].Body, "get_weather", "the endpoint takes no tools")
}

func TestCountTokensReportsTheAPIsError(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusBadRequest, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`))
	m, _ := newModel(t, s)
	_, err := m.CountTokens(t.Context(), userReq("x"))
	assert.ErrorIs(t, err, model.ErrBadRequest)
}
