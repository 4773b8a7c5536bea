// Command supervisor runs a small multi-agent system and prints its live
// trace: a supervisor delegates to a researcher and a writer, each an agent
// with tools of its own. The supervisor's first turn sends the research and a
// request for a title at the same time (two handoffs in one batch, run in
// parallel); its second hands the facts and the title to the writer; it then
// answers with the writer's paragraph. Every tool call — the handoffs too —
// goes through a parallel executor with cache, timeout, circuit-breaker and
// retry middleware.
//
//	go run ./examples/supervisor
//
// It runs offline on scripted models. With OPENAI_API_KEY set (and optionally
// OPENAI_BASE_URL and OPENAI_MODEL) or ANTHROPIC_API_KEY set (and optionally
// ANTHROPIC_MODEL) the same system runs on that provider's model, and an
// argument replaces the question:
//
//	OPENAI_API_KEY=... go run ./examples/supervisor "Explain Go channels to a newcomer."
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
	"github.com/trellis-go/trellis/model/openai"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// question is what the system answers unless told otherwise.
const question = "Write a short explainer of goroutines for Go newcomers."

func main() {
	q := question
	if len(os.Args) > 1 {
		q = strings.Join(os.Args[1:], " ")
	}
	if err := run(context.Background(), os.Stdout, os.Getenv, q, agent.TraceDurations(time.Millisecond)); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		os.Exit(1)
	}
}

// run builds the system on the models the environment selects, runs it on
// the question and prints the trace to w.
func run(ctx context.Context, w io.Writer, getenv func(string) string, q string, trace ...agent.TraceOption) error {
	team, err := chooseModels(getenv)
	if err != nil {
		return err
	}
	if team.offline {
		q = question // the scripts answer this question only
	}
	sup, err := build(team)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "models: %s\nquestion: %s\n\n", team.describe, q)
	start := time.Now()
	events := sup.Stream(ctx, agent.Ask(q), graph.WithModes(graph.ModeEvents|graph.ModeUpdates|graph.ModeCustom))
	if _, err := agent.PrintTrace(w, events, trace...); err != nil {
		return err
	}
	if !team.offline {
		fmt.Fprintf(w, "\nfinished in %s\n", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// build assembles the supervisor and its two workers, all of whose tool calls
// run through one executor.
func build(team models) (*graph.Graph[agent.State], error) {
	exec := executor.Parallel(
		executor.WithObserver(nodes.ToolEvents),
		executor.WithMiddleware(toolMiddleware()...),
	)
	researcher, err := agent.NewReAct(team.researcher,
		agent.WithName("researcher"),
		agent.WithSystemPrompt("You are a careful researcher. Search the notes (several searches at once when it helps), then reply with a short list of facts, one per line, each starting with \"- \". Use only what the notes say."),
		agent.WithTools(searchTool()),
		agent.WithExecutor(exec))
	if err != nil {
		return nil, err
	}
	writer, err := agent.NewReAct(team.writer,
		agent.WithName("writer"),
		agent.WithSystemPrompt("You are a technical writer. Read the house style guide first, follow it, and reply with the requested text only."),
		agent.WithTools(styleGuideTool()),
		agent.WithExecutor(exec))
	if err != nil {
		return nil, err
	}
	return agent.NewSupervisor(team.supervisor, []agent.Worker{
		{
			Name:        "researcher",
			Description: "Searches the team's notes and returns the relevant facts as a list.",
			Agent:       researcher,
			Handoff:     []handoff.Option{handoff.WithRetries(1, 200*time.Millisecond)},
		},
		{
			Name:        "writer",
			Description: "Writes titles and short texts for newcomers in the house style. Give it the facts to use as context.",
			Agent:       writer,
			Handoff:     []handoff.Option{handoff.WithRetries(1, 200*time.Millisecond)},
		},
	}, agent.WithExecutor(exec))
}

// toolMiddleware wraps every tool call, handoffs included.
func toolMiddleware() []executor.Middleware {
	return []executor.Middleware{
		executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
			return next.Handle(ctx, req)
		}),
	}
}

