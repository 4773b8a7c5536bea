package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type cityArgs struct {
	City string `json:"city"`
}

func weatherTool() tool.Tool {
	return tool.MustFunc("weather", "Current weather in a city",
		func(_ context.Context, in cityArgs) (string, error) {
			if in.City == "Atlantis" {
				return "", errors.New("no station there")
			}
			return in.City + ": 21°C", nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}),
	)
}

func weatherCall(id, city string) model.ToolCall {
	return model.ToolCall{ID: id, Name: "weather", Arguments: json.RawMessage(`{"city":"` + city + `"}`)}
}

func ExampleParallel() {
	ex := executor.Parallel(executor.WithMaxConcurrency(8))
	res, err := ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{
			weatherCall("call_1", "Lisbon"),
			weatherCall("call_2", "Atlantis"),
			{ID: "call_3", Name: "wether", Arguments: json.RawMessage(`{}`)},
		},
		Tools: executor.Tools(weatherTool()),
	})
	if err != nil {
		panic(err)
	}
	for _, r := range res { // one result per call, in call order
		fmt.Println(r.Status, r.Text())
	}
	// Output:
	// success Lisbon: 21°C
	// failed tool "weather" failed: no station there
	// failed unknown tool "wether". Did you mean "weather"? Available tools: weather.
}

func ExampleSequential_hooks() {
	hooks := executor.Hooks{
		BeforeCall: func(_ context.Context, req *executor.Request) (*tool.Result, error) {
			if strings.Contains(string(req.Call.Arguments), "Mordor") {
				r := tool.Errorf("travel advice: do not go there")
				return &r, nil // blocks the call
			}
			return nil, nil
		},
		AfterCall: func(_ context.Context, req *executor.Request, res *tool.Result) error {
			if !res.IsError {
				*res = tool.Text(res.Text() + " (checked)") // rewrites the result
			}
			return nil
		},
	}
	ex := executor.Sequential(executor.WithHooks(hooks))
	res, _ := ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{weatherCall("1", "Porto"), weatherCall("2", "Mordor")},
		Tools: executor.Tools(weatherTool()),
	})
	for _, r := range res {
		fmt.Println(r.Text())
	}
	// Output:
	// Porto: 21°C (checked)
	// travel advice: do not go there
}

func ExampleWithObserver() {
	progressTool := tool.MustFunc("crawl", "Crawls pages",
		func(ctx context.Context, _ struct{}) (string, error) {
			tool.ReportProgress(ctx, tool.Update{Message: "page 1 of 2"})
			return "2 pages", nil
		}, tool.WithMetadata(tool.Metadata{ConcurrencySafe: true}))
	observe := func(_ context.Context, ev executor.Event) {
		switch ev.Kind {
		case executor.ToolStart:
			fmt.Println("start", ev.Call.ID)
		case executor.ToolUpdate:
			fmt.Println("update", ev.Call.ID, ev.Update.Message)
		case executor.ToolEnd:
			fmt.Println("end", ev.Call.ID, ev.Result.Text())
		}
	}
	ex := executor.Sequential(executor.WithObserver(observe))
	_, _ = ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{{ID: "c1", Name: "crawl"}},
		Tools: executor.Tools(progressTool),
	})
	// Output:
	// start c1
	// update c1 page 1 of 2
	// end c1 2 pages
}

func ExampleChain() {
	logCalls := executor.Intercept(func(ctx context.Context, req *executor.Request, next executor.Handler) tool.Result {
		fmt.Println("calling", req.Call.Name)
		res := next.Handle(ctx, req)
		fmt.Println("answered", res.Status)
		return res
	})
	h := executor.Chain(executor.Terminal(tool.NewInvoker()), logCalls)
	res := h.Handle(context.Background(), &executor.Request{Call: weatherCall("1", "Oslo"), Tool: weatherTool()})
	fmt.Println(res.Text())
	// Output:
	// calling weather
	// answered success
	// Oslo: 21°C
}

// A middleware with state of its own: it counts the calls of each tool.
// The state is created before the Middleware is returned, so every chain
// built with it shares the counts.
func ExampleMiddleware() {
	counts := map[string]int{}
	var count executor.Middleware = func(next executor.Handler) executor.Handler {
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			counts[req.Call.Name]++ // the sequential executor: no locking needed
			return next.Handle(ctx, req)
		})
	}
	ex := executor.Sequential(executor.WithMiddleware(count))
	_, _ = ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{weatherCall("1", "Rome"), weatherCall("2", "Nice")},
		Tools: executor.Tools(weatherTool()),
	})
	fmt.Println(counts["weather"])
	// Output: 2
}

func ExampleWithFailFast() {
	ex := executor.Sequential(executor.WithFailFast())
	res, err := ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{weatherCall("1", "Atlantis"), weatherCall("2", "Bern")},
		Tools: executor.Tools(weatherTool()),
	})
	fmt.Println(errors.Is(err, executor.ErrFailFast))
	fmt.Println(res[0].Status, res[1].Status)
	// Output:
	// true
	// failed cancelled
}

// A Decorator handles concerns of a whole batch: here, a deadline for all
// of its calls together.
func ExampleDecorator() {
	batchDeadline := func(d time.Duration) executor.Decorator {
		return func(next executor.Executor) executor.Executor {
			return executor.ExecutorFunc(func(ctx context.Context, b executor.Batch) ([]tool.Result, error) {
				ctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				return next.Execute(ctx, b)
			})
		}
	}
	ex := executor.Decorate(executor.Parallel(), batchDeadline(time.Minute))
	res, _ := ex.Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{weatherCall("1", "Riga"), weatherCall("2", "Kyiv")},
		Tools: executor.Tools(weatherTool()),
	})
	fmt.Println(len(res), res[1].Text())
	// Output: 2 Kyiv: 21°C
}

func ExampleGuard() {
	forgetful := executor.ExecutorFunc(func(context.Context, executor.Batch) ([]tool.Result, error) {
		return []tool.Result{tool.Text("only one")}, nil
	})
	res, _ := executor.Guard(forgetful).Execute(context.Background(), executor.Batch{
		Calls: []model.ToolCall{weatherCall("1", "Oslo"), weatherCall("2", "Bergen")},
	})
	fmt.Println(len(res), res[1].ErrorCode)
	// Output: 2 missing_result
}
