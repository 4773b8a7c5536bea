package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/fakeprovider"
	"github.com/trellis-go/trellis/examples/supervisor/system"
)

// The Gemini SDK's dependencies bring in OpenCensus, whose package init
// starts a worker that runs for the life of the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// offline is an environment without provider keys.
func offline(string) string { return "" }

func TestSupervisorRunsOffline(t *testing.T) {
	var out bytes.Buffer
	st, err := run(context.Background(), &out, offline, "ignored offline", agent.TraceDurations(0), agent.TraceWidth(0))
	require.NoError(t, err)
	s := out.String()
	lines := strings.Split(s, "\n")

	assert.Contains(t, s, "models: scripted (offline")
	assert.Contains(t, s, "question: "+question)

	// The first turn starts both handoffs before any worker has done
	// anything: they run side by side.
	first := indexOf(lines, "supervisor → researcher ")
	second := indexOf(lines, "supervisor → writer ")
	firstWorkerLine := indexOf(lines, "  supervisor › ")
	require.True(t, first >= 0 && second >= 0 && firstWorkerLine >= 0, s)
	assert.Less(t, first, firstWorkerLine)
	assert.Less(t, second, firstWorkerLine)

	// Each worker uses its own tools, under its own label.
	assert.Contains(t, s, `  supervisor › researcher → search {"query":"goroutine"}`)
	assert.Contains(t, s, `  supervisor › researcher → search {"query":"scheduler"}`)
	assert.Equal(t, 2, strings.Count(s, "  supervisor › writer → style_guide {}"), "the writer ran twice")
	assert.NotContains(t, s, "supervisor › researcher → style_guide")
	assert.Contains(t, s, "  supervisor › writer » Meet the goroutine\n")
	assert.Contains(t, s, "supervisor ✓ writer: Meet the goroutine\n")

	// The second turn hands the facts and the title to the writer.
	assert.Equal(t, 2, strings.Count(s, "supervisor → writer "))
	assert.Contains(t, s, `"context":"Title: Meet the goroutine\n\nFacts:\n- A goroutine is a function`)

	// The middleware at work: the first search failed with a transient
	// error and was retried (a line in the trace, three searches for two
	// calls); the writer's second read of the style guide came from the
	// cache.
	assert.Contains(t, s, `  supervisor › researcher • retry: search attempt 1 failed, trying again: tool "search" failed: notes service: 503 Service Unavailable`)
	assert.Equal(t, 2, strings.Count(s, "  supervisor › researcher ✓ search: "))
	assert.Equal(t, int32(3), st.Searches.Load())
	assert.Equal(t, int32(1), st.GuideReads.Load())

	// The answer is the writer's paragraph, printed in full, and nothing failed.
	assert.Contains(t, s, "supervisor » Meet the goroutine\n\n  A goroutine is a function running concurrently with other goroutines in the same address space; a go statement starts one: go f(x). A goroutine starts with a small stack")
	assert.Contains(t, s, "when one goroutine blocks, the others keep running.\nsupervisor ■ done: 9 model calls · 7 tool calls\n")
	assert.NotContains(t, s, "✗")
}

func TestChooseModels(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"offline", nil, "scripted"},
		{"openai", map[string]string{"OPENAI_API_KEY": "k"}, "openai gpt-4o-mini"},
		{"openai-compatible server", map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1", "OPENAI_MODEL": "llama3.2"}, "openai llama3.2"},
		{"anthropic", map[string]string{"ANTHROPIC_API_KEY": "k"}, "anthropic claude-haiku-4-5"},
		{"anthropic model", map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_MODEL": "claude-sonnet-4-5"}, "anthropic claude-sonnet-4-5"},
		{"offline by name", map[string]string{"TRELLIS_PROVIDER": "scripted", "OPENAI_API_KEY": "k"}, "scripted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			team, err := chooseModels(func(k string) string { return tc.env[k] })
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(team.describe, tc.want), team.describe)
			assert.Equal(t, tc.want == "scripted", team.offline)
			require.NotNil(t, team.Supervisor)
			_, err = system.Build(team.Models, &system.Stats{})
			require.NoError(t, err, "the system builds on every provider")
		})
	}
}

func TestBadProviderSettingsAreReported(t *testing.T) {
	for env, want := range map[string]string{
		"TRELLIS_PROVIDER": `TRELLIS_PROVIDER="mistral": unknown provider; want openai, anthropic, gemini or scripted`,
		"OPENAI_BASE_URL":  `OPENAI_BASE_URL: openai: invalid base URL "mistral"`,
	} {
		var out bytes.Buffer
		_, err := run(context.Background(), &out, func(k string) string {
			if k == env {
				return "mistral"
			}
			return ""
		}, question)
		require.ErrorContains(t, err, want)
		assert.Empty(t, out.String(), "nothing runs")
	}
}

func TestOfflineRunSaysItIgnoresAnotherQuestion(t *testing.T) {
	var out bytes.Buffer
	_, err := run(context.Background(), &out, offline, "What is a channel?", agent.TraceDurations(0))
	require.NoError(t, err)
	assert.Contains(t, out.String(), "(the offline scripts answer their own question only)\nquestion: "+question+"\n")
}

