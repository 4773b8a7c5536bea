package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

type forecastArgs struct {
	City string `json:"city" jsonschema:"description=City name,minLength=1"`
	Days int    `json:"days,omitempty" jsonschema:"description=Days ahead,minimum=1,maximum=7"`
}

func forecast(_ context.Context, in forecastArgs) (string, error) {
	return fmt.Sprintf("%s: sunny for %d day(s)", in.City, max(in.Days, 1)), nil
}

func ExampleNewFunc() {
	weather, err := tool.NewFunc("forecast", "Weather forecast for a city", forecast)
	if err != nil {
		panic(err)
	}
	// The model sent the number of days as a string: it is coerced.
	r := tool.Invoke(context.Background(), weather, model.ToolCall{
		ID: "call_1", Name: "forecast", Arguments: json.RawMessage(`{"city":"Lisbon","days":"3"}`),
	})
	fmt.Println(r.Status, r.Text())
	// Output: success Lisbon: sunny for 3 day(s)
}

func ExampleInvoke_invalidArguments() {
	weather := tool.MustFunc("forecast", "Weather forecast for a city", forecast)
	r := tool.Invoke(context.Background(), weather, model.ToolCall{
		ID: "call_1", Name: "forecast", Arguments: json.RawMessage(`{"days":30,"units":"C"}`),
	})
	fmt.Println(r.Status, r.ErrorCode)
	fmt.Println(r.Text())
	// Output:
	// failed invalid_arguments
	// invalid arguments for tool "forecast":
	// - $.city: required property is missing
	// - $.days: must be <= 7, got 30
	// - $.units: unknown property (allowed: city, days)
	// arguments received: {"days":30,"units":"C"}
	// The tool did not run. Correct the arguments and call it again.
}

func ExampleSchemaFor() {
	schema, err := tool.SchemaFor[forecastArgs]()
	if err != nil {
		panic(err)
	}
	fmt.Println(string(schema))
	// Output: {"properties":{"city":{"type":"string","minLength":1,"description":"City name"},"days":{"type":"integer","maximum":7,"minimum":1,"description":"Days ahead"}},"additionalProperties":false,"type":"object","required":["city"]}
}

func ExampleRepairJSON() {
	fixed, err := tool.RepairJSON([]byte("```json\n{city: 'Oslo', days: 2,}\n```"))
	fmt.Println(string(fixed), err)
	// Output: {"city":"Oslo","days":2} <nil>
}

func ExampleWithJSONRepair() {
	weather := tool.MustFunc("forecast", "Weather forecast", forecast)
	r := tool.Invoke(context.Background(), weather, model.ToolCall{
		ID: "call_1", Name: "forecast", Arguments: json.RawMessage(`{'city': 'Oslo', 'days': 2`),
	}, tool.WithJSONRepair(true))
	fmt.Println(r.Text())
	// Output: Oslo: sunny for 2 day(s)
}

func ExampleReportProgress() {
	crawl := tool.MustFunc("crawl", "Crawl pages", func(ctx context.Context, in struct {
		Pages int `json:"pages"`
	}) (string, error) {
		for i := 1; i <= in.Pages; i++ {
			tool.ReportProgress(ctx, tool.Update{Message: fmt.Sprintf("page %d of %d", i, in.Pages)})
		}
		return "crawled", nil
	})
	sink := func(u tool.Update) { fmt.Println(u.CallID, u.ToolName, u.Message) }
	r := tool.Invoke(context.Background(), crawl, model.ToolCall{ID: "c7", Name: "crawl", Arguments: json.RawMessage(`{"pages":2}`)},
		tool.WithProgress(sink))
	fmt.Println(r.Text())
	// Output:
	// c7 crawl page 1 of 2
	// c7 crawl page 2 of 2
	// crawled
}

func ExampleNewStreamFunc() {
	spell := tool.MustStreamFunc("spell", "Spell a word", func(_ context.Context, in struct {
		Word string `json:"word"`
	}) iter.Seq2[string, error] {
		return func(yield func(string, error) bool) {
			for _, r := range in.Word {
				if !yield(strings.ToUpper(string(r)), nil) {
					return
				}
			}
		}
	})
	r := tool.Invoke(context.Background(), spell, model.ToolCall{ID: "s", Name: "spell", Arguments: json.RawMessage(`{"word":"go"}`)},
		tool.WithProgress(func(u tool.Update) { fmt.Println("piece:", u.Content[0].Text) }))
	fmt.Println("final:", r.Text())
	// Output:
	// piece: G
	// piece: O
	// final: GO
}

func ExampleCallID() {
	whoami := tool.MustFunc("whoami", "Echo the call ID", func(ctx context.Context, _ struct{}) (string, error) {
		return "answering " + tool.CallID(ctx), nil
	})
	r := tool.Invoke(context.Background(), whoami, model.ToolCall{ID: "call_9", Name: "whoami"})
	fmt.Println(r.Text())
	// Output: answering call_9
}

