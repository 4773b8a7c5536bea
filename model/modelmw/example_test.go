package modelmw_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/modelmw"
	"github.com/trellis-go/trellis/model/scripted"
)

func ExampleChain() {
	base := scripted.New(scripted.Reply("Hello, Ada.").WithUsage(model.Usage{InputTokens: 12, OutputTokens: 4}))
	// A hook that rewrites the request, and one that rewrites the reply.
	polite := modelmw.Before(func(ctx context.Context, req *model.Request) (*model.Request, *model.Response, error) {
		r := *req
		r.Messages = append([]model.Message{model.System("Be polite.")}, req.Messages...)
		return &r, nil, nil
	})
	shout := modelmw.After(func(ctx context.Context, req *model.Request, resp *model.Response) (*model.Response, error) {
		out := *resp
		out.Message.Content = []model.Part{model.TextPart(strings.ToUpper(resp.Message.Text()))}
		return &out, nil
	})
	m := modelmw.Chain(base, modelmw.Retry(model.Retry{}), polite, shout)

	ledger := modelmw.NewLedger()
	ctx := modelmw.WithLedger(context.Background(), ledger)
	resp, err := m.Generate(modelmw.WithAgent(ctx, "greeter"), &model.Request{Messages: []model.Message{model.User("Hi, I'm Ada.")}})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text())
	fmt.Println(base.Requests()[0].Messages[0].Text())
	fmt.Println(ledger.Report().ByAgent["greeter"].TotalTokens)
	// Output:
	// HELLO, ADA.
	// Be polite.
	// 16
}

func ExampleFallback() {
	overloaded := &model.ProviderError{Provider: "primary", StatusCode: 529, Type: "overloaded_error"}
	primary := scripted.New(scripted.Fail(overloaded))
	backup := scripted.New(scripted.Reply("from the backup"))
	m := modelmw.Chain(primary, modelmw.Fallback([]model.Model{backup}, model.ErrOverloaded))
	resp, err := m.Generate(context.Background(), &model.Request{Messages: []model.Message{model.User("hi")}})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Message.Text())
	// Output: from the backup
}

func ExampleBudget() {
	u := model.Usage{InputTokens: 800, OutputTokens: 200}
	base := scripted.New(scripted.Reply("first").WithUsage(u), scripted.Reply("second").WithUsage(u))
	m := modelmw.Chain(base, modelmw.Budget(modelmw.BudgetPolicy{MaxTokens: 1500}))
	ctx := modelmw.WithLedger(context.Background(), modelmw.NewLedger())
	req := &model.Request{Messages: []model.Message{model.User("hi")}, Settings: model.Settings{MaxTokens: 600}}
	for range 2 {
		resp, err := m.Generate(ctx, req)
		if errors.Is(err, modelmw.ErrBudgetExceeded) {
			fmt.Println("stopped:", err)
			break
		}
		fmt.Println(resp.Message.Text())
	}
	fmt.Println("calls made:", base.Calls())
	// Output:
	// first
	// stopped: modelmw: budget exceeded: 1000 tokens spent and about 605 more for the next call, over the limit of 1500
	// calls made: 1
}

func ExampleOutputGuardrails() {
	noSecrets := modelmw.GuardrailFunc("no-secrets", func(_ context.Context, text string) (string, error) {
		if strings.Contains(text, "password") {
			return "the reply reveals a password", nil
		}
		return "", nil
	})
	noSecrets.Streaming = true // trip mid-stream
	base := scripted.New(scripted.Reply("the admin password is swordfish"))
	m := modelmw.Chain(base, modelmw.OutputGuardrails(noSecrets))
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.User("hi")}}) {
		if err != nil {
			var trip *modelmw.TripwireError
			if errors.As(err, &trip) {
				fmt.Printf("\ntripped %s: %s\n", trip.Guardrail, trip.Reason)
			}
			break
		}
		fmt.Print(c.Text)
	}
	// Output:
	// the
	// tripped no-secrets: the reply reveals a password
}

func ExampleTrimMessages() {
	msgs := []model.Message{
		model.System("You help."),
		model.User("first question"),
		model.Assistant("", model.ToolCall{ID: "c1", Name: "search", Arguments: []byte(`{}`)}),
		model.ToolMessage("c1", "search", false, model.TextPart("found it")),
		model.Assistant("first answer"),
		model.User("second question"),
	}
	for _, m := range modelmw.TrimMessages(msgs, modelmw.TrimPolicy{MaxMessages: 4}) {
		fmt.Printf("%s: %q %d calls\n", m.Role, m.Text(), len(m.ToolCalls))
	}
	// Output:
	// system: "You help." 0 calls
	// assistant: "" 1 calls
	// tool: "found it" 0 calls
	// assistant: "first answer" 0 calls
	// user: "second question" 0 calls
}

func ExampleSummarize() {
	small := scripted.New(scripted.Reply("The user is planning a trip to Oslo."))
	big := scripted.New(scripted.Reply("Pack warm layers."))
	m := modelmw.Chain(big, modelmw.Summarize(small, modelmw.SummaryPolicy{MaxTokens: 60, KeepTokens: 20}))

	msgs := []model.Message{model.System("You help travellers.")}
	for range 4 {
		msgs = append(msgs, model.User(strings.Repeat("I am going to Oslo in May. ", 4)), model.Assistant("Noted."))
	}
	msgs = append(msgs, model.User("What should I pack?"))
	if _, err := m.Generate(context.Background(), &model.Request{Messages: msgs}); err != nil {
		panic(err)
	}
	for _, msg := range big.Requests()[0].Messages {
		fmt.Printf("%s: %s\n", msg.Role, strings.ReplaceAll(msg.Text(), "\n\n", " "))
	}
	// Output:
	// system: You help travellers.
	// system: Summary of the conversation so far: The user is planning a trip to Oslo.
	// assistant: Noted.
	// user: What should I pack?
}

func ExampleRedactPII() {
	base := scripted.New(scripted.Reply("I will write to them."))
	m := modelmw.Chain(base, modelmw.RedactPII())
	req := &model.Request{Messages: []model.Message{model.User("Mail ada@example.com, card 4111 1111 1111 1111.")}}
	if _, err := m.Generate(context.Background(), req); err != nil {
		panic(err)
	}
	fmt.Println(base.Requests()[0].Messages[0].Text()) // what the model was sent
	fmt.Println(req.Messages[0].Text())                // what the caller (and the state) keeps
	// Output:
	// Mail [email], card [card].
	// Mail ada@example.com, card 4111 1111 1111 1111.
}
