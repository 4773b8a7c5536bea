package tokens_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/openai/tokens"
)

// jargon is the conversation of OpenAI's published example of counting
// chat tokens; the API reports 129 prompt tokens for it on gpt-3.5-turbo
// and gpt-4, and 124 on gpt-4o and gpt-4o-mini.
func jargon() []model.Message {
	named := func(name, text string) model.Message {
		m := model.System(text)
		m.Name = name
		return m
	}
	return []model.Message{
		model.System("You are a helpful, pattern-following assistant that translates corporate jargon into plain English."),
		named("example_user", "New synergies will help drive top-line growth."),
		named("example_assistant", "Things working well together will increase revenue."),
		named("example_user", "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."),
		named("example_assistant", "Let's talk later when we're less busy about how to do better."),
		model.User("This late pivot means we don't have time to boil the ocean for the client deliverable."),
	}
}

func TestCounterMatchesTheAPIsCountOfAChat(t *testing.T) {
	for name, want := range map[string]int{
		"gpt-3.5-turbo":          129,
		"gpt-4-0613":             129,
		"gpt-4":                  129,
		"gpt-4o":                 124,
		"gpt-4o-mini-2024-07-18": 124,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := tokens.New(name)
			require.NoError(t, err)
			n, err := c.CountTokens(t.Context(), &model.Request{Messages: jargon()})
			require.NoError(t, err)
			assert.Equal(t, want, n)
		})
	}
}

func TestCounterUsesTheRequestsModelOverTheDefault(t *testing.T) {
	c, err := tokens.New("gpt-4o")
	require.NoError(t, err)
	n, err := c.CountTokens(t.Context(), &model.Request{Model: "gpt-4", Messages: jargon()})
	require.NoError(t, err)
	assert.Equal(t, 129, n)
}

func TestCounterCountsTextExactly(t *testing.T) {
	c, err := tokens.ForEncoding(tokens.Cl100kBase)
	require.NoError(t, err)
	// "tiktoken is great!" is 6 tokens in cl100k_base, by OpenAI's
	// published example.
	n, err := c.CountText("tiktoken is great!")
	require.NoError(t, err)
	assert.Equal(t, 6, n)
}

func TestCounterCountsToolCallsAndDefinitions(t *testing.T) {
	c, err := tokens.New("gpt-4o")
	require.NoError(t, err)
	ask := &model.Request{Messages: []model.Message{model.User("Weather in Paris?")}}
	base, err := c.CountTokens(t.Context(), ask)
	require.NoError(t, err)

	call := model.Assistant("")
	call.ToolCalls = []model.ToolCall{{ID: "c1", Name: "get_weather", Arguments: []byte(`{"city":"Paris"}`)}}
	withCall := &model.Request{Messages: append(ask.Messages, call, model.ToolMessage("c1", "get_weather", false, model.TextPart("18C, sunny")))}
	n, err := c.CountTokens(t.Context(), withCall)
	require.NoError(t, err)
	assert.Greater(t, n, base+2*tokens.TokensPerMessage, "the call and its result add their text and overhead")

	// OpenAI's rule for a function with one property of an enum:
	// 7 + "get_weather:Get the weather" + 3 + 3 + (-3 + 3+1 + 3+1) +
	// "unit:string:" + 12.
	withTool := &model.Request{Messages: ask.Messages, Tools: []model.ToolDefinition{{
		Name: "get_weather", Description: "Get the weather.",
		InputSchema: []byte(`{"type":"object","properties":{"unit":{"type":"string","enum":["C","F"]}}}`),
	}}}
	m, err := c.CountTokens(t.Context(), withTool)
	require.NoError(t, err)
	line, _ := c.CountText("get_weather:Get the weather")
	prop, _ := c.CountText("unit:string:")
	assert.Equal(t, base+7+line+3+3+(-3+4+4)+prop+12, m)
}

func TestEncodingForKnowsTheFamilies(t *testing.T) {
	for name, want := range map[string]tokens.Encoding{
		"gpt-5-mini": tokens.O200kBase, "o3": tokens.O200kBase, "gpt-4.1-nano": tokens.O200kBase,
		"openai/gpt-4o": tokens.O200kBase, "gpt-4-turbo": tokens.Cl100kBase, "ft:gpt-3.5-turbo:acme": tokens.Cl100kBase,
	} {
		got, err := tokens.EncodingFor(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
	_, err := tokens.EncodingFor("llama3")
	assert.True(t, errors.Is(err, tokens.ErrUnknownModel))
	_, err = tokens.New("llama3")
	assert.ErrorIs(t, err, tokens.ErrUnknownModel)
}