func ExampleRunState() {
	type session struct{ User string }
	greet := tool.MustFunc("greet", "Greet the user", func(ctx context.Context, _ struct{}) (string, error) {
		s, ok := tool.RunState[session](ctx)
		if !ok {
			return "hello, stranger", nil
		}
		return "hello, " + s.User, nil
	})
	ctx := tool.WithRunState(context.Background(), session{User: "Ada"})
	fmt.Println(tool.Invoke(ctx, greet, model.ToolCall{ID: "1", Name: "greet"}).Text())
	// Output: hello, Ada
}

func ExampleResolve() {
	search := tool.MustFunc("search", "Search", func(context.Context, struct{}) (string, error) { return "found", nil })
	deleteRepo := tool.MustFunc("delete_repo", "Delete a repository", func(context.Context, struct{}) (string, error) { return "deleted", nil })
	github := tool.WithPrefix(tool.NewStatic("github", search, deleteRepo), "gh_")
	docs := tool.NewStatic("docs", tool.MustFunc("search", "Search docs", func(context.Context, struct{}) (string, error) { return "docs", nil }))

	list, err := tool.Resolve(context.Background(), []tool.Toolset{github, docs},
		tool.VisibleIf(tool.DenyNames("gh_delete_repo")))
	if err != nil {
		panic(err)
	}
	fmt.Println(list.Names())

	t, _ := list.Lookup("gh_search")
	fmt.Println(tool.Invoke(context.Background(), t, model.ToolCall{ID: "1", Name: "gh_search"}).Text())
	fmt.Println(list.Unknown("gh_serch").Text())
	// Output:
	// [gh_search search]
	// found
	// unknown tool "gh_serch". Did you mean "gh_search"? Available tools: gh_search, search.
}

func ExampleAuthorize() {
	drop := tool.MustFunc("drop_table", "Drop a table", func(context.Context, struct {
		Table string `json:"table"`
	}) (string, error) {
		return "dropped", nil
	}, tool.WithMetadata(tool.Metadata{Destructive: true}))

	policy := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		if req.Metadata.Destructive {
			return tool.Ask("drop a table?"), nil
		}
		return tool.Allow(), nil
	})
	call := model.ToolCall{ID: "1", Name: "drop_table", Arguments: json.RawMessage(`{"table":"users"}`)}
	if r, ok := tool.Authorize(context.Background(), drop, call, policy); !ok {
		fmt.Println(r.Status, r.ErrorCode)
		fmt.Println(string(r.Content[0].JSON))
	}
	// Output:
	// denied approval_required
	// {"error":"approval_required","tool":"drop_table","reason":"drop a table?","arguments":{"table":"users"},"message":"The call was not run: it needs approval first."}
}

func ExampleNewSetModelResponse() {
	type answer struct {
		Title string   `json:"title"`
		Tags  []string `json:"tags"`
	}
	respond, err := tool.NewSetModelResponse[answer]()
	if err != nil {
		panic(err)
	}
	fmt.Println(respond.Instruction())
	r := tool.Invoke(context.Background(), respond, model.ToolCall{
		ID: "1", Name: tool.SetModelResponseName, Arguments: json.RawMessage(`{"title":"Release notes","tags":["go"]}`),
	})
	fmt.Println(r.Terminate, string(r.Content[0].JSON))
	// Output:
	// When you have the final answer, call the tool "set_model_response" with the answer as its arguments, following its schema exactly. Do not give the final answer as plain text.
	// true {"tags":["go"],"title":"Release notes"}
}

func ExampleNewRetrieval() {
	docs := tool.RetrieverFunc(func(_ context.Context, query string, limit int) ([]tool.Document, error) {
		return []tool.Document{{ID: "faq-1", Content: "Refunds take 5 days.", Score: 0.92}}, nil
	})
	kb, err := tool.NewRetrieval("search_faq", "Search the FAQ", docs)
	if err != nil {
		panic(err)
	}
	r := tool.Invoke(context.Background(), kb, model.ToolCall{ID: "1", Name: "search_faq", Arguments: json.RawMessage(`{"query":"refund"}`)})
	fmt.Println(r.Text())
	// Output: [{"id":"faq-1","content":"Refunds take 5 days.","score":0.92}]
}

func ExamplePending() {
	var pending tool.Pending
	report := tool.MustFunc("report", "Build a report", func(ctx context.Context, _ struct{}) (tool.Result, error) {
		return tool.PendingResult("report started"), nil
	}, tool.WithLongRunning())

	r := tool.Invoke(context.Background(), report, model.ToolCall{ID: "job_1", Name: "report"}, tool.WithPending(&pending))
	fmt.Println(r.Status, r.Text())

	// Later, when the work is done:
	_ = pending.Complete("job_1", tool.Text("report ready"))
	for _, c := range pending.Completed() {
		fmt.Println(c.Call.ID, c.Result.Status, c.Result.Text())
	}
	// Output:
	// pending report started
	// job_1 success report ready
}

func ExampleCollectInstructions() {
	a := tool.MustFunc("calendar", "Calendar", func(context.Context, struct{}) (string, error) { return "", nil },
		tool.WithInstruction("Dates are in the user's time zone."))
	b := tool.MustFunc("clock", "Clock", func(context.Context, struct{}) (string, error) { return "", nil })
	respond, _ := tool.NewSetModelResponseSchema(json.RawMessage(`{"type":"string"}`), tool.WithResponseInstruction("Finish with set_model_response."))
	fmt.Println(tool.CollectInstructions([]tool.Tool{a, b, respond}))
	// Output:
	// Dates are in the user's time zone.
	//
	// Finish with set_model_response.
}

