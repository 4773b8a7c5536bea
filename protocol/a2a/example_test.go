package a2a_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/protocol/a2a"
	"github.com/trellis-go/trellis/runs"
	runsqlite "github.com/trellis-go/trellis/runs/sqlite"
)

func ExampleNewTool() {
	// The remote agent: a Trellis agent served over A2A. In production it
	// runs elsewhere, built with any framework that speaks A2A.
	translator, err := agent.NewReAct(scripted.New(scripted.Reply("Bonjour le monde")),
		agent.WithSystemPrompt("You translate English into French."))
	if err != nil {
		panic(err)
	}
	srv, err := a2a.NewServer("Translator", "Translates English text into French.", translator)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	// The caller: a tool made from the remote agent's card, given to an
	// agent that delegates to it.
	ctx := context.Background()
	translate, err := a2a.NewTool(ctx, hs.URL)
	if err != nil {
		panic(err)
	}
	fmt.Println("tool:", translate.Definition().Name)

	boss, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call("translator", `{"task":"Translate: Hello world"}`)),
		scripted.Func(func(req *model.Request) (*model.Response, error) {
			// The tool result is the answer, then "[context_id: ...]".
			result := req.Messages[len(req.Messages)-1].Text()
			answer, _, _ := strings.Cut(result, "\n")
			return &model.Response{Message: model.Assistant("The translator says: " + answer)}, nil
		}),
	), agent.WithTools(translate))
	if err != nil {
		panic(err)
	}
	out, err := boss.Invoke(ctx, agent.Ask("How do you say hello world in French?"))
	if err != nil {
		panic(err)
	}
	fmt.Println(agent.FinalText(out.Messages))
	// Output:
	// tool: translator
	// The translator says: Bonjour le monde
}

func ExampleNewServer() {
	// A Trellis agent served over A2A; any A2A client can call it.
	weather, err := agent.NewReAct(scripted.New(scripted.Reply("Sunny, 24 °C.")))
	if err != nil {
		panic(err)
	}
	srv, err := a2a.NewServer("Weather", "Reports the weather.", weather,
		a2a.WithSkills(a2a.Skill{ID: "forecast", Name: "Forecast", Description: "Today's weather for a city.", Tags: []string{"weather"}}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	// A client reads the card, then sends a message.
	ctx := context.Background()
	c, err := a2a.NewClient(hs.URL)
	if err != nil {
		panic(err)
	}
	card, err := c.Card(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(card.Name, "—", card.Skills[0].Name, "— streaming:", card.Capabilities.Streaming)
	ev, err := c.SendMessage(ctx, a2a.SendRequest{Message: a2a.Message{Parts: []a2a.Part{a2a.TextPart("Weather in Lisbon?")}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(ev.Task.Status.State)
	fmt.Println(ev.Task.Artifacts[0].Parts[0].Text)
	// Output:
	// Weather — Forecast — streaming: true
	// TASK_STATE_COMPLETED
	// Sunny, 24 °C.
}

func ExampleClient_SendStreamingMessage() {
	storyteller, err := agent.NewReAct(scripted.New(scripted.Reply("Once upon a time, a gopher wrote Go.")))
	if err != nil {
		panic(err)
	}
	srv, err := a2a.NewServer("Storyteller", "Tells short stories.", storyteller)
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	c, err := a2a.NewClient(hs.URL)
	if err != nil {
		panic(err)
	}
	var text strings.Builder
	for ev, err := range c.SendStreamingMessage(context.Background(), a2a.SendRequest{
		Message: a2a.Message{Parts: []a2a.Part{a2a.TextPart("Tell me a story.")}},
	}) {
		if err != nil {
			panic(err)
		}
		switch {
		case ev.Task != nil:
			fmt.Println("task", ev.Task.Status.State)
		case ev.StatusUpdate != nil:
			if m := ev.StatusUpdate.Status.Message; m != nil && m.Metadata[a2a.MetaDelta] == true {
				text.WriteString(m.Parts[0].Text) // the model's text as it comes
				continue
			}
			fmt.Println("status", ev.StatusUpdate.Status.State)
		case ev.ArtifactUpdate != nil:
			fmt.Println("artifact", ev.ArtifactUpdate.Artifact.ArtifactID)
		}
	}
	fmt.Println(text.String())
	// Output:
	// task TASK_STATE_SUBMITTED
	// status TASK_STATE_WORKING
	// artifact answer
	// status TASK_STATE_COMPLETED
	// Once upon a time, a gopher wrote Go.
}

func ExampleWithRuns() {
	// Tasks kept on the runs layer: any replica sharing the database (here
	// an in-memory SQLite one, a single process) answers for them.
	ctx := context.Background()
	mgr, err := runsqlite.Open(ctx, ":memory:")
	if err != nil {
		panic(err)
	}
	defer mgr.Close()
	weather, err := agent.NewReAct(scripted.New(scripted.Reply("Sunny, 24 °C.")),
		agent.WithName("weather"), agent.WithCheckpointer(mgr.Saver()))
	if err != nil {
		panic(err)
	}
	if err := mgr.Register(runs.Graph(weather)); err != nil {
		panic(err)
	}
	workCtx, stop := context.WithCancel(ctx)
	worked := make(chan error, 1)
	go func() { worked <- mgr.Work(workCtx) }()
	defer func() { stop(); <-worked }()

	srv, err := a2a.NewServer("weather", "Reports the weather.", weather, a2a.WithRuns(mgr))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	c, err := a2a.NewClient(hs.URL)
	if err != nil {
		panic(err)
	}
	ev, err := c.SendMessage(ctx, a2a.SendRequest{Message: a2a.Message{Parts: []a2a.Part{a2a.TextPart("Weather in Lisbon?")}}})
	if err != nil {
		panic(err)
	}
	task, err := c.GetTask(ctx, ev.Task.ID, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(task.Status.State, "—", task.Artifacts[0].Parts[0].Text)
	// Output:
	// TASK_STATE_COMPLETED — Sunny, 24 °C.
}
