package agent_test

import (
	"context"
	"fmt"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/state/memory"
)

func ExampleNewSwarm() {
	triage := scripted.New(scripted.CallTools(scripted.Call(agent.TransferToolName("billing"), `{}`)))
	billing := scripted.New(
		scripted.Reply("Billing here: I have refunded invoice 7."),
		scripted.Reply("Billing again: the refund takes three days."),
	)
	swarm, err := agent.NewSwarm([]agent.SwarmAgent{
		{Name: "triage", Description: "Greets customers and finds who can help.", Model: triage},
		{Name: "billing", Description: "Handles invoices and refunds.", Model: billing},
	}, agent.WithCheckpointer(memory.New()))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, text := range []string{"Please refund invoice 7.", "How long will it take?"} {
		out, err := agent.Continue(ctx, swarm, "customer-42", text)
		if err != nil {
			panic(err)
		}
		fmt.Printf("[%s] %s\n", out.Active, agent.FinalText(out.Messages))
	}
	// Output:
	// [billing] Billing here: I have refunded invoice 7.
	// [billing] Billing again: the refund takes three days.
}
