package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/provider"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// question is what the system answers unless told otherwise.
const question = "Write a short explainer of goroutines for Go newcomers."

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "supervisor:", err)
		os.Exit(1)
	}
}

func mainErr() (err error) {
	// Ctrl-C cancels the run: the model requests and tools in flight stop.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	q := question
	if len(os.Args) > 1 {
		q = strings.Join(os.Args[1:], " ")
	}
	shutdown, err := setupTelemetry(os.Getenv, os.Stderr)
	if err != nil {
		return err
	}
	defer func() {
		// Flush the telemetry even when the run failed or was interrupted.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := shutdown(sctx); err == nil {
			err = serr
		}
	}()
	_, err = run(ctx, os.Stdout, os.Getenv, q, agent.TraceDurations(time.Millisecond))
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return err
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
	fmt.Fprintf(w, "models: %s\n", team.describe)
	if team.offline && q != question {
		fmt.Fprintln(w, "(the offline scripts answer their own question only)")
		q = question
	}
	st := &stats{}
	sup, err := build(team, st)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "question: %s\n\n", q)
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

// chooseModels picks the provider the environment selects (see package
// examples/internal/provider); all three agents then share its model.
// Without one, each agent gets its scripted model.
func chooseModels(getenv func(string) string) (models, error) {
	m, which, err := provider.Lookup(getenv)
	if err != nil {
		return models{}, err
	}
	if m != nil {
		return models{supervisor: m, researcher: m, writer: m, describe: which}, nil
	}
	return models{
		supervisor: scriptedSupervisor(),
		researcher: scriptedResearcher(),
		writer:     scriptedWriter(),
		describe:   which,
		offline:    true,
	}, nil
}
