package artifact_test

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/artifact"
)

func Example() {
	ctx := context.Background()
	store := artifact.NewMemory()
	thread := artifact.Scope{App: "reports", User: "ada", Thread: "q3-review"}

	// Each save of a name is a new version.
	for _, text := range []string{"revenue,100\n", "revenue,120\n"} {
		v, err := store.Save(ctx, thread, "revenue.csv", artifact.Artifact{Data: []byte(text), MediaType: "text/csv"})
		if err != nil {
			panic(err)
		}
		fmt.Println("saved version", v)
	}
	// A "user:" name belongs to the user, in every thread.
	if _, err := store.Save(ctx, thread, "user:style.txt", artifact.Artifact{Data: []byte("short answers")}); err != nil {
		panic(err)
	}

	first, err := store.Load(ctx, thread, "revenue.csv", 1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("version 1: %q\n", first.Data)

	infos, err := store.List(ctx, artifact.Scope{App: "reports", User: "ada", Thread: "another"})
	if err != nil {
		panic(err)
	}
	for _, in := range infos {
		fmt.Println("another thread sees", in.Name)
	}
	// Output:
	// saved version 1
	// saved version 2
	// version 1: "revenue,100\n"
	// another thread sees user:style.txt
}

func ExampleTools() {
	store := artifact.NewMemory()
	tools, err := artifact.Tools(store, artifact.WithReadOnly())
	if err != nil {
		panic(err)
	}
	// An application's tool keeps its large output out of the
	// conversation.
	report := tool.MustFunc("build_report", "Build the quarterly report.",
		func(ctx context.Context, _ struct{}) (string, error) {
			text := "# Q3\nRevenue grew 20%."
			if _, err := artifact.SaveFromTool(ctx, "q3.md", artifact.Artifact{Data: []byte(text), MediaType: "text/markdown"}); err != nil {
				return "", err
			}
			return "saved q3.md", nil
		})
	// A scripted model stands in for a real one: it builds the report,
	// loads it, and answers from it.
	m := scripted.New(
		scripted.CallTools(scripted.Call("build_report", `{}`)),
		scripted.CallTools(scripted.Call(artifact.LoadName, `{"name":"q3.md"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			fmt.Println(req.Messages[len(req.Messages)-1].Text())
			return &model.Response{Message: model.Assistant("Revenue grew 20% in Q3.")}, nil
		}),
	)
	assistant, err := agent.NewReAct(m, agent.WithTools(report), agent.WithToolsets(tools))
	if err != nil {
		panic(err)
	}
	ctx := artifact.WithStore(artifact.WithUser(context.Background(), "ada"), store)
	out, err := assistant.Invoke(ctx, agent.Ask("How did Q3 go?"), graph.WithThread("thread-7"))
	if err != nil {
		panic(err)
	}
	fmt.Println(agent.FinalText(out.Messages))
	// Output:
	// Artifact "q3.md", version 1 of 1 (text/markdown, 22 bytes):
	// # Q3
	// Revenue grew 20%.
	// Revenue grew 20% in Q3.
}
