package nodes_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/nodes"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// State embeds nodes.Chat, so the nodes of this package work on it.
type State struct {
	nodes.Chat
}

// An LLM node and a ToolsNode in a loop: the model asks for a tool, the
// ToolsNode answers, the model answers the user.
func ExampleAddTools() {
	double := tool.MustFunc("double", "Doubles a number.", func(_ context.Context, in struct {
		N int `json:"n"`
	}) (int, error) {
		return 2 * in.N, nil
	})
	m := scripted.New(
		scripted.CallTools(scripted.Call("double", `{"n": 21}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			last := req.Messages[len(req.Messages)-1]
			return &model.Response{Message: model.Assistant("The answer is " + last.Text() + ".")}, nil
		}),
	)
	b := graph.New[State](nodes.MessagesReducer[State]()).
		AddNode("llm", nodes.LLM[State](m, nodes.WithTools(double))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[State]("tools"), "tools", graph.END)
	nodes.AddTools[State](b, "tools", "llm", nodes.WithTools(double))
	g, err := b.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := g.Invoke(context.Background(), State{Chat: nodes.Chat{Messages: []model.Message{model.User("double 21")}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, msg := range out.Messages {
		fmt.Printf("%s: %s%s\n", msg.Role, msg.Text(), calls(msg))
	}
	// Output:
	// user: double 21
	// assistant:  [double {"n": 21}]
	// tool: 42
	// assistant: The answer is 42.
}

func calls(m model.Message) string {
	out := ""
	for _, c := range m.ToolCalls {
		out += fmt.Sprintf(" [%s %s]", c.Name, c.Arguments)
	}
	return out
}

// With structured output, the final answer is JSON of a Go type, whether or
// not the model supports response formats.
func ExampleStructured() {
	type Verdict struct {
		Spam bool `json:"spam"`
	}
	m := scripted.New(scripted.CallTools(scripted.Call(tool.SetModelResponseName, `{"spam": "true"}`)))
	g, _ := graph.New[State]().
		AddNode("classify", nodes.LLM[State](m, nodes.WithStructuredOutput[Verdict]())).
		AddEdge(graph.START, "classify").
		Compile()
	out, _ := g.Invoke(context.Background(), State{Chat: nodes.Chat{Messages: []model.Message{model.User("WIN A PRIZE")}}})
	v, err := nodes.Structured[Verdict](out.Messages[len(out.Messages)-1])
	fmt.Println(v.Spam, err)
	// Output: true <nil>
}

// Given to both nodes, structured output is a loop: an answer that does not
// match the schema goes back to the model with the validation error.
func ExampleWithStructuredOutput() {
	type Verdict struct {
		Spam bool `json:"spam"`
	}
	m := scripted.New(
		scripted.CallTools(scripted.Call(tool.SetModelResponseName, `{"spam": "maybe"}`)),
		scripted.CallTools(scripted.Call(tool.SetModelResponseName, `{"spam": false}`)),
	)
	structured := nodes.WithStructuredOutput[Verdict]()
	b := graph.New[State]().
		AddNode("classify", nodes.LLM[State](m, structured)).
		AddEdge(graph.START, "classify").
		AddConditionalEdges("classify", nodes.ToolsCondition[State]("tools"), "tools", graph.END)
	nodes.AddTools[State](b, "tools", "classify", structured)
	g, _ := b.Compile()
	out, _ := g.Invoke(context.Background(), State{Chat: nodes.Chat{Messages: []model.Message{model.User("Lunch at noon?")}}})
	for _, msg := range out.Messages[1:] {
		fmt.Printf("%s: error=%t\n", msg.Role, msg.IsError)
	}
	v, err := nodes.Structured[Verdict](out.Messages[len(out.Messages)-1])
	fmt.Println(v.Spam, err)
	// Output:
	// assistant: error=false
	// tool: error=true
	// assistant: error=false
	// false <nil>
}

// The model asks the user a question: the run pauses, and resumes with the
// answer.
func ExampleAskUser() {
	ask := nodes.AskUser()
	m := scripted.New(
		scripted.CallTools(scripted.Call(nodes.AskUserName, `{"question": "Which city?"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			last := req.Messages[len(req.Messages)-1]
			return &model.Response{Message: model.Assistant("Booking a trip to " + last.Text() + ".")}, nil
		}),
	)
	b := graph.New[State](nodes.MessagesReducer[State]()).
		AddNode("llm", nodes.LLM[State](m, nodes.WithTools(ask))).
		AddEdge(graph.START, "llm").
		AddConditionalEdges("llm", nodes.ToolsCondition[State]("tools"), "tools", graph.END)
	nodes.AddTools[State](b, "tools", "llm", nodes.WithTools(ask))
	g, err := b.Compile(graph.WithCheckpointer(memory.New()))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	_, err = g.Invoke(ctx, State{Chat: nodes.Chat{Messages: []model.Message{model.User("Book me a trip.")}}}, graph.WithThread("trip"))
	var ie *graph.InterruptError
	if !errors.As(err, &ie) {
		fmt.Println("no question:", err)
		return
	}
	fmt.Println("asked:", ie.Interrupts[0].Payload.(nodes.Question).Question)
	out, err := g.Resume(ctx, "trip", graph.WithResumeValue("Lisbon"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Messages[len(out.Messages)-1].Text())
	// Output:
	// asked: Which city?
	// Booking a trip to Lisbon.
}

// ExampleAppendReply appends a model's reply that asks for two tools:
// the conversation grows with room for the two tool messages, which the
// ToolsNode then writes in place.
func ExampleAppendReply() {
	msgs := []model.Message{model.User("Weather in Oslo and Lima?")}
	nodes.AppendReply(&msgs, model.Assistant("",
		model.ToolCall{ID: "a", Name: "weather", Arguments: []byte(`{"city":"Oslo"}`)},
		model.ToolCall{ID: "b", Name: "weather", Arguments: []byte(`{"city":"Lima"}`)},
	))
	fmt.Println(len(msgs), cap(msgs) >= len(msgs)+2)
	// Output: 2 true
}
