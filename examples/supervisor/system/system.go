package system

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// Question is the question the offline models answer.
const Question = "Write a short explainer of goroutines for Go newcomers."

// Models are the models of the three agents.
type Models struct {
	Supervisor, Researcher, Writer model.Model
}

// Scripted returns the offline models: each plays its agent by reading the
// conversation it is given, whatever order the parallel workers finish in.
// They answer Question only.
func Scripted() Models {
	return Models{
		Supervisor: scriptedSupervisor(),
		Researcher: scriptedResearcher(),
		Writer:     scriptedWriter(),
	}
}

// Stats counts what the tools' bodies did. The notes service fails the
// first search of the Stats it counts for (to show the retry middleware at
// work), so give each run a Stats of its own to see that retry.
type Stats struct {
	// Searches counts the search calls that reached the notes service.
	Searches atomic.Int32
	// GuideReads counts the style guide calls that reached the wiki.
	GuideReads atomic.Int32

	failedFirst atomic.Bool // the notes service has failed its first call
}

// Build assembles the supervisor and its two workers on models; the tools
// count their calls in st. Every tool call of the three agents —
// searches, style guide, handoffs — runs through one parallel executor and
// its middleware, whose cache and circuit breakers the graph's runs share.
func Build(models Models, st *Stats) (*graph.Graph[agent.State], error) {
	exec := executor.Parallel(
		nodes.StreamToolEvents(),
		executor.WithMiddleware(toolMiddleware()...),
	)
	researcher, err := agent.NewReAct(models.Researcher,
		agent.WithName("researcher"),
		agent.WithSystemPrompt("You are a careful researcher. Search the notes (several searches at once when it helps), then reply with a short list of facts, one per line, each starting with \"- \". Use only what the notes say."),
		agent.WithTools(searchTool(st)),
		agent.WithExecutor(exec))
	if err != nil {
		return nil, err
	}
	writer, err := agent.NewReAct(models.Writer,
		agent.WithName("writer"),
		agent.WithSystemPrompt("You are a technical writer. Read the house style guide first, follow it, and reply with the requested text only."),
		agent.WithTools(styleGuideTool(st)),
		agent.WithExecutor(exec))
	if err != nil {
		return nil, err
	}
	return agent.NewSupervisor(models.Supervisor, []agent.Worker{
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
// show the retry middleware at work, fails its first call with a transient
// error. The tool is read-only, so the cache serves repeated searches.
func searchTool(st *Stats) tool.Tool {
	return tool.MustFunc("search", "Searches the team's notes on Go and returns the matching notes.",
		func(ctx context.Context, in searchArgs) (string, error) {
			st.Searches.Add(1)
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
func styleGuideTool(st *Stats) tool.Tool {
	return tool.MustFunc("style_guide", "Returns the house style guide for texts for newcomers.",
		func(ctx context.Context, _ struct{}) (string, error) {
			st.GuideReads.Add(1)
			if err := pause(ctx, 20*time.Millisecond); err != nil {
				return "", err
			}
			return "Titles: at most six words, no colon. Texts: one paragraph, short sentences, present tense, no jargon without an explanation.", nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}
