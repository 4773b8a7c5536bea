package gemini_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/gemini"
)

// The key comes from GEMINI_API_KEY when WithAPIKey is not given.
func ExampleNew() {
	m, err := gemini.New("gemini-2.5-flash", gemini.WithThinkingBudget(1024), gemini.WithThoughts())
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{model.System("Answer in one sentence."), model.User("Why is the sky blue?")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Reasoning())
	fmt.Println(resp.Message.Text(), resp.Usage.TotalTokens)
}

// A tool round trip: the reply, signatures in its metadata, goes back
// with the tool messages, which become one turn of function responses.
// An image in a tool's result reaches the model as an image.
func ExampleModel_Generate_tools() {
	m, err := gemini.New("gemini-2.5-flash")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	req := &model.Request{
		Messages: []model.Message{model.User("What does the Paris webcam show?")},
		Tools: []model.ToolDefinition{{
			Name:        "webcam",
			Description: "The current picture of a city's webcam",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		}},
	}
	resp, err := m.Generate(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	req.Messages = append(req.Messages, resp.Message)
	for _, call := range resp.Message.ToolCalls {
		req.Messages = append(req.Messages, model.ToolMessage(call.ID, call.Name, false,
			model.TextPart("taken a minute ago"), model.ImagePart("image/jpeg", []byte("..."))))
	}
	final, err := m.Generate(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(final.Message.Text())
}

// An embedder for search by meaning, here of the long-term store; the key
// comes from GEMINI_API_KEY when WithAPIKey is not given.
func ExampleNewEmbedder() {
	e, err := gemini.NewEmbedder("gemini-embedding-001", gemini.WithDimensions(768), gemini.WithTaskType("SEMANTIC_SIMILARITY"))
	if err != nil {
		log.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"Ana likes window seats", "Bob is allergic to peanuts"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(vecs), len(vecs[0]))
}