// One set of tools serves runs that may see different tools: the run's
// context carries its own filters.
func ExampleResolveWith() {
	set := tool.NewStatic("app",
		tool.MustFunc("forecast", "Weather forecast", forecast),
		tool.MustFunc("purge_cache", "Purges the cache", func(context.Context, struct{}) (string, error) { return "purged", nil }))
	guest := tool.ResolveWith(context.Background(), tool.VisibleIf(tool.DenyNames("purge_cache")))
	for _, ctx := range []context.Context{context.Background(), guest} {
		l, err := tool.Resolve(ctx, []tool.Toolset{set})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(l.Names())
	}
	// Output:
	// [forecast purge_cache]
	// [forecast]
}

// A mutable toolset changes while agents use it: every later run sees its
// current members.
func ExampleNewMutable() {
	live, err := tool.NewMutable("user", tool.NewStatic("weather", tool.MustFunc("forecast", "Weather forecast", forecast)))
	if err != nil {
		fmt.Println(err)
		return
	}
	show := func() {
		l, _ := tool.Resolve(context.Background(), []tool.Toolset{live})
		fmt.Println(l.Names())
	}
	show()
	_ = live.Add(tool.NewStatic("files", tool.MustFunc("read_file", "Reads a file", func(context.Context, struct{}) (string, error) { return "", nil })))
	show()
	for _, gone := range live.Remove("weather") {
		_ = gone.Close()
	}
	show()
	// Output:
	// [forecast]
	// [forecast read_file]
	// [read_file]
}

// Tools search the run's memory, which the application gives the run.
func ExampleSearchMemory() {
	memory := tool.RetrieverFunc(func(_ context.Context, query string, limit int) ([]tool.Document, error) {
		return []tool.Document{{Content: "Ada prefers window seats."}}, nil
	})
	ctx := tool.WithMemory(context.Background(), memory)
	docs, err := tool.SearchMemory(ctx, "seat preference", 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(docs[0].Content)
	_, err = tool.SearchMemory(context.Background(), "seat preference", 3)
	fmt.Println(err)
	// Output:
	// Ada prefers window seats.
	// tool: the run has no memory store
}

func ExampleTitleOf() {
	search := tool.MustFunc("search_docs", "Searches the documentation.",
		func(context.Context, struct{}) (string, error) { return "", nil },
		tool.WithTitle("Search the docs"))
	// A renamed tool keeps its title; the model sees only the name and the
	// description.
	renamed := tool.Rename(search, "docs_search")
	fmt.Println(tool.Name(renamed), "-", tool.TitleOf(renamed))
	// Output: docs_search - Search the docs
}

// A permission rule judges the arguments the tool runs with: Prepare
// gives them, repaired, coerced toward the schema and validated.
func ExampleInvoker_Prepare() {
	weather := tool.MustFunc("forecast", "Weather forecast for a city", forecast)
	iv := tool.NewInvoker(tool.WithJSONRepair(true))
	call := model.ToolCall{ID: "c1", Name: "forecast", Arguments: json.RawMessage(`{"city": "Oslo", "days": "3",}`)}
	prepared, _, ok := iv.Prepare(weather, call)
	fmt.Println(ok, string(prepared.Arguments))
	_, res, ok := iv.Prepare(weather, model.ToolCall{ID: "c2", Name: "forecast", Arguments: json.RawMessage(`{"days": 30}`)})
	fmt.Println(ok, res.ErrorCode)
	// Output:
	// true {"city":"Oslo","days":3}
	// false invalid_arguments
}

// A policy given to Invoke judges the arguments the tool runs with: here
// the repaired ones, so the trailing comma does not hide the command.
func ExampleWithPolicy() {
	type shellArgs struct {
		Command string `json:"command"`
	}
	shell := tool.MustFunc("shell", "Runs a command.", func(_ context.Context, in shellArgs) (string, error) {
		return "ran " + in.Command, nil
	})
	noRM := tool.PolicyFunc(func(_ context.Context, req tool.PermissionRequest) (tool.Decision, error) {
		var in shellArgs
		_ = json.Unmarshal(req.Call.Arguments, &in)
		if strings.HasPrefix(in.Command, "rm ") {
			return tool.Deny("rm is not allowed"), nil
		}
		return tool.Allow(), nil
	})
	for _, args := range []string{`{"command": "ls",}`, `{"command": "rm -rf /tmp/x",}`} {
		call := model.ToolCall{ID: "1", Name: "shell", Arguments: json.RawMessage(args)}
		r := tool.Invoke(context.Background(), shell, call, tool.WithJSONRepair(true), tool.WithPolicy(noRM))
		fmt.Println(strings.TrimSpace(fmt.Sprint(r.Status, " ", r.ErrorCode)))
	}
	// Output:
	// success
	// denied permission_denied
}
