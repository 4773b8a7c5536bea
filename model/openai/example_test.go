package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/openai"
)

// The base URL and key come from OPENAI_BASE_URL and OPENAI_API_KEY when no
// option sets them.
func ExampleNew() {
	m, err := openai.New("gpt-4o-mini")
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

// Any server that speaks the Chat Completions API works through its base
// URL: here a local Ollama.
func ExampleNew_ollama() {
	m, err := openai.New("llama3.2",
		openai.WithBaseURL("http://localhost:11434/v1"),
		openai.WithAPIKey("ollama"), // Ollama ignores the key.
		openai.WithRetry(model.Retry{MaxRetries: 4, BaseDelay: 200 * time.Millisecond}),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(m.Info().Provider, m.Info().Name)
}

// Stream yields text as it arrives; model.Collect assembles a stream into a
// Response, tool calls included.
func ExampleModel_Stream() {
	m, err := openai.New("gpt-4o-mini")
	if err != nil {
		log.Fatal(err)
	}
	var acc model.Accumulator
	for chunk, err := range m.Stream(context.Background(), &model.Request{
		Messages: []model.Message{model.User("Write a haiku about graphs.")},
	}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(chunk.Text)
		acc.Add(chunk)
	}
	fmt.Println()
	fmt.Println(acc.Response().Usage.TotalTokens)
}

// A reasoning model on the Responses API, with OpenAI's web search: the
// reasoning and the search come back as provider parts, which go back with
// the message in the next request.
func ExampleWithResponsesAPI() {
	m, err := openai.New("o4-mini",
		openai.WithResponsesAPI(),
		openai.WithReasoningEffort("low"),
		openai.WithReasoningSummary("auto"),
		openai.WithBuiltinTools(json.RawMessage(`{"type":"web_search"}`)),
	)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := m.Generate(context.Background(), &model.Request{
		Messages: []model.Message{model.User("What is the weather in Paris today?")},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Reasoning())
	fmt.Println(resp.Message.Text())
}

// An embedder for search by meaning, here on a local Ollama; any server
// that speaks the embeddings endpoint (vLLM, text-embeddings-inference)
// works the same way through its base URL.
func ExampleNewEmbedder() {
	e, err := openai.NewEmbedder("nomic-embed-text",
		openai.WithBaseURL("http://localhost:11434/v1"),
		openai.WithAPIKey("ollama"), // Ollama ignores the key.
		openai.WithEmbedBatch(64),
	)
	if err != nil {
		log.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"Ana likes window seats", "Bob is allergic to peanuts"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(vecs), len(vecs[0]))
}
