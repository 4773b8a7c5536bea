package scripted_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
)

// A script that calls a tool, then answers once it has the result.
func ExampleNew() {
	m := scripted.New(
		scripted.CallTools(scripted.Call("get_weather", `{"city":"Paris"}`)),
		scripted.Reply("It is 18°C in Paris."),
	)
	ctx := context.Background()
	msgs := []model.Message{model.User("What is the weather in Paris?")}

	resp, _ := m.Generate(ctx, &model.Request{Messages: msgs})
	call := resp.Message.ToolCalls[0]
	fmt.Println(resp.FinishReason, call.ID, call.Name, string(call.Arguments))

	msgs = append(msgs, resp.Message, model.ToolMessage(call.ID, call.Name, false, model.TextPart("18°C")))
	resp, _ = m.Generate(ctx, &model.Request{Messages: msgs})
	fmt.Println(resp.FinishReason, resp.Message.Text())

	_, err := m.Generate(ctx, &model.Request{Messages: msgs})
	fmt.Println(errors.Is(err, scripted.ErrExhausted))
	// Output:
	// tool_calls call_1_1 get_weather {"city":"Paris"}
	// stop It is 18°C in Paris.
	// true
}

// A step that reads the tool results it was sent.
func ExampleFunc() {
	m := scripted.New(scripted.Func(func(req *model.Request) (*model.Response, error) {
		var results []string
		for _, msg := range req.Messages {
			if msg.Role == model.RoleTool {
				results = append(results, msg.ToolName+"="+msg.Text())
			}
		}
		return &model.Response{Message: model.Assistant("Results: " + strings.Join(results, ", "))}, nil
	}))
	resp, _ := m.Generate(context.Background(), &model.Request{Messages: []model.Message{
		model.User("go"),
		model.Assistant("", scripted.CallWithID("c1", "add", `{}`), scripted.CallWithID("c2", "mul", `{}`)),
		model.ToolMessage("c1", "add", false, model.TextPart("5")),
		model.ToolMessage("c2", "mul", false, model.TextPart("6")),
	}})
	fmt.Println(resp.Message.Text())
	// Output:
	// Results: add=5, mul=6
}

// Streaming cuts the reply into chunks the way a provider does.
func ExampleModel_Stream() {
	m := scripted.New(scripted.CallTools(
		scripted.Call("search", `{"q":"trellis"}`),
	).WithText("Searching now."))
	for c, err := range m.Stream(context.Background(), &model.Request{}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch {
		case c.Text != "":
			fmt.Printf("text %q\n", c.Text)
		case c.ToolCall != nil:
			fmt.Printf("call #%d id=%q name=%q args=%q\n", c.ToolCall.Index, c.ToolCall.ID, c.ToolCall.Name, c.ToolCall.Arguments)
		default:
			fmt.Println("finish:", c.FinishReason)
		}
	}
	// Output:
	// text "Searching"
	// text " now."
	// call #0 id="call_1_1" name="search" args="{\"q\":"
	// call #0 id="" name="" args="\"trel"
	// call #0 id="" name="" args="lis\"}"
	// finish: tool_calls
}

// Requests records what the model was sent, for tests to assert on.
func ExampleModel_Requests() {
	m := scripted.New(scripted.Reply("Bonjour !"))
	_, _ = m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{model.System("Answer in French."), model.User("Hello!")},
		Tools:    []model.ToolDefinition{{Name: "translate"}},
	})
	for _, req := range m.Requests() {
		fmt.Println(len(req.Messages), req.Messages[0].Text(), req.Tools[0].Name)
	}
	// Output:
	// 2 Answer in French. translate
}

// Several agents are scripted independently, one Model each; named models
// give their tool calls distinct IDs.
func ExampleModel_Name() {
	supervisor := scripted.New(scripted.CallTools(scripted.Call("transfer_to_researcher", `{}`)))
	supervisor.Name = "supervisor"
	researcher := scripted.New(scripted.Reply("Found three sources."))
	researcher.Name = "researcher"

	ctx := context.Background()
	a, _ := supervisor.Generate(ctx, &model.Request{})
	b, _ := researcher.Generate(ctx, &model.Request{})
	fmt.Println(a.Message.ToolCalls[0].ID, a.Model)
	fmt.Println(b.Message.Text(), b.Model)
	// Output:
	// supervisor_call_1_1 supervisor
	// Found three sources. researcher
}

// A Fallback answers once the script has run out.
func ExampleModel_Fallback() {
	done := scripted.Reply("Nothing further.")
	m := scripted.New(scripted.Reply("First answer."))
	m.Fallback = &done
	for range 3 {
		resp, _ := m.Generate(context.Background(), &model.Request{})
		fmt.Println(resp.Message.Text())
	}
	// Output:
	// First answer.
	// Nothing further.
	// Nothing further.
}

// A Policy answers from the conversation: here it calls a tool until a
// tool has answered, then reports the tool's answer.
func ExamplePolicy() {
	m := scripted.Policy("researcher", func(req *model.Request) (model.Message, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			return model.Assistant("Found: " + last.Text()), nil
		}
		return model.Assistant("", scripted.Call("search", `{"q":"goroutines"}`)), nil
	})
	ctx := context.Background()
	resp, _ := m.Generate(ctx, &model.Request{Messages: []model.Message{model.User("goroutines?")}})
	fmt.Println(resp.Message.ToolCalls[0].Name, resp.Model)
	resp, _ = m.Generate(ctx, &model.Request{Messages: []model.Message{model.User("goroutines?"), resp.Message,
		model.ToolMessage(resp.Message.ToolCalls[0].ID, "search", false, model.TextPart("cheap threads"))}})
	fmt.Println(resp.Message.Text())
	// Output:
	// search researcher
	// Found: cheap threads
}
