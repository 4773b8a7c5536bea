package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/examples/internal/provider"
	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/tool"
)

type weatherIn struct {
	City string `json:"city" jsonschema:"description=The city, e.g. Lisbon"`
}

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func tools() []tool.Tool {
	safe := tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true})
	weather := tool.MustFunc("get_weather", "Current weather of a city.", func(ctx context.Context, in weatherIn) (string, error) {
		time.Sleep(30 * time.Millisecond) // a slow upstream service
		return fmt.Sprintf("%s: 21°C, clear sky", in.City), nil
	}, safe)
	add := tool.MustFunc("add", "Adds two numbers.", func(_ context.Context, in addIn) (float64, error) {
		return in.A + in.B, nil
	}, safe)
	return []tool.Tool{weather, add}
}

// offline is the script the example plays without a provider: both tools at
// once, then an answer built from their results.
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
			return &model.Response{Message: model.Assistant("17 + 25 = " + facts[0] + "; weather in " + facts[1] + ".")}, nil
		}),
	)
}

func run(ctx context.Context, w io.Writer, question string, m model.Model) error {
	timing := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		start := time.Now()
		res := next.Handle(ctx, req)
		res.Details = map[string]any{"took": time.Since(start).Round(time.Millisecond).String()}
		return res
	})
	g, err := agent.NewReAct(m,
		agent.WithName("assistant"),
		agent.WithSystemPrompt("You are a concise assistant. Use tools when they help."),
		agent.WithTools(tools()...),
		agent.WithMiddleware(timing),
	)
	if err != nil {
		return err
	}
	for ev, err := range g.Stream(ctx, agent.Ask(question), graph.WithModes(graph.ModeEvents)) {
		if err != nil {
			return err
		}
		switch ev.Kind {
		case nodes.KindModelEnd:
			call := ev.Payload.(nodes.ModelCall)
			fmt.Fprintf(w, "model   %s answered (%d tokens in, %d out)\n", call.Model, call.Usage.InputTokens, call.Usage.OutputTokens)
		case nodes.KindToolStart:
			e := ev.Payload.(executor.Event)
			fmt.Fprintf(w, "tool  ▶ %s %s\n", e.Call.Name, e.Call.Arguments)
		case nodes.KindToolEnd:
			e := ev.Payload.(executor.Event)
			fmt.Fprintf(w, "tool  ✓ %s → %s\n", e.Call.Name, strings.TrimSpace(e.Result.Text()))
		case graph.KindDone:
			fmt.Fprintf(w, "\nanswer: %s\n", agent.FinalText(ev.State.(agent.State).Messages))
		}
	}
	return nil
}

func main() {
	question := "What is 17 + 25, and how is the weather in Lisbon?"
	if len(os.Args) > 1 {
		question = strings.Join(os.Args[1:], " ")
	}
	m, which, err := provider.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if m == nil {
		m = offline()
	}
	fmt.Println("model:", which)
	if err := run(context.Background(), os.Stdout, question, m); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
