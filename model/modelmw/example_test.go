package modelmw_test

import (
	"context"
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
