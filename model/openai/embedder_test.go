package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/openai"
)

// embeddingsRequest is the body the embeddings endpoint receives.
type embeddingsRequest struct {
	Input          []string `json:"input"`
	Model          string   `json:"model"`
	Dimensions     int      `json:"dimensions"`
	EncodingFormat string   `json:"encoding_format"`
}

// embeddingsReply answers each input with [len(text), index, 1] in the
// endpoint's reply shape, listing the vectors in reverse order (the index
// field, not the order, says which text each is for).
func embeddingsReply(t *testing.T, r embeddingsRequest) string {
	t.Helper()
	var data []string
	for i := len(r.Input) - 1; i >= 0; i-- {
		data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[%d,%d,1]}`, i, len(r.Input[i]), i))
	}
	return `{"object":"list","data":[` + strings.Join(data, ",") + `],"model":"` + r.Model +
		`","usage":{"prompt_tokens":8,"total_tokens":8}}`
}

func newEmbedder(t *testing.T, s *server, opts ...openai.Option) (*openai.Embedder, *waits) {
	t.Helper()
	w := &waits{}
	base := []openai.Option{
		openai.WithBaseURL(s.URL + "/v1"),
		openai.WithAPIKey("sk-test"),
		openai.WithHTTPClient(s.Client),
		openai.WithRetry(model.Retry{MaxRetries: 2, Sleep: w.Sleep}),
	}
	e, err := openai.NewEmbedder("text-embedding-3-small", append(base, opts...)...)
	require.NoError(t, err)
	return e, w
}

func TestEmbedderSendsBatchesAndOrdersVectorsByIndex(t *testing.T) {
	var s *server
	s = newServer(t, func(w http.ResponseWriter, _ int) {
		calls := s.Received()
		var req embeddingsRequest
		require.NoError(t, json.Unmarshal([]byte(calls[len(calls)-1].Body), &req))
		writeJSON(w, http.StatusOK, embeddingsReply(t, req))
	})
	e, _ := newEmbedder(t, s, openai.WithEmbedBatch(2), openai.WithDimensions(3))
	assert.Equal(t, 3, e.Dimensions())
	vecs, err := e.Embed(t.Context(), []string{"a", "bb", "ccc", "dddd", "eeeee"})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 0, 1}, {2, 1, 1}, {3, 0, 1}, {4, 1, 1}, {5, 0, 1}}, vecs)

	calls := s.Received()
	require.Len(t, calls, 3, "five texts in batches of two")
	assert.Equal(t, "/v1/embeddings", calls[0].Path)
	assert.Equal(t, "Bearer sk-test", calls[0].Header.Get("Authorization"))
	var req embeddingsRequest
	require.NoError(t, json.Unmarshal([]byte(calls[0].Body), &req))
	assert.Equal(t, embeddingsRequest{Input: []string{"a", "bb"}, Model: "text-embedding-3-small", Dimensions: 3, EncodingFormat: "float"}, req)
}

func TestEmbedderRetriesTransientFailures(t *testing.T) {
	var s *server
	s = newServer(t, func(w http.ResponseWriter, attempt int) {
		if attempt == 1 {
			writeJSON(w, http.StatusTooManyRequests,
				`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "Retry-After-Ms", "20")
			return
		}
		calls := s.Received()
		var req embeddingsRequest
		require.NoError(t, json.Unmarshal([]byte(calls[len(calls)-1].Body), &req))
		writeJSON(w, http.StatusOK, embeddingsReply(t, req))
	})
	e, waited := newEmbedder(t, s)
	vecs, err := e.Embed(t.Context(), []string{"hello"})
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{5, 0, 1}}, vecs)
	assert.Len(t, s.Received(), 2)
	assert.Len(t, waited.All(), 1, "waited once, as asked")
}

func TestEmbedderReportsPermanentFailuresAsProviderErrors(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusBadRequest,
		`{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error","param":"input","code":null}}`))
	e, _ := newEmbedder(t, s)
	_, err := e.Embed(t.Context(), []string{"too long"})
	pe, ok := errors.AsType[*model.ProviderError](err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusBadRequest, pe.StatusCode)
	assert.False(t, model.IsTransient(err))
	assert.Len(t, s.Received(), 1, "not retried")
}

func TestEmbedderRejectsRepliesThatMissTexts(t *testing.T) {
	s := newServer(t, jsonReply(http.StatusOK,
		`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]}],"model":"m","usage":{"prompt_tokens":1,"total_tokens":1}}`))
	e, _ := newEmbedder(t, s)
	_, err := e.Embed(t.Context(), []string{"a", "b"})
	require.Error(t, err)
}

func TestNewEmbedderRejectsBadOptions(t *testing.T) {
	_, err := openai.NewEmbedder("")
	assert.Error(t, err)
	_, err = openai.NewEmbedder("m", openai.WithDimensions(0))
	assert.Error(t, err)
	_, err = openai.NewEmbedder("m", openai.WithEmbedBatch(-1))
	assert.Error(t, err)
}

func TestEmbedderGivesUpOnASilentServerAfterItsTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	s := newServer(t, func(w http.ResponseWriter, _ int) { <-release })
	e, _ := newEmbedder(t, s, openai.WithEmbedTimeout(50*time.Millisecond), openai.WithMaxRetries(1))
	start := time.Now()
	_, err := e.Embed(t.Context(), []string{"x"})
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Len(t, s.Received(), 2, "the timed-out attempt was tried again")
}
