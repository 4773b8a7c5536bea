package agent_test

import (
	"context"
	"os"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

func ExamplePrintTrace() {
	clock := tool.MustFunc("clock", "Tells the time.", func(context.Context, struct{}) (string, error) {
		return "09:30", nil
	})
	m := scripted.New(
		scripted.CallTools(scripted.Call("clock", `{}`)).WithUsage(model.Usage{InputTokens: 20, OutputTokens: 5}),
		scripted.Reply("It is half past nine.").WithUsage(model.Usage{InputTokens: 31, OutputTokens: 7}),
	)
	g, err := agent.NewReAct(m, agent.WithName("assistant"), agent.WithTools(clock))
	if err != nil {
		panic(err)
	}
	run := g.Stream(context.Background(), agent.Ask("What time is it?"), graph.WithModes(graph.ModeEvents|graph.ModeUpdates))
	// Durations are left out to keep the output the same on every run.
	if _, err := agent.PrintTrace(os.Stdout, run, agent.TraceDurations(0)); err != nil {
		panic(err)
	}
	// Output:
	// assistant ◆ model scripted · 20 in / 5 out tokens
	// assistant → clock {}
	// assistant ✓ clock: 09:30
	// assistant ◆ model scripted · 31 in / 7 out tokens
	// assistant » It is half past nine.
	// assistant ■ done: 2 model calls (51 in / 12 out tokens) · 1 tool call
}
