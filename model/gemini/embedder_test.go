package gemini_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/gemini"
)

// batchEmbedRequest is the body of the Gemini API's batchEmbedContents.
type batchEmbedRequest struct {
	Requests []embedRequest `json:"requests"`
}

// embedRequest is one text's request in a batch (the shape of
// embedContent's body, with the model named in each).
type embedRequest struct {
	Model   string `json:"model"`
	Content struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"content"`
	TaskType             string `json:"taskType,omitempty"`
	OutputDimensionality int    `json:"outputDimensionality,omitempty"`
}

// batchEmbedReply answers each request with [len(text), index, 1] in the
// reply's shape: {"embeddings": [{"values": [...]}, ...]}, in order.
func batchEmbedReply(r batchEmbedRequest, offset int) string {
	var out []string
	for i, req := range r.Requests {
		out = append(out, fmt.Sprintf(`{"values": [%d, %d, 1]}`, len(req.Content.Parts[0].Text), offset+i))
	}
	return `{"embeddings": [` + strings.Join(out, ", ") + `]}`
}

func newEmbedder(t *testing.T, s *server, opts ...gemini.Option) (*gemini.Embedder, *waits) {
	t.Helper()
	w := &waits{}
	base := []gemini.Option{
		gemini.WithBaseURL(s.URL),
		gemini.WithAPIKey("test-key"),
		gemini.WithHTTPClient(s.Client),
		gemini.WithRetry(model.Retry{MaxRetries: 2, Sleep: w.Sleep}),
	}
	e, err := gemini.NewEmbedder("gemini-embedding-001", append(base, opts...)...)
	require.NoError(t, err)
	return e, w
}

func TestEmbedderSendsBatchEmbedContentsInBatches(t *testing.T) {
	var s *server
	seen := 0
	s = newServer(t, func(w http.ResponseWriter, _ int) {
		calls := s.Received()
		var req batchEmbedRequest
		require.NoError(t, json.Unmarshal([]byte(calls[len(calls)-1].Body), &req))
		writeJSON(w, http.StatusOK, batchEmbedReply(req, seen))
		seen += len(req.Requests)
	})
	e, _ := newEmbedder(t, s, gemini.WithEmbedBatch(2), gemini.WithDimensions(3), gemini.WithTaskType("semantic_similarity"))
	assert.Equal(t, 3, e.Dimensions())
	vecs, err := e.Embed(t.Context(), []string{"a", "bb", "ccc", "dddd", "eeeee"})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 0, 1}, {2, 1, 1}, {3, 2, 1}, {4, 3, 1}, {5, 4, 1}}, vecs)

	calls := s.Received()
	require.Len(t, calls, 3, "five texts in batches of two")
	assert.Equal(t, http.MethodPost, calls[0].Method)
	assert.Equal(t, "/v1beta/models/gemini-embedding-001:batchEmbedContents", calls[0].Path)
	assert.Equal(t, "test-key", calls[0].Header.Get("x-goog-api-key"))
	var req batchEmbedRequest
	require.NoError(t, json.Unmarshal([]byte(calls[0].Body), &req))
	require.Len(t, req.Requests, 2)
	for i, text := range []string{"a", "bb"} {
		r := req.Requests[i]
		assert.Equal(t, "models/gemini-embedding-001", r.Model)
		require.Len(t, r.Content.Parts, 1)
		assert.Equal(t, text, r.Content.Parts[0].Text)
		assert.Equal(t, "SEMANTIC_SIMILARITY", r.TaskType)
		assert.Equal(t, 3, r.OutputDimensionality)
	}
}

func TestEmbedderRetriesTransientFailures(t *testing.T) {
	s := newServer(t, sequence(jsonReply(http.StatusTooManyRequests, errorRateLimited), jsonReply(http.StatusOK, `{"embeddings": [{"values": [0.5, -0.25]}]}`)))
	e, w := newEmbedder(t, s)
	vecs, err := e.Embed(t.Context(), []string{"hello"})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{0.5, -0.25}}, vecs)
	assert.Len(t, s.Received(), 2)
	assert.Equal(t, "17s", w.All()[0].String(), "the wait RetryInfo asks for")
	assert.Equal(t, 0, e.Dimensions(), "the model's own size")
}

func TestEmbedderErrorsAreClassifiedAndNotRetried(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusBadRequest, errorInvalidArgument))
	e, _ := newEmbedder(t, s)
	_, err := e.Embed(t.Context(), []string{"hello"})
	pe, ok := errors.AsType[*model.ProviderError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, "gemini", pe.Provider)
	assert.Equal(t, http.StatusBadRequest, pe.StatusCode)
	assert.Equal(t, "INVALID_ARGUMENT", pe.Type)
	assert.False(t, model.IsTransient(err))
	assert.Len(t, s.Received(), 1)
}

func TestEmbedderRefusesAReplyOfTheWrongLength(t *testing.T) {
	for name, body := range map[string]string{
		"too few":      `{"embeddings": [{"values": [1]}]}`,
		"empty vector": `{"embeddings": [{"values": [1]}, {"values": []}]}`,
	} {
		s := newServer(t, jsonReply(http.StatusOK, body))
		e, _ := newEmbedder(t, s)
		_, err := e.Embed(t.Context(), []string{"a", "b"})
		assert.Error(t, err, name)
	}
}

func TestNewEmbedderChecksItsOptions(t *testing.T) {
	for name, opts := range map[string][]gemini.Option{
		"dimensions": {gemini.WithDimensions(0)},
		"batch":      {gemini.WithEmbedBatch(-1)},
		"timeout":    {gemini.WithEmbedTimeout(0)},
		"task type":  {gemini.WithTaskType(" ")},
	} {
		_, err := gemini.NewEmbedder("gemini-embedding-001", append(opts, gemini.WithAPIKey("k"))...)
		assert.Error(t, err, name)
	}
	_, err := gemini.NewEmbedder("", gemini.WithAPIKey("k"))
	assert.Error(t, err)
}
