package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/fakeprovider"
)

// The Gemini SDK's dependencies bring in OpenCensus, whose package init
// starts a worker that runs for the life of the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

var quiet = setup{trace: []agent.TraceOption{agent.TraceDurations(0), agent.TraceWidth(0)}}

func TestA2AExampleRunsOffline(t *testing.T) {
	var out bytes.Buffer
	wire, err := run(context.Background(), &out, env(nil), nil, quiet)
	require.NoError(t, err)
	s := out.String()
	lines := strings.Split(s, "\n")

	// The card, as the client read it, without the port.
	assert.Contains(t, s, "models: scripted (offline")
	assert.Contains(t, s, "agent card (http://127.0.0.1:<port>/.well-known/agent-card.json):\n"+
		"  name:        Researcher (version 1.0.0)\n"+
		"  description: Looks facts up in the team's reference notes and returns them as a list.\n"+
		"  skills:      facts (Fact lookup): Finds facts about the history of Go in the team's notes.\n"+
		"  streaming:   true\n"+
		"  interfaces:  JSONRPC 1.0 at http://127.0.0.1:<port>/\n"+
		"               JSONRPC 0.3 at http://127.0.0.1:<port>/\n"+
		"question: "+question+"\n")
	assert.NotRegexp(t, `127\.0\.0\.1:\d`, s, "no port is printed")

	// The call went over HTTP: the card, then one streamed message.
	assert.Equal(t, []string{"GET /.well-known/agent-card.json", "POST / SendStreamingMessage"}, wire.requests())
	assert.True(t, strings.HasSuffix(s, "\nHTTP requests the researcher's server answered:\n  GET /.well-known/agent-card.json\n  POST / SendStreamingMessage\n"), s)

	// The remote worker shows as one call with the researcher's status
	// updates; the local one as a nested agent with its own model calls.
	call := indexOf(lines, `supervisor → researcher {"task":"Find the key facts about the history of the Go programming language`)
	lookups := indexOf(lines, "supervisor … researcher: Calling lookup.")
	answered := indexOf(lines, "supervisor ✓ researcher: - Go was designed at Google by Robert Griesemer, Rob Pike and Ken Thompson")
	require.True(t, call >= 0 && lookups >= 0 && answered >= 0, s)
	assert.Less(t, call, lookups)
	assert.Less(t, lookups, answered)
	assert.Equal(t, 3, strings.Count(s, "supervisor … researcher: Calling lookup.\n"))
	// Only status updates: the words the researcher's model streamed, which
	// the tool reports as progress too, are left out.
	for _, l := range lines {
		if update, ok := strings.CutPrefix(l, "supervisor … researcher: "); ok {
			assert.Contains(t, []string{"the agent's task is working", "Calling lookup.", "the agent's task is completed"}, update)
		}
	}
	assert.NotContains(t, s, "supervisor › researcher", "the researcher's own steps stay on its side")
	assert.Contains(t, s, "  supervisor › writer ◆ model scripted-writer\n")
	assert.Contains(t, s, `"context":"- Go was designed at Google`, "the writer got the researcher's facts")

	// The answer is built from the researcher's facts.
	assert.Contains(t, s, "supervisor » Go, from idea to 1.0\n\n  Go was designed at Google by Robert Griesemer, Rob Pike and Ken Thompson, starting in 2007. "+
		"Go was announced as an open-source project on 10 November 2009. Go 1.0 came out in March 2012")
	assert.Contains(t, s, "supervisor ■ done: 4 model calls · 2 tool calls\n")
	assert.NotContains(t, s, "✗")
}

func TestOfflineRunSaysItIgnoresAnotherQuestion(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, start(context.Background(), &out, env(nil), []string{"What", "is", "Rust?"}))
	assert.Contains(t, out.String(), "(the offline scripts answer their own question only)\n")
	assert.Contains(t, out.String(), "question: "+question+"\n")
}

// team plays the three agents on a fake provider, telling them apart by
// the tools each is offered.
func team(r fakeprovider.Request) fakeprovider.Reply {
	results := r.ToolResults()
	switch {
	case r.HasTool("researcher") && r.HasTool("writer"): // the supervisor
		switch len(results) {
		case 0:
			return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "researcher", Arguments: `{"task":"Who designed Go?"}`}}}
		case 1:
			args, _ := json.Marshal(map[string]string{"task": "Write the note.", "context": results[0]})
			return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "writer", Arguments: string(args)}}}
		}
		return fakeprovider.Reply{Text: results[len(results)-1]}
	case r.HasTool("lookup"): // the researcher, behind A2A
		if len(results) == 0 {
			return fakeprovider.Reply{Calls: []fakeprovider.Call{{Name: "lookup", Arguments: `{"topic":"designers"}`}}}
		}
		return fakeprovider.Reply{Text: "- " + strings.Join(results, "\n- ")}
	case len(r.Tools) == 0: // the writer
		var facts []string
		for _, line := range strings.Split(r.LastUser(), "\n") {
			if fact, ok := strings.CutPrefix(line, "- "); ok {
				facts = append(facts, fact)
			}
		}
		return fakeprovider.Reply{Text: "Who made Go\n\n" + strings.Join(facts, " ")}
	}
	return fakeprovider.Reply{Text: "who am I?"}
}

