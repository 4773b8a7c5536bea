package agent_test

import (
	"context"
	"fmt"
	"os"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

// lastToolResult answers with the last tool result the model was shown.
func lastToolResult(prefix string) scripted.Step {
	return scripted.Func(func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant(prefix + req.Messages[len(req.Messages)-1].Text())}, nil
	})
}

func ExampleNewSupervisor() {
	// Two workers, each an agent with a model (scripted here) and tools.
	lookup := tool.MustFunc("lookup", "Looks a word up.", func(_ context.Context, in struct {
		Word string `json:"word"`
	}) (string, error) {
		return in.Word + ": a small, fast boat", nil
	})
	researcher, err := agent.NewReAct(
		scripted.New(scripted.CallTools(scripted.Call("lookup", `{"word":"skiff"}`)), lastToolResult("")),
		agent.WithName("researcher"), agent.WithTools(lookup))
	if err != nil {
		panic(err)
	}
	writer, err := agent.NewReAct(scripted.New(scripted.Reply("A skiff skims the bay.")), agent.WithName("writer"))
	if err != nil {
		panic(err)
	}

	// The supervisor's model delegates to them through handoff tools.
	supervisor, err := agent.NewSupervisor(
		scripted.New(
			scripted.CallTools(scripted.Call("researcher", `{"task":"Define skiff."}`)),
			scripted.CallTools(scripted.Call("writer", `{"task":"One line about a skiff.","context":"skiff: a small, fast boat"}`)),
			lastToolResult(""),
		),
		[]agent.Worker{
			{Name: "researcher", Description: "Looks facts up.", Agent: researcher},
			{Name: "writer", Description: "Writes short prose.", Agent: writer},
		})
	if err != nil {
		panic(err)
	}
	run := supervisor.Stream(context.Background(), agent.Ask("Write a line about skiffs."),
		graph.WithModes(graph.ModeEvents|graph.ModeUpdates))
	if _, err := agent.PrintTrace(os.Stdout, run, agent.TraceDurations(0)); err != nil {
		fmt.Println(err)
	}
	// Output:
	// supervisor ◆ model scripted
	// supervisor → researcher {"task":"Define skiff."}
	//   supervisor › researcher ◆ model scripted
	//   supervisor › researcher → lookup {"word":"skiff"}
	//   supervisor › researcher ✓ lookup: skiff: a small, fast boat
	//   supervisor › researcher ◆ model scripted
	//   supervisor › researcher » skiff: a small, fast boat
	// supervisor ✓ researcher: skiff: a small, fast boat
	// supervisor ◆ model scripted
	// supervisor → writer {"task":"One line about a skiff.","context":"skiff: a small, fast boat"}
	//   supervisor › writer ◆ model scripted
	//   supervisor › writer » A skiff skims the bay.
	// supervisor ✓ writer: A skiff skims the bay.
	// supervisor ◆ model scripted
	// supervisor » A skiff skims the bay.
	// supervisor ■ done: 6 model calls · 3 tool calls
}

func ExampleRoutingPrompt() {
	fmt.Println(agent.RoutingPrompt([]agent.Worker{
		{Name: "researcher", Description: "Looks facts up."},
		{Name: "writer", Description: "Writes short prose."},
	}))
	// Output:
	// You are a supervisor. You answer the user's request by delegating work to the workers below; each is a tool you call with a task and, when it helps, context. Workers may not see this conversation: state each task completely.
	//
	// Workers:
	// - researcher: Looks facts up.
	// - writer: Writes short prose.
	//
	// Call several workers in one turn when their tasks do not depend on each other; they work at the same time. When a worker fails, decide whether to try again, ask another worker, or answer without it. When you have what you need, answer the user yourself.
}
