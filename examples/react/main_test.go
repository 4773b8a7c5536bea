package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/examples/internal/fakeprovider"
	"github.com/trellis-go/trellis/model"
)

// The Gemini SDK's dependencies bring in OpenCensus, whose package init
// starts a worker that runs for the life of the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestReactExampleRunsOffline(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, start(context.Background(), &out, env(nil), nil))
	s := out.String()
	assert.Contains(t, s, "model: scripted (offline")
	assert.Contains(t, s, "question: "+question)

	// Both calls are one batch: both start before either ends.
	lines := strings.Split(s, "\n")
	// The model sent "25", a string; the call starts with the number the
	// schema asks for: events show the arguments the tool runs with.
	addStart := indexOf(lines, `tool  ▶ add {"a":17,"b":25}`)
	weatherStart := indexOf(lines, `tool  ▶ get_weather {"city": "Lisbon"}`)
	firstEnd := indexOf(lines, "tool  ✓ ")
	require.True(t, addStart >= 0 && weatherStart >= 0 && firstEnd >= 0, s)
	assert.Less(t, addStart, firstEnd)
	assert.Less(t, weatherStart, firstEnd)

	assert.Contains(t, s, "tool  ✓ add → 42 (success, ")
	assert.Contains(t, s, "tool  ✓ get_weather → Lisbon: 21°C, clear sky (success, ")
	assert.Equal(t, 2, strings.Count(s, "model   scripted answered"))
	assert.True(t, strings.HasSuffix(s, "\nanswer: 17 + 25 = 42; weather in Lisbon: 21°C, clear sky.\n"), s)
}

func TestOfflineIgnoresAnotherQuestionAndSaysSo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, start(context.Background(), &out, env(nil), []string{"What", "is", "2+2?"}))
	assert.Contains(t, out.String(), "(the offline script answers its own question only)\nquestion: "+question)
	assert.Contains(t, out.String(), "answer: 17 + 25 = 42")
}

func TestOfflineScriptFailsCleanlyOnUnexpectedInput(t *testing.T) {
	m := offline()
	_, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("hi")}})
	require.NoError(t, err) // the first step calls the tools
	_, err = m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("hi")}})
	require.ErrorContains(t, err, "want 2 tool results, got 0")
}

func TestBadProviderSettingsAreReported(t *testing.T) {
	var out bytes.Buffer
	err := start(context.Background(), &out, env(map[string]string{"TRELLIS_PROVIDER": "mistral"}), nil)
	require.ErrorContains(t, err, `TRELLIS_PROVIDER="mistral": unknown provider`)
	err = start(context.Background(), &out, env(map[string]string{"OPENAI_BASE_URL": "localhost:11434"}), nil)
	require.ErrorContains(t, err, "OPENAI_BASE_URL")
	assert.Empty(t, out.String(), "nothing runs")
}

func TestCancelledRunStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	err := start(ctx, &out, env(nil), nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), err)
}

// agentPolicy plays the model on a fake provider: it calls both tools, then
// answers from their results.
func agentPolicy(r fakeprovider.Request) fakeprovider.Reply {
	results := r.ToolResults()
	if len(results) == 0 {
		return fakeprovider.Reply{Calls: []fakeprovider.Call{
			{Name: "add", Arguments: `{"a":17,"b":25}`},
			{Name: "get_weather", Arguments: `{"city":"Lisbon"}`},
		}}
	}
	return fakeprovider.Reply{Text: "17 + 25 = " + results[0] + "; weather in " + results[1] + "."}
}

func TestReactExampleRunsOnAProvider(t *testing.T) {
	cases := []struct {
		name  string
		start func(testing.TB, fakeprovider.Policy) *fakeprovider.Server
		env   func(url string) map[string]string
		model string
	}{
		{"openai", fakeprovider.OpenAI, func(url string) map[string]string {
			return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": url}
		}, "gpt-4o-mini"},
		{"anthropic", fakeprovider.Anthropic, func(url string) map[string]string {
			return map[string]string{"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": url}
		}, "claude-haiku-4-5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := c.start(t, agentPolicy)
			var out bytes.Buffer
			require.NoError(t, start(context.Background(), &out, env(c.env(srv.URL)), []string{"Sum", "and", "weather?"}))
			s := out.String()
			assert.Contains(t, s, "model: "+c.name+" "+c.model+" at "+srv.URL)
			assert.Contains(t, s, "question: Sum and weather?\n")
			assert.Equal(t, 2, strings.Count(s, "model   "+c.model+" answered (11 tokens in, 7 out)"), s)
			assert.Contains(t, s, `tool  ▶ add {"a":17,"b":25}`)
			assert.Contains(t, s, "tool  ✓ get_weather → Lisbon: 21°C, clear sky (success, ")
			assert.Contains(t, s, "answer: 17 + 25 = 42; weather in Lisbon: 21°C, clear sky.")

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			for _, r := range reqs {
				assert.Equal(t, "sk-test", r.Key)
				assert.Equal(t, c.model, r.Model)
				assert.Contains(t, r.System, "You are a concise assistant.")
				assert.ElementsMatch(t, []string{"add", "get_weather"}, r.Tools)
				assert.Equal(t, "Sum and weather?", r.LastUser())
			}
			assert.Equal(t, []string{"42", "Lisbon: 21°C, clear sky"}, reqs[1].ToolResults(), "the model read both results, in call order")
		})
	}
}

func indexOf(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

func TestUnreachableProviderIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the retries, seconds (skipped with -short)")
	}
	srv := fakeprovider.OpenAI(t, agentPolicy)
	url := srv.URL
	srv.Close() // nothing listens there any more
	var out bytes.Buffer
	err := start(context.Background(), &out, env(map[string]string{"OPENAI_BASE_URL": url}), nil)
	require.ErrorContains(t, err, "connection refused")
	assert.Contains(t, out.String(), "model   gpt-4o-mini failed after ")
	assert.NotContains(t, out.String(), "answered")
}
