package tool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
)

type verdict struct {
	Category   string  `json:"category" jsonschema:"enum=bug,enum=feature"`
	Confidence float64 `json:"confidence" jsonschema:"minimum=0,maximum=1"`
}

func TestSetModelResponseFromType(t *testing.T) {
	smr, err := NewSetModelResponse[verdict]()
	require.NoError(t, err)
	def := smr.Definition()
	assert.Equal(t, SetModelResponseName, def.Name)
	assert.JSONEq(t, `{"type":"object","properties":{"category":{"type":"string","enum":["bug","feature"]},"confidence":{"type":"number","minimum":0,"maximum":1}},"additionalProperties":false,"required":["category","confidence"]}`, string(def.InputSchema))
	assert.Contains(t, smr.Instruction(), `call the tool "set_model_response"`)
	assert.Equal(t, smr.Instruction(), CollectInstructions([]Tool{smr}))

	r := Invoke(context.Background(), smr, model.ToolCall{ID: "1", Name: SetModelResponseName, Arguments: json.RawMessage(`{"category":"bug","confidence":"0.9"}`)})
	require.False(t, r.IsError, r.Text())
	assert.True(t, r.Terminate, "the final answer ends the run")
	require.Len(t, r.Content, 1)
	assert.Equal(t, model.PartJSON, r.Content[0].Type)
	assert.JSONEq(t, `{"category":"bug","confidence":0.9}`, string(r.Content[0].JSON), "validated and coerced")

	r = Invoke(context.Background(), smr, model.ToolCall{ID: "1", Name: SetModelResponseName, Arguments: json.RawMessage(`{"category":"question","confidence":2}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.False(t, r.Terminate)
	assert.Contains(t, r.Text(), "$.category")
	assert.Contains(t, r.Text(), "$.confidence")

	direct, err := smr.Call(context.Background(), "1", json.RawMessage(`{"category":"feature","confidence":1}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"category":"feature","confidence":1}`, string(direct.Content[0].JSON))
	direct, err = smr.Call(context.Background(), "1", json.RawMessage(`{}`))
	require.NoError(t, err)
	assert.Equal(t, CodeInvalidArguments, direct.ErrorCode)
}

func TestSetModelResponseWrapsNonObjects(t *testing.T) {
	smr, err := NewSetModelResponse[[]string](WithResponseName("final_answer"), WithResponseDescription("The answer."), WithResponseInstruction("Answer with final_answer."))
	require.NoError(t, err)
	def := smr.Definition()
	assert.Equal(t, "final_answer", def.Name)
	assert.Equal(t, "The answer.", def.Description)
	assert.Equal(t, "Answer with final_answer.", smr.Instruction())
	assert.JSONEq(t, `{"type":"object","properties":{"response":{"type":"array","items":{"type":"string"}}},"required":["response"],"additionalProperties":false}`, string(def.InputSchema))
	r := Invoke(context.Background(), smr, model.ToolCall{ID: "1", Name: "final_answer", Arguments: json.RawMessage(`{"response":["a",2]}`)})
	require.False(t, r.IsError, r.Text())
	assert.JSONEq(t, `["a","2"]`, string(r.Content[0].JSON), "the value comes back unwrapped")

	// A hand-written schema with definitions keeps them reachable.
	raw := json.RawMessage(`{"type":"array","items":{"$ref":"#/$defs/item"},"$defs":{"item":{"type":"integer"}}}`)
	smr, err = NewSetModelResponseSchema(raw)
	require.NoError(t, err)
	r = Invoke(context.Background(), smr, model.ToolCall{ID: "1", Name: SetModelResponseName, Arguments: json.RawMessage(`{"response":[1,"x"]}`)})
	assert.Equal(t, CodeInvalidArguments, r.ErrorCode)
	assert.Contains(t, r.Text(), "$.response[1]")

	_, err = NewSetModelResponseSchema(json.RawMessage(`"nope"`))
	assert.ErrorIs(t, err, ErrInvalidSchema)
	_, err = NewSetModelResponseSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"bogus"}}}`))
	assert.ErrorIs(t, err, ErrInvalidSchema)
	_, err = NewSetModelResponse[verdict](WithResponseName("bad name"))
	assert.ErrorIs(t, err, ErrInvalidTool)
}

func TestRetrievalTool(t *testing.T) {
	var gotQuery string
	var gotLimit int
	corpus := []Document{
		{ID: "1", Content: "Go has goroutines.", Score: 0.9},
		{ID: "2", Content: "Channels connect goroutines.", Score: 0.8, Metadata: map[string]any{"source": "spec"}},
		{ID: "3", Content: "Maps are hash tables.", Score: 0.1},
	}
	r := RetrieverFunc(func(_ context.Context, query string, limit int) ([]Document, error) {
		gotQuery, gotLimit = query, limit
		if query == "fail" {
			return nil, errors.New("index offline")
		}
		return corpus, nil // returns more than asked: the tool cuts
	})
	rt, err := NewRetrieval("search_docs", "Search the Go docs", r)
	require.NoError(t, err)
	meta := MetadataOf(rt)
	assert.True(t, meta.ReadOnly && meta.SearchOrRead && meta.ConcurrencySafe)

	res := Invoke(context.Background(), rt, model.ToolCall{ID: "1", Name: "search_docs", Arguments: json.RawMessage(`{"query":"goroutines","limit":"2"}`)})
	require.False(t, res.IsError, res.Text())
	assert.Equal(t, "goroutines", gotQuery)
	assert.Equal(t, 2, gotLimit)
	assert.JSONEq(t, `[{"id":"1","content":"Go has goroutines.","score":0.9},{"id":"2","content":"Channels connect goroutines.","score":0.8,"metadata":{"source":"spec"}}]`, string(res.Content[0].JSON))

	res = Invoke(context.Background(), rt, model.ToolCall{ID: "1", Name: "search_docs", Arguments: json.RawMessage(`{"query":"maps"}`)})
	require.False(t, res.IsError)
	assert.Equal(t, DefaultRetrievalLimit, gotLimit)

	res = Invoke(context.Background(), rt, model.ToolCall{ID: "1", Name: "search_docs", Arguments: json.RawMessage(`{"query":""}`)})
	assert.Equal(t, CodeInvalidArguments, res.ErrorCode)
	res = Invoke(context.Background(), rt, model.ToolCall{ID: "1", Name: "search_docs", Arguments: json.RawMessage(`{"query":"x","limit":51}`)})
	assert.Equal(t, CodeInvalidArguments, res.ErrorCode)
	res = Invoke(context.Background(), rt, model.ToolCall{ID: "1", Name: "search_docs", Arguments: json.RawMessage(`{"query":"fail"}`)})
	assert.Equal(t, CodeToolError, res.ErrorCode)
	assert.Contains(t, res.Text(), "index offline")

	empty, err := NewRetrieval("nothing", "", RetrieverFunc(func(context.Context, string, int) ([]Document, error) { return nil, nil }),
		WithMetadata(Metadata{OpenWorld: true}))
	require.NoError(t, err)
	assert.True(t, MetadataOf(empty).OpenWorld, "options override the default metadata")
	res = Invoke(context.Background(), empty, model.ToolCall{ID: "1", Name: "nothing", Arguments: json.RawMessage(`{"query":"x"}`)})
	assert.Equal(t, `[]`, string(res.Content[0].JSON))

	_, err = NewRetrieval("x", "", nil)
	assert.ErrorIs(t, err, ErrInvalidTool)
}
