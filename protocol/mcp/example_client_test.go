package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/protocol/mcp"
	"github.com/trellis-go/trellis/state/memory"
	"github.com/trellis-go/trellis/tool"
)

// inMemory connects a toolset's sessions to srv in the same process.
func inMemory(srv *mcp.Server) mcp.Option {
	return mcp.WithTransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		clientEnd, serverEnd := sdk.NewInMemoryTransports()
		if _, err := srv.MCP().Connect(ctx, serverEnd, nil); err != nil {
			return nil, err
		}
		return clientEnd, nil
	})
}

// A server's tool asks the user a question (elicitation). Inside a graph
// run the toolset's default answer is to pause the run with the question;
// the run is resumed with the person's answer, and the schema's defaults
// fill in what the answer leaves out.
func ExampleInterruptElicitation() {
	ctx := context.Background()
	book := tool.MustFunc("book", "Books a table.", func(ctx context.Context, _ struct{}) (string, error) {
		ans, err := tool.Elicit(ctx, tool.ElicitRequest{
			Message: "For how many, and when?",
			Schema:  json.RawMessage(`{"type":"object","properties":{"guests":{"type":"integer"},"time":{"type":"string","default":"19:00"}}}`),
		})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("booked for %v at %v", ans.Content["guests"], ans.Content["time"]), nil
	})
	srv, _ := mcp.NewServer(ctx, tool.NewStatic("restaurant", book))
	ts, _ := mcp.New(mcp.Config{Name: "restaurant"}, inMemory(srv))
	defer ts.Close()
	tools, _ := ts.Tools(ctx)

	type State struct{ Answer string }
	g, _ := graph.New[State]().
		AddNode("book", func(ctx context.Context, s State) (State, error) {
			res, err := tools[0].Call(ctx, "", json.RawMessage(`{}`))
			if err != nil {
				return s, err // the interrupt: the run pauses
			}
			s.Answer = res.Text()
			return s, nil
		}).
		AddEdge(graph.START, "book").
		Compile(graph.WithCheckpointer(memory.New()))

	_, err := g.Invoke(ctx, State{}, graph.WithThread("dinner"))
	if ie, ok := errors.AsType[*graph.InterruptError](err); ok {
		q := ie.Interrupts[0].Payload.(mcp.Elicitation)
		fmt.Println(q.Server, "asks:", q.Message)
	}
	out, err := g.Resume(ctx, "dinner", graph.WithResumeValue(tool.ElicitResult{Action: "accept", Content: map[string]any{"guests": 4}}))
	fmt.Println(out.Answer, err)
	// Output:
	// restaurant asks: For how many, and when?
	// booked for 4 at 19:00 <nil>
}

// Sampling requests of a server answered by a model of the application,
// after a policy: here every request of the "writer" server is allowed.
func ExampleSampleWith() {
	ctx := context.Background()
	haiku := tool.MustFunc("haiku", "Writes a haiku.", func(ctx context.Context, _ struct{}) (string, error) {
		res, err := tool.Sample(ctx, tool.SamplingRequest{Messages: []model.Message{model.User("A haiku about autumn.")}, MaxTokens: 60})
		if err != nil {
			return "", err
		}
		return res.Message.Text(), nil
	})
	srv, _ := mcp.NewServer(ctx, tool.NewStatic("writer", haiku))
	m := scripted.New(scripted.Reply("Leaves fall, one by one"))
	policy := func(ctx context.Context, _ tool.SamplingRequest) mcp.SamplingDecision {
		if mcp.ServerName(ctx) == "writer" {
			return mcp.SamplingAllow
		}
		return mcp.SamplingAsk
	}
	ts, _ := mcp.New(mcp.Config{Name: "writer"}, inMemory(srv), mcp.WithSampling(mcp.SampleWith(m, policy)))
	defer ts.Close()
	tools, _ := ts.Tools(ctx)
	res := tool.Invoke(ctx, tools[0], model.ToolCall{ID: "1", Name: "haiku", Arguments: json.RawMessage(`{}`)})
	fmt.Println(res.Text())
	// Output: Leaves fall, one by one
}

// A server's resources read as context for a conversation, and a prompt
// of the server used as instructions.
func ExampleToolset_ResourceMessage() {
	ctx := context.Background()
	srv, _ := mcp.NewServer(ctx, calculator(),
		mcp.WithResources(mcp.Resource{URI: "app://style", Name: "style", MIMEType: "text/plain",
			Read: func(context.Context, string) ([]model.Part, error) {
				return []model.Part{model.TextPart("Answer in one line.")}, nil
			}}),
		mcp.WithPrompts(mcp.Prompt{Name: "tutor", Arguments: []mcp.PromptArgument{{Name: "topic", Required: true}},
			Get: func(_ context.Context, args map[string]string) ([]model.Message, error) {
				return []model.Message{model.User("You tutor " + args["topic"] + ".")}, nil
			}}))
	ts, _ := mcp.New(mcp.Config{Name: "app"}, inMemory(srv))
	defer ts.Close()

	msg, _ := ts.ResourceMessage(ctx, "app://style")
	fmt.Println(msg.Role, msg.Content[0].URL, msg.Content[0].Text)
	text, _ := ts.PromptInstructions(ctx, "tutor", map[string]string{"topic": "arithmetic"})
	fmt.Println(text) // for tool.AddInstructions, or an agent's system prompt
	// Output:
	// user app://style Answer in one line.
	// You tutor arithmetic.
}