func TestA2AExampleRunsOnAProvider(t *testing.T) {
	cases := []struct {
		name  string
		start func(testing.TB, fakeprovider.Policy) *fakeprovider.Server
		env   func(url string) map[string]string
		model string
	}{
		{"openai", fakeprovider.OpenAI, func(url string) map[string]string {
			return map[string]string{"OPENAI_BASE_URL": url, "OPENAI_MODEL": "local-model"}
		}, "local-model"},
		{"anthropic", fakeprovider.Anthropic, func(url string) map[string]string {
			return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": url}
		}, "claude-haiku-4-5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := c.start(t, team)
			var out bytes.Buffer
			wire, err := run(context.Background(), &out, env(c.env(srv.URL)), []string{"Who", "made", "Go?"}, quiet)
			require.NoError(t, err)
			s := out.String()

			assert.Contains(t, s, "models: "+c.name+" "+c.model+" at "+srv.URL+"\n")
			assert.Contains(t, s, "question: Who made Go?\n")
			assert.Contains(t, s, `supervisor → researcher {"task":"Who designed Go?"}`)
			assert.Contains(t, s, "supervisor … researcher: Calling lookup.\n")
			assert.Contains(t, s, "supervisor ✓ researcher: - Go was designed at Google by Robert Griesemer, Rob Pike and Ken Thompson, starting in 2007.\n")
			assert.Contains(t, s, "  supervisor › writer ◆ model "+c.model+" · 11 in / 7 out tokens\n")
			assert.Contains(t, s, "supervisor » Who made Go\n\n  Go was designed at Google by Robert Griesemer, Rob Pike and Ken Thompson, starting in 2007.\nsupervisor ■ done: 4 model calls")
			assert.Equal(t, []string{"GET /.well-known/agent-card.json", "POST / SendStreamingMessage"}, wire.requests())

			// Both sides ran on the provider: the supervisor three times,
			// the researcher (behind A2A) twice, the writer once.
			reqs := srv.Requests()
			require.Len(t, reqs, 6)
			var supervisor, researcher, writer int
			for _, r := range reqs {
				assert.Equal(t, c.model, r.Model)
				switch {
				case r.HasTool("researcher"):
					supervisor++
					assert.Equal(t, "Who made Go?", r.LastUser())
					assert.Contains(t, r.System, "- researcher: Looks facts up in the team's reference notes", "the tool's description comes from the card")
				case r.HasTool("lookup"):
					researcher++
					assert.Equal(t, "Who designed Go?", r.LastUser(), "the task arrived over A2A as the researcher's question")
					assert.Contains(t, r.System, "You are a careful researcher.")
				default:
					writer++
					assert.Contains(t, r.System, "You write short, friendly notes")
				}
			}
			assert.Equal(t, []int{3, 2, 1}, []int{supervisor, researcher, writer})
		})
	}
}

func TestUnreachableResearcherIsAToolErrorTheSupervisorSees(t *testing.T) {
	var out bytes.Buffer
	s := quiet
	// The card was read; then the researcher's server goes away.
	s.beforeRun = func(hs *httptest.Server) { hs.Close() }
	wire, err := run(context.Background(), &out, env(nil), nil, s)
	require.NoError(t, err, "a worker that fails does not fail the run")
	o := out.String()
	assert.Contains(t, o, `supervisor ✗ researcher failed: remote agent "Researcher": `)
	assert.Contains(t, o, "supervisor » I could not get the facts, so I cannot write the note. The researcher failed: ")
	assert.Contains(t, o, "connection refused")
	assert.NotContains(t, o, "supervisor → writer", "no facts, no note")
	assert.Equal(t, []string{"GET /.well-known/agent-card.json"}, wire.requests())
}

func TestBadSettingsAreReported(t *testing.T) {
	var out bytes.Buffer
	err := start(context.Background(), &out, env(map[string]string{"TRELLIS_PROVIDER": "mistral"}), nil)
	require.ErrorContains(t, err, `TRELLIS_PROVIDER="mistral": unknown provider`)
	err = start(context.Background(), &out, env(map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": "/v1"}), nil)
	require.ErrorContains(t, err, "ANTHROPIC_BASE_URL")
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

func TestCancelWhileTheResearcherWorks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	srv := fakeprovider.OpenAI(t, func(r fakeprovider.Request) fakeprovider.Reply {
		if r.HasTool("lookup") {
			// The researcher is at work, on the far side of A2A, when the
			// run is cancelled.
			once.Do(cancel)
		}
		return team(r)
	})
	var out bytes.Buffer
	began := time.Now()
	_, err := run(ctx, &out, env(map[string]string{"OPENAI_BASE_URL": srv.URL}), nil, quiet)
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), err)
	assert.Less(t, time.Since(began), 10*time.Second)
	assert.NotContains(t, out.String(), "supervisor → writer")
}

func TestLookup(t *testing.T) {
	cases := map[string]string{
		"designers":       "Robert Griesemer",
		"When was Go 1.0": "March 2012",
		"the GOPHER":      "Renée French",
		"weather":         "No note matches weather.",
	}
	for topic, want := range cases {
		args, _ := json.Marshal(lookupArgs{Topic: topic})
		r, err := lookupTool().Call(context.Background(), "call_1", args)
		require.NoError(t, err)
		assert.Contains(t, r.Text(), want, topic)
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