// team plays the three agents on a fake provider, telling them apart by the
// tools each is offered.
func team(t *testing.T) fakeprovider.Policy {
	return func(r fakeprovider.Request) fakeprovider.Reply { return play(t, r) }
}

func play(t *testing.T, r fakeprovider.Request) fakeprovider.Reply {
	results := r.ToolResults()
	switch {
	case r.HasTool("researcher") && r.HasTool("writer"): // the supervisor
		switch len(results) {
		case 0:
			return fakeprovider.Reply{Text: "Both at once.", Calls: []fakeprovider.Call{
				{Name: "researcher", Arguments: `{"task":"Find facts about goroutines."}`},
				{Name: "writer", Arguments: `{"task":"Propose a title about goroutines."}`},
			}}
		case 2:
			args, err := json.Marshal(map[string]string{"task": "Write a paragraph.", "context": "Title: " + results[1] + "\n\nFacts:\n" + results[0]})
			if err != nil {
				t.Errorf("handoff arguments: %v", err)
			}
			return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "writer", Arguments: string(args)}}}
		default:
			return fakeprovider.Reply{Text: results[len(results)-1]}
		}
	case r.HasTool("search"): // the researcher
		if len(results) == 0 {
			return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "search", Arguments: `{"query":"stack"}`}}}
		}
		return fakeprovider.Reply{Text: "- " + strings.Join(results, "\n- ")}
	case r.HasTool("style_guide"): // the writer
		if len(results) == 0 {
			return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "style_guide", Arguments: `{}`}}}
		}
		if strings.Contains(r.LastUser(), "Propose a title") {
			return fakeprovider.Reply{Text: "Meet the goroutine"}
		}
		return fakeprovider.Reply{Text: "Meet the goroutine\n\nGoroutines start small."}
	}
	return fakeprovider.Reply{Text: "who am I?"}
}

func TestSupervisorRunsOnAProvider(t *testing.T) {
	cases := []struct {
		name  string
		start func(testing.TB, fakeprovider.Policy) *fakeprovider.Server
		env   func(url string) map[string]string
		model string
	}{
		{"openai", fakeprovider.OpenAI, func(url string) map[string]string {
			return map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "local-model"} // a local server needs no key
		}, "local-model"},
		{"anthropic", fakeprovider.Anthropic, func(url string) map[string]string {
			return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": url}
		}, "claude-haiku-4-5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := c.start(t, team(t))
			vars := c.env(srv.URL)
			var out bytes.Buffer
			st, err := run(context.Background(), &out, func(k string) string { return vars[k] }, "Explain goroutines.", agent.TraceDurations(0), agent.TraceWidth(0))
			require.NoError(t, err)
			s := out.String()
			t.Log(s)

			assert.Contains(t, s, "models: "+c.name+" "+c.model+" at "+srv.URL+"\nquestion: Explain goroutines.\n")
			assert.Contains(t, s, "supervisor ◆ model "+c.model+" · 11 in / 7 out tokens")
			assert.Contains(t, s, `  supervisor › researcher → search {"query":"stack"}`)
			assert.Contains(t, s, "  supervisor › researcher • retry: search attempt 1 failed")
			assert.Contains(t, s, "supervisor ✓ writer: Meet the goroutine\n")
			assert.Contains(t, s, "supervisor » Meet the goroutine\n\n  Goroutines start small.\n")
			assert.Contains(t, s, "supervisor ■ done: 9 model calls")
			assert.NotContains(t, s, "✗")
			assert.Equal(t, int32(2), st.Searches.Load(), "one failure, one retry")
			assert.Equal(t, int32(1), st.GuideReads.Load(), "the second read came from the cache")

			reqs := srv.Requests()
			assert.Len(t, reqs, 9)
			var sawQuestion, sawContext bool
			for _, r := range reqs {
				assert.Equal(t, c.model, r.Model)
				if c.name == "anthropic" {
					assert.Equal(t, "sk-ant-test", r.Key)
				}
				sawQuestion = sawQuestion || r.LastUser() == "Explain goroutines."
				sawContext = sawContext || strings.Contains(r.LastUser(), "Title: Meet the goroutine")
			}
			assert.True(t, sawQuestion, "the supervisor was asked the question")
			assert.True(t, sawContext, "the writer was given the title and the facts")
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

func TestTelemetryToStdout(t *testing.T) {
	var spans bytes.Buffer
	stop, err := setupTelemetry(func(k string) string {
		if k == "TRELLIS_OTEL_STDOUT" {
			return "1"
		}
		return ""
	}, &spans)
	require.NoError(t, err)
	defer func() {
		otel.SetTracerProvider(tracenoop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
	}()
	var out bytes.Buffer
	_, err = run(context.Background(), &out, func(string) string { return "" }, question)
	require.NoError(t, err)
	require.NoError(t, stop(context.Background()))
	s := spans.String()
	for _, want := range []string{`"Name": "run supervisor"`, `"Name": "execute_tool researcher"`, `"Name": "run researcher"`, `"Name": "chat scripted-researcher"`, `"Name": "execute_tool search"`, `"trellis.graph.runs"`, `"gen_ai.client.operation.duration"`} {
		assert.Contains(t, s, want)
	}
}
