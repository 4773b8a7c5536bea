package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
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
	stop, err := setupTelemetry(os.Getenv, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		os.Exit(1)
	}
	_, err = run(context.Background(), os.Stdout, os.Getenv, q, agent.TraceDurations(time.Millisecond))
	if serr := stop(context.Background()); err == nil {
		err = serr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		os.Exit(1)
	}
}

// stats counts what the tools' bodies did in a run.
type stats struct {
	searches    atomic.Int32 // search calls that reached the notes service
	guideReads  atomic.Int32 // style guide calls that reached the wiki
	failedFirst atomic.Bool  // the notes service has failed its first call
}

// run builds the system on the models the environment selects, runs it on
// the question and prints the trace to w. It returns what the tools did.
func run(ctx context.Context, w io.Writer, getenv func(string) string, q string, trace ...agent.TraceOption) (*stats, error) {
	team, err := chooseModels(getenv)
	if err != nil {
		return nil, err
	}
	if team.offline {
		q = question // the scripts answer this question only
	}
	st := &stats{}
	sup, err := build(team, st)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "models: %s\nquestion: %s\n\n", team.describe, q)
	events := sup.Stream(ctx, agent.Ask(q), graph.WithModes(graph.ModeEvents|graph.ModeUpdates|graph.ModeCustom))
	if _, err := agent.PrintTrace(w, events, trace...); err != nil {
		return st, err
	}
	return st, nil
}

// build assembles the supervisor and its two workers. Every tool call of the
// three agents — searches, style guide, handoffs — runs through one parallel
// executor and its middleware.
func build(team models, st *stats) (*graph.Graph[agent.State], error) {
	exec := executor.Parallel(
		nodes.StreamToolEvents(),
		executor.WithMiddleware(toolMiddleware()...),
	)
	researcher, err := agent.NewReAct(team.researcher,
		agent.WithName("researcher"),
		agent.WithSystemPrompt("You are a careful researcher. Search the notes (several searches at once when it helps), then reply with a short list of facts, one per line, each starting with \"- \". Use only what the notes say."),
		agent.WithTools(searchTool(st)),
		agent.WithExecutor(exec))
	if err != nil {
		return nil, err
	}
	writer, err := agent.NewReAct(team.writer,
		agent.WithName("writer"),
		agent.WithSystemPrompt("You are a technical writer. Read the house style guide first, follow it, and reply with the requested text only."),
		agent.WithTools(styleGuideTool(st)),
		agent.WithExecutor(exec))
	if err != nil {
		return nil, err
	}
	return agent.NewSupervisor(team.supervisor, []agent.Worker{
		{
			Name:        "researcher",
			Description: "Searches the team's notes and returns the relevant facts as a list.",
			Agent:       researcher,
		},
		{
			Name:        "writer",
			Description: "Writes titles and short texts for newcomers in the house style. Give it the facts to use as context.",
			Agent:       writer,
			// The writer's answer must not be empty; one more try if it is.
			Handoff: []handoff.Option{handoff.WithRetries(1, 100*time.Millisecond), handoff.WithValidator(nonEmpty)},
		},
	}, agent.WithExecutor(exec))
}

func nonEmpty(_ context.Context, out handoff.Output) error {
	if strings.TrimSpace(out.Answer) == "" {
		return errors.New("the answer is empty")
	}
	return nil
}

// toolMiddleware wraps every tool call, outermost first: read-only results
// (searches, the style guide) are cached; transient failures are retried,
// with a line in the trace; a tool that keeps failing is cut off by its
// circuit breaker; every call is bounded in time, the workers more loosely.
func toolMiddleware() []executor.Middleware {
	return []executor.Middleware{
		middleware.OpenTelemetry(), // spans and metrics when a provider is set up
		middleware.Cache(middleware.WithTTL(10 * time.Minute)),
		middleware.Retry(
			middleware.WithMaxAttempts(3),
			middleware.WithInitialInterval(50*time.Millisecond),
			middleware.WithRetryOn(func(ctx context.Context, info middleware.RetryInfo) bool {
				retry := middleware.DefaultRetryOn(ctx, info)
				if retry {
					graph.EmitCustom(ctx, "retry", fmt.Sprintf("%s attempt %d failed, trying again: %s", info.Request.ToolName(), info.Attempt, info.Result.Text()))
				}
				return retry
			})),
		middleware.CircuitBreaker(middleware.WithConsecutiveFailures(3), middleware.WithOpenTimeout(30*time.Second)),
		middleware.Timeout(10*time.Second,
			middleware.WithToolTimeout("researcher", 3*time.Minute),
			middleware.WithToolTimeout("writer", 3*time.Minute)),
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

// searchTool searches the notes. The notes service takes a moment and, to
// show the retry middleware at work, fails its first call of a run with a
// transient error. The tool is read-only, so the cache serves repeated
// searches.
func searchTool(st *stats) tool.Tool {
	return tool.MustFunc("search", "Searches the team's notes on Go and returns the matching notes.",
		func(ctx context.Context, in searchArgs) (string, error) {
			st.searches.Add(1)
			if st.failedFirst.CompareAndSwap(false, true) {
				return "", middleware.Transient(errors.New("notes service: 503 Service Unavailable"))
			}
			if err := pause(ctx, 30*time.Millisecond); err != nil {
				return "", err
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

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// styleGuideTool returns the house style guide from the wiki, which takes a
// moment; the tool is read-only, so the writer's second call is served by
// the cache at once.
func styleGuideTool(st *stats) tool.Tool {
	return tool.MustFunc("style_guide", "Returns the house style guide for texts for newcomers.",
		func(ctx context.Context, _ struct{}) (string, error) {
			st.guideReads.Add(1)
			if err := pause(ctx, 20*time.Millisecond); err != nil {
				return "", err
			}
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
