package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/anthropic"
)

// The key comes from ANTHROPIC_API_KEY when WithAPIKey is not given.
func ExampleNew() {
	m, err := anthropic.New("claude-sonnet-4-5", anthropic.WithMaxTokens(1024))
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{model.System("Answer in one sentence."), model.User("Why is the sky blue?")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Text(), resp.Usage.TotalTokens)
}

// A tool round trip: the tool results go back as tool messages, which the
// model sends as one user turn of tool_result blocks.
func ExampleModel_Generate_tools() {
	m, err := anthropic.New("claude-haiku-4-5")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	req := &model.Request{
		Messages: []model.Message{model.User("What is the weather in Paris?")},
		Tools: []model.ToolDefinition{{
			Name:        "get_weather",
			Description: "Current weather for a city",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		}},
	}
	resp, err := m.Generate(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	req.Messages = append(req.Messages, resp.Message)
	for _, call := range resp.Message.ToolCalls {
		req.Messages = append(req.Messages, model.ToolMessage(call.ID, call.Name, false, model.TextPart("18°C, clear")))
	}
	resp, err = m.Generate(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Text())
}

// Web search runs on Anthropic's side: the reply's text answers from the
// results, and the search's call and results stay in the message as
// provider parts, which go back with it in the next request.
func ExampleWithServerTools() {
	m, err := anthropic.New("claude-sonnet-4-5",
		anthropic.WithServerTools(anthropic.WebSearch(3, "en.wikipedia.org")))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	msgs := []model.Message{model.User("Who won the 2026 Tour de France?")}
	resp, err := m.Generate(ctx, &model.Request{Messages: msgs})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Text())

	msgs = append(msgs, resp.Message, model.User("And the year before?"))
	resp, err = m.Generate(ctx, &model.Request{Messages: msgs})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Text())
}
