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
	"github.com/trellis-go/trellis/examples/supervisor/system"
	"github.com/trellis-go/trellis/graph"
)

// question is what the system answers unless told otherwise.
const question = system.Question

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

// run builds the system on the models the environment selects, runs it on
// the question and prints the trace to w. It returns what the tools did.
func run(ctx context.Context, w io.Writer, getenv func(string) string, q string, trace ...agent.TraceOption) (*system.Stats, error) {
	team, err := chooseModels(getenv)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "models: %s\n", team.describe)
	if team.offline && q != question {
		fmt.Fprintln(w, "(the offline scripts answer their own question only)")
		q = question
	}
	st := &system.Stats{}
	sup, err := system.Build(team.Models, st)
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

// models are the models of the three agents, and what they are.
type models struct {
	system.Models
	describe string
	offline  bool
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
		return models{Models: system.Models{Supervisor: m, Researcher: m, Writer: m}, describe: which}, nil
	}
	return models{Models: system.Scripted(), describe: which, offline: true}, nil
}
