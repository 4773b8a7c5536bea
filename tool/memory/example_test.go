package memory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool/memory"
)

func Example() {
	store, err := memory.New(memory.WithMaxEntries(1000))
	if err != nil {
		panic(err)
	}
	ada := memory.WithScope(context.Background(), "user-ada")
	for _, text := range []string{
		"Prefers window seats on long flights",
		"Is allergic to peanuts",
		"Flies to Lisbon every spring",
	} {
		if _, err := store.Add(ada, memory.Entry{Text: text}); err != nil {
			panic(err)
		}
	}

	docs, err := store.Retrieve(ada, "Which seat does she want on flights?", 2)
	if err != nil {
		panic(err)
	}
	for _, d := range docs {
		fmt.Printf("%.3f %s\n", d.Score, d.Content)
	}

	// Another user's context sees none of Ada's memories.
	docs, err = store.Retrieve(memory.WithScope(context.Background(), "user-bob"), "seat", 2)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(docs), "for Bob")
	// Output:
	// 1.708 Prefers window seats on long flights
	// 0 for Bob
}

func ExampleTools() {
	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	tools, err := memory.Tools(store)
	if err != nil {
		panic(err)
	}
	// A scripted model stands in for a real one: it saves what the user
	// said, then answers.
	assistant, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call(memory.AddName, `{"text":"The user's cat is called Miso","topics":["pets"]}`)),
		scripted.Reply("Noted: your cat is Miso."),
	), agent.WithToolsets(tools), agent.WithMemory(store))
	if err != nil {
		panic(err)
	}
	ctx := memory.WithScope(context.Background(), "user-42")
	out, err := assistant.Invoke(ctx, agent.Ask("My cat is called Miso."))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Messages[len(out.Messages)-1].Text())

	list, err := store.List(ctx, memory.Filter{Topic: "pets"})
	if err != nil {
		panic(err)
	}
	for _, e := range list {
		fmt.Println(e.Scope, e.Text, e.Topics)
	}
	// Output:
	// Noted: your cat is Miso.
	// user-42 The user's cat is called Miso [pets]
}

func ExampleStore_SaveFile() {
	dir, err := os.MkdirTemp("", "memory-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "memory.json")
	ctx := context.Background()

	store, err := memory.New()
	if err != nil {
		panic(err)
	}
	if _, err := store.Add(ctx, memory.Entry{Text: "The build runs on Go 1.26"}); err != nil {
		panic(err)
	}
	if err := store.SaveFile(path); err != nil {
		panic(err)
	}

	// Later, or in another process: load what was saved.
	restored, err := memory.New()
	if err != nil {
		panic(err)
	}
	if err := restored.LoadFile(ctx, path); err != nil {
		panic(err)
	}
	docs, err := restored.Retrieve(ctx, "which Go version?", 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(docs[0].Content)
	// Output:
	// The build runs on Go 1.26
}
