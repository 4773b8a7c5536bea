package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/provider"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
)

// question is what the agent answers unless told otherwise.
const question = "What is 17 + 25, and how is the weather in Lisbon?"

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "react:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	// Ctrl-C cancels the run: a model request or a tool in flight stops.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := start(ctx, os.Stdout, os.Getenv, os.Args[1:])
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return err
}

// start picks the model the environment selects (see package
// examples/internal/provider), or the offline script, and runs the agent on
// the question args give.
func start(ctx context.Context, w io.Writer, getenv func(string) string, args []string) error {
	m, which, err := provider.Lookup(getenv)
	if err != nil {
		return err
	}
	q := question
	if len(args) > 0 {
		q = strings.Join(args, " ")
	}
	fmt.Fprintf(w, "model: %s\n", which)
	if m == nil {
		m = offline()
		if q != question {
			fmt.Fprintln(w, "(the offline script answers its own question only)")
			q = question
		}
	}
	fmt.Fprintf(w, "question: %s\n\n", q)
	return run(ctx, w, q, m)
}

type weatherIn struct {
	City string `json:"city" jsonschema:"description=The city, e.g. Lisbon"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func tools() []tool.Tool {
	// Both tools only read, and may run at the same time as other calls:
	// the parallel executor runs a batch of their calls concurrently.
	safe := tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true})
	weather := tool.MustFunc("get_weather", "Current weather of a city.", func(ctx context.Context, in weatherIn) (string, error) {
		if err := pause(ctx, 30*time.Millisecond); err != nil { // a slow upstream service
			return "", err
		}
		return fmt.Sprintf("%s: 21°C, clear sky", in.City), nil
	}, safe)
	add := tool.MustFunc("add", "Adds two numbers.", func(_ context.Context, in addIn) (float64, error) {
		return in.A + in.B, nil
	}, safe)
	return []tool.Tool{weather, add}
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

// offline is the script the example plays without a provider: both tools at
// once (the "25" as a string, which the tool's schema coerces to a number),
// then an answer built from their results.
func offline() model.Model {
	return scripted.New(
		scripted.CallTools(
			scripted.Call("add", `{"a": 17, "b": "25"}`),
			scripted.Call("get_weather", `{"city": "Lisbon"}`),
		),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			var facts []string
			for _, m := range req.Messages {
				if m.Role == model.RoleTool {
					facts = append(facts, m.Text())
				}
			}
			if len(facts) != 2 {
				return nil, fmt.Errorf("script: want 2 tool results, got %d", len(facts))
			}
			return &model.Response{Message: model.Assistant("17 + 25 = " + facts[0] + "; weather in " + facts[1] + ".")}, nil
		}),
	)
}

// run runs the agent on m and prints its model calls, its tool calls and
// its answer to w.
func run(ctx context.Context, w io.Writer, question string, m model.Model) error {
	g, err := agent.NewReAct(m,
		agent.WithName("assistant"),
		agent.WithSystemPrompt("You are a concise assistant. Use tools when they help."),
		agent.WithTools(tools()...),
		agent.WithMiddleware(middleware.Timeout(10*time.Second)), // every tool call is bounded
	)
	if err != nil {
		return err
	}
	for ev, err := range g.Stream(ctx, agent.Ask(question), graph.WithModes(graph.ModeEvents)) {
		if err != nil {
			return err
		}
		switch p := ev.Payload.(type) {
		case nodes.ModelCall:
			switch {
			case ev.Kind != nodes.KindModelEnd:
			case ev.Err != nil: // the stream's error, next, ends the run
				fmt.Fprintf(w, "model   %s failed after %s\n", p.Model, ev.Duration.Round(time.Millisecond))
			default:
				fmt.Fprintf(w, "model   %s answered (%d tokens in, %d out)\n", p.Model, p.Usage.InputTokens, p.Usage.OutputTokens)
			}
		case executor.Event:
			switch ev.Kind {
			case nodes.KindToolStart:
				fmt.Fprintf(w, "tool  ▶ %s %s\n", p.Call.Name, p.Call.Arguments)
			case nodes.KindToolEnd:
				fmt.Fprintf(w, "tool  ✓ %s → %s (%s, %s)\n", p.Call.Name, strings.TrimSpace(p.Result.Text()), p.Result.Status, p.Duration.Round(time.Millisecond))
			}
		}
		if ev.Kind == graph.KindDone {
			if s, ok := ev.State.(agent.State); ok {
				fmt.Fprintf(w, "\nanswer: %s\n", agent.FinalText(s.Messages))
			}
		}
	}
	return nil
}
