package toolsearch_test

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/toolsearch"
)

// An agent with a dozen tools lets a small model pick the few its main
// model is offered for each request.
func ExampleNew() {
	type city struct {
		City string `json:"city"`
	}
	var tools []tool.Tool
	for _, name := range []string{
		"weather", "forecast", "air_quality", "send_mail", "read_mail", "calendar",
		"create_event", "translate", "convert_currency", "stock_price", "news", "search_web",
	} {
		tools = append(tools, tool.MustFunc(name, "the "+name+" of a city",
			func(_ context.Context, in city) (string, error) { return name + " in " + in.City, nil }))
	}

	// Scripted models stand in for real ones: the small model picks, the
	// main model calls the tool it is offered.
	small := scripted.New(scripted.Reply(`{"tools": ["forecast", "weather"]}`).
		WithUsage(model.Usage{InputTokens: 210, OutputTokens: 12}))
	main := scripted.New(
		scripted.CallTools(scripted.Call("forecast", `{"city":"Oslo"}`)),
		scripted.Reply("Rain tomorrow in Oslo."),
	)
	var spent model.Usage
	search := toolsearch.New(small, toolsearch.WithMaxTools(4),
		toolsearch.WithUsage(func(u model.Usage) { spent = spent.Add(u) }))
	g, err := agent.NewReAct(main, agent.WithTools(tools...),
		agent.WithResolveOptions(tool.SelectWith(search)))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	out, err := g.Invoke(context.Background(), agent.Ask("Will it rain in Oslo tomorrow?"))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, d := range main.Requests()[0].Tools {
		fmt.Println("offered:", d.Name)
	}
	fmt.Println(agent.FinalText(out.Messages))
	fmt.Println("selections asked:", small.Calls(), "tokens:", spent.TotalTokens)
	// Output:
	// offered: weather
	// offered: forecast
	// Rain tomorrow in Oslo.
	// selections asked: 1 tokens: 222
}