// notes is the knowledge base the researcher searches.
var notes = []struct{ topic, text string }{
	{"goroutine", "A goroutine is a function running concurrently with other goroutines in the same address space; a go statement starts one: go f(x)."},
	{"goroutine stack memory", "A goroutine starts with a small stack of a few kilobytes that grows and shrinks as needed, so one program can run hundreds of thousands of them."},
	{"scheduler runtime threads", "The Go runtime schedules goroutines onto a few OS threads; when one goroutine blocks, the others keep running."},
	{"channel communication", "Goroutines usually communicate over channels: a send on an unbuffered channel waits until another goroutine receives."},
	{"sync waitgroup", "A sync.WaitGroup lets a goroutine wait until a group of goroutines has finished."},
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"minLength=1" jsonschema_description:"A word or two to look for, such as goroutine or scheduler."`
}

// searchTool searches the notes; it is read-only, so the cache serves
// repeated searches.
func searchTool() tool.Tool {
	return tool.MustFunc("search", "Searches the team's notes on Go and returns the matching notes.",
		func(ctx context.Context, in searchArgs) (string, error) {
			select { // a search takes a moment
			case <-time.After(30 * time.Millisecond):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			var found []string
			for _, n := range notes {
				if matches(n.topic, in.Query) {
					found = append(found, n.text)
				}
			}
			if len(found) == 0 {
				return "No note matches " + in.Query + ".", nil
			}
			return strings.Join(found, "\n"), nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, ConcurrencySafe: true}))
}

// matches reports whether a word of the query names a word of the topic
// (either may be the longer: "goroutines" finds "goroutine").
func matches(topic, query string) bool {
	for _, q := range strings.Fields(strings.ToLower(query)) {
		for _, w := range strings.Fields(topic) {
			if strings.Contains(q, w) || strings.Contains(w, q) {
				return true
			}
		}
	}
	return false
}

// styleGuideTool returns the house style guide; it is read-only, so the
// writer's second call is served by the cache.
func styleGuideTool() tool.Tool {
	return tool.MustFunc("style_guide", "Returns the house style guide for texts for newcomers.",
		func(context.Context, struct{}) (string, error) {
			return "Titles: at most six words, no colon. Texts: one paragraph, short sentences, present tense, no jargon without an explanation.", nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}

// models are the models of the three agents.
type models struct {
	supervisor, researcher, writer model.Model
	describe                       string
	offline                        bool
}

// chooseModels picks a provider from the environment, or scripted models.
func chooseModels(getenv func(string) string) (models, error) {
	pick := func(v, fallback string) string {
		if v != "" {
			return v
		}
		return fallback
	}
	switch {
	case getenv("OPENAI_API_KEY") != "":
		name := pick(getenv("OPENAI_MODEL"), "gpt-4o-mini")
		opts := []openai.Option{openai.WithAPIKey(getenv("OPENAI_API_KEY"))}
		if base := getenv("OPENAI_BASE_URL"); base != "" {
			opts = append(opts, openai.WithBaseURL(base))
		}
		m, err := openai.New(name, opts...)
		if err != nil {
			return models{}, err
		}
		return models{supervisor: m, researcher: m, writer: m, describe: "openai " + name}, nil
	case getenv("ANTHROPIC_API_KEY") != "":
		name := pick(getenv("ANTHROPIC_MODEL"), "claude-haiku-4-5")
		m, err := anthropic.New(name, anthropic.WithAPIKey(getenv("ANTHROPIC_API_KEY")))
		if err != nil {
			return models{}, err
		}
		return models{supervisor: m, researcher: m, writer: m, describe: "anthropic " + name}, nil
	}
	return models{
		supervisor: scriptedSupervisor(),
		researcher: scriptedResearcher(),
		writer:     scriptedWriter(),
		describe:   "scripted (offline; set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real model)",
		offline:    true,
	}, nil
}
