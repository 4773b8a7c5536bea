package handoff_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/handoff"
)

// answerWithToolResult is a scripted step that answers with the last tool
// result the model was shown.
func answerWithToolResult(req *model.Request) (*model.Response, error) {
	last := req.Messages[len(req.Messages)-1]
	return &model.Response{Message: model.Assistant("The translator says: " + last.Text())}, nil
}

func ExampleNew() {
	// The agent: a ReAct graph with a model of its own.
	translator, err := agent.NewReAct(
		scripted.New(scripted.Reply("Bonjour le monde")),
		agent.WithName("translator"),
		agent.WithSystemPrompt("You translate English into French."),
	)
	if err != nil {
		panic(err)
	}
	translate, err := handoff.New("translator", "Translates English text into French.", translator)
	if err != nil {
		panic(err)
	}

	// The caller: another agent that delegates through the handoff tool.
	boss, err := agent.NewReAct(
		scripted.New(
			scripted.CallTools(scripted.Call("translator", `{"task":"Translate: Hello world"}`)),
			scripted.Func(answerWithToolResult),
		),
		agent.WithTools(translate),
	)
	if err != nil {
		panic(err)
	}
	out, err := boss.Invoke(context.Background(), agent.Ask("How do you say hello world in French?"))
	if err != nil {
		panic(err)
	}
	fmt.Println(agent.FinalText(out.Messages))
	// Output: The translator says: Bonjour le monde
}

func ExampleWithPersistentHistory() {
	// The tutor's model says how much of the conversation it was shown.
	shown := func(req *model.Request) (*model.Response, error) {
		return &model.Response{Message: model.Assistant(fmt.Sprintf("I see %d messages", len(req.Messages)))}, nil
	}
	tutorGraph, err := agent.NewReAct(scripted.New(scripted.Func(shown), scripted.Func(shown)), agent.WithSystemPrompt("You teach."))
	if err != nil {
		panic(err)
	}
	tutor, err := handoff.New("tutor", "Teaches.", tutorGraph, handoff.WithPersistentHistory(nil))
	if err != nil {
		panic(err)
	}
	boss, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call("tutor", `{"task":"Explain fractions."}`)),
		scripted.CallTools(scripted.Call("tutor", `{"task":"Now decimals."}`)),
		scripted.Reply("done"),
	), agent.WithTools(tutor))
	if err != nil {
		panic(err)
	}
	out, err := boss.Invoke(context.Background(), agent.Ask("Teach me."))
	if err != nil {
		panic(err)
	}
	for _, m := range out.Messages {
		if m.Role == model.RoleTool {
			fmt.Println(m.Text())
		}
	}
	// Output:
	// I see 2 messages
	// I see 4 messages
}

func ExampleWithRetries() {
	flaky, err := agent.NewReAct(scripted.New(
		scripted.Fail(errors.New("503 service unavailable")),
		scripted.Reply("42"),
	))
	if err != nil {
		panic(err)
	}
	compute, err := handoff.New("compute", "Computes.", flaky, handoff.WithRetries(2, 10*time.Millisecond))
	if err != nil {
		panic(err)
	}
	r := tool.Invoke(context.Background(), compute, model.ToolCall{ID: "c1", Name: "compute", Arguments: []byte(`{"task":"6*7"}`)})
	fmt.Println(r.Text(), "after", r.Details.(handoff.Output).Attempts, "attempts")
	// Output: 42 after 2 attempts
}

func ExampleNewDynamic() {
	grep := tool.MustFunc("grep", "Searches the code.", func(context.Context, struct{}) (string, error) {
		return "handlers/admin.go:12: no auth check", nil
	})
	deploy := tool.MustFunc("deploy", "Deploys.", func(context.Context, struct{}) (string, error) { return "deployed", nil })

	// The template is the boundary in code: the model, the base prompt, and
	// which of the allowed tools the agent gets.
	template := func(instruction string, tools []tool.Tool) (*graph.Graph[agent.State], error) {
		var names []string
		for _, t := range tools {
			names = append(names, tool.Name(t))
		}
		fmt.Printf("building an agent (%s) with tools %v\n", instruction, names)
		m := scripted.New(scripted.CallTools(scripted.Call("grep", `{}`)), scripted.Func(func(req *model.Request) (*model.Response, error) {
			return &model.Response{Message: model.Assistant("1 finding: " + req.Messages[len(req.Messages)-1].Text())}, nil
		}))
		return agent.NewReAct(m, agent.WithSystemPrompt("You are a focused helper. "+instruction), agent.WithTools(tools...))
	}
	dyn, err := handoff.NewDynamic("", "", template, []tool.Tool{grep, deploy})
	if err != nil {
		panic(err)
	}
	r := tool.Invoke(context.Background(), dyn, model.ToolCall{ID: "d1", Name: handoff.DynamicName, Arguments: []byte(
		`{"request":"Audit handlers/ for missing auth checks.","instruction":"Act as a security auditor.","tools":["grep"]}`)})
	fmt.Println(strings.TrimSpace(r.Text()))
	// Output:
	// building an agent (Act as a security auditor.) with tools [grep]
	// 1 finding: handlers/admin.go:12: no auth check
}

// A handoff's agent ends its caller's turn: its tool answers with
// ToParent(..., graph.END), and the supervisor's model is not called
// again.
func ExampleToParent() {
	approve := tool.MustFunc("approve_refund", "Approves a refund.", func(context.Context, struct{}) (tool.Result, error) {
		return handoff.ToParent("Refund approved.", graph.END), nil
	})
	refunds, err := agent.NewReAct(scripted.New(scripted.CallTools(scripted.Call("approve_refund", `{}`))),
		agent.WithName("refunds"), agent.WithTools(approve))
	if err != nil {
		panic(err)
	}
	h, err := handoff.New("refunds", "Handles refunds.", refunds)
	if err != nil {
		panic(err)
	}
	boss := scripted.New(scripted.CallTools(scripted.Call("refunds", `{"task":"Refund order 42."}`)))
	g, err := agent.NewReAct(boss, agent.WithTools(h))
	if err != nil {
		panic(err)
	}
	out, err := g.Invoke(context.Background(), agent.Ask("I want my money back."))
	if err != nil {
		panic(err)
	}
	fmt.Println(agent.FinalText(out.Messages), boss.Calls())
	// Output: Refund approved. 1
}

// An input filter gives the agent the caller's conversation without its
// tool traffic.
func ExampleWithInputFilter() {
	writer := scripted.New(scripted.Reply("Dear customer, ..."))
	g, err := agent.NewReAct(writer, agent.WithName("writer"))
	if err != nil {
		panic(err)
	}
	_, err = handoff.New("writer", "Writes letters.", g, handoff.WithInputFilter(handoff.WithoutTools))
	fmt.Println(err)
	// Output: <nil>
}
