package knowledge_test

import (
	"context"
	"fmt"
	"strings"
	"testing/fstest"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool/knowledge"
)

func Example() {
	ctx := context.Background()
	kb, err := knowledge.New()
	if err != nil {
		panic(err)
	}
	// An os.DirFS or an embed.FS serves as well.
	docs := fstest.MapFS{
		"install.md": {Data: []byte("# Install\n\n## On Linux\n\nRun the installer script, then log in again.\n\n## On macOS\n\nOpen the disk image and drag the app to Applications.\n")},
		"faq.md":     {Data: []byte("---\ntitle: Questions\nproduct: desktop\n---\n\nThe app needs 2 GB of memory.\n")},
		"logo.png":   {Data: []byte("\x89PNG\x00")},
	}
	report, err := kb.AddDir(ctx, docs)
	if err != nil {
		panic(err)
	}
	fmt.Println("added", report.Added, "in", report.Chunks, "chunks")

	results, err := kb.Search(ctx, knowledge.Query{Text: "How do I install it on Linux?", Limit: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(knowledge.Format(results))
	// Output:
	// added [faq.md install.md] in 3 chunks
	// [1] Install — install.md#on-linux
	// Section: Install › On Linux
	// Run the installer script, then log in again.
	//
	// [2] Install — install.md#on-macos
	// Section: Install › On macOS
	// Open the disk image and drag the app to Applications.
}

func ExampleSearchTool() {
	ctx := context.Background()
	kb, err := knowledge.New()
	if err != nil {
		panic(err)
	}
	for _, d := range []knowledge.Doc{
		{ID: "v1", Source: "release-notes/v1.md", Metadata: map[string]string{"version": "1"}, Text: "# Version 1\n\nExports are written as CSV."},
		{ID: "v2", Source: "release-notes/v2.md", Metadata: map[string]string{"version": "2"}, Text: "# Version 2\n\nExports are written as Parquet."},
	} {
		if err := kb.AddDocument(ctx, d); err != nil {
			panic(err)
		}
	}
	search, err := knowledge.SearchTool(kb, knowledge.WithAgentic(), knowledge.WithDescription("The product's release notes."))
	if err != nil {
		panic(err)
	}
	// A scripted model stands in for a real one: it searches the notes of
	// version 2, then answers with the citation it found.
	m := scripted.New(
		scripted.CallTools(scripted.Call(knowledge.SearchName, `{"query":"export format","filter":{"version":"2"}}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			found := req.Messages[len(req.Messages)-1].Text()
			fmt.Println(found)
			cite := strings.TrimPrefix(strings.SplitN(found, "\n", 2)[0], "[1] ")
			return &model.Response{Message: model.Assistant("Version 2 exports Parquet (" + cite + ").")}, nil
		}),
	)
	assistant, err := agent.NewReAct(m, agent.WithTools(search))
	if err != nil {
		panic(err)
	}
	out, err := assistant.Invoke(ctx, agent.Ask("What format does version 2 export?"))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Messages[len(out.Messages)-1].Text())
	// Output:
	// [1] Version 2 — release-notes/v2.md#version-2
	// Section: Version 2
	// Exports are written as Parquet.
	// Version 2 exports Parquet (Version 2 — release-notes/v2.md#version-2).
}
