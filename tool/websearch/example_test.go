package websearch_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/websearch"
)

func ExampleNew() {
	// A stand-in for a SearXNG instance, so that the example runs offline;
	// point WithBaseURL at your own instance instead.
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"query":"go iterators","number_of_results":0,"results":[
			{"url":"https://go.dev/blog/range-functions","title":"Range Over Function Types","content":"Range over function types is a new language feature in Go 1.23.","publishedDate":"2024-08-20T00:00:00"},
			{"url":"https://pkg.go.dev/iter","title":"iter package","content":"Package iter provides basic definitions and operations related to iterators over sequences."}]}`)
	}))
	defer searx.Close()

	backend, err := websearch.NewSearXNG(websearch.WithBaseURL(searx.URL))
	if err != nil {
		panic(err)
	}
	search, err := websearch.New(backend, websearch.WithMaxResults(5))
	if err != nil {
		panic(err)
	}
	researcher, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call(websearch.DefaultName, `{"query":"go iterators"}`)),
		scripted.Reply("Go 1.23 added range over functions; package iter defines the iterators."),
	), agent.WithTools(search))
	if err != nil {
		panic(err)
	}
	out, err := researcher.Invoke(context.Background(), agent.Ask("How do iterators work in Go?"))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Messages[2].Text())
	fmt.Println("--")
	fmt.Println(agent.FinalText(out.Messages))
	// Output:
	// Results for "go iterators", page 1:
	//
	// 1. Range Over Function Types
	//    https://go.dev/blog/range-functions
	//    Range over function types is a new language feature in Go 1.23.
	//    Published: 2024-08-20
	//
	// 2. iter package
	//    https://pkg.go.dev/iter
	//    Package iter provides basic definitions and operations related to iterators over sequences.
	//
	// More results may be on page 2: call web_search with the same query and "page": 2.
	// --
	// Go 1.23 added range over functions; package iter defines the iterators.
}

func ExampleNewBrave() {
	// A stand-in for Brave Search's API, so that the example runs offline;
	// leave WithBaseURL out to ask the API itself, and WithAPIKey out to
	// read the key from BRAVE_SEARCH_API_KEY.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Subscription-Token") != "my-key" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid."}}`)
			return
		}
		fmt.Fprintf(w, `{"query":{"more_results_available":false},"web":{"results":[
			{"title":"The <strong>Go</strong> Memory Model","url":"https://go.dev/ref/mem","description":"Page %s of the results.","page_age":"2022-06-06T00:00:00"}]}}`, r.URL.Query().Get("offset"))
	}))
	defer api.Close()

	for _, key := range []string{"my-key", "a-wrong-key"} {
		backend, err := websearch.NewBrave(websearch.WithBaseURL(api.URL), websearch.WithAPIKey(key))
		if err != nil {
			panic(err)
		}
		search, err := websearch.New(backend, websearch.WithAllowedDomains("go.dev"))
		if err != nil {
			panic(err)
		}
		r := tool.Invoke(context.Background(), search, model.ToolCall{ID: "call-1", Name: websearch.DefaultName, Arguments: []byte(`{"query":"go memory model","page":3}`)})
		fmt.Println(r.Text())
		fmt.Println("--")
	}
	// Output:
	// Results for "go memory model", page 3:
	//
	// 1. The Go Memory Model
	//    https://go.dev/ref/mem
	//    Page 2 of the results.
	//    Published: 2022-06-06
	// --
	// tool "web_search" failed: websearch: Brave Search answered 401 Unauthorized: SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid. (check the subscription key given by WithAPIKey or BRAVE_SEARCH_API_KEY)
	// --
}

func ExampleNewDuckDuckGo() {
	// A stand-in for DuckDuckGo's Instant Answer API, so that the example
	// runs offline; leave WithBaseURL out to ask the API itself (no key).
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"Heading":"Gopher","AbstractText":"The Go mascot, drawn by Renee French.","AbstractSource":"Wikipedia","AbstractURL":"https://en.wikipedia.org/wiki/Go_(programming_language)",
			"RelatedTopics":[{"Text":"Renee French - American illustrator.","FirstURL":"https://duckduckgo.com/Renee_French"}]}`)
	}))
	defer api.Close()

	backend, err := websearch.NewDuckDuckGo(websearch.WithBaseURL(api.URL), websearch.WithUserAgent("example/1.0"))
	if err != nil {
		panic(err)
	}
	search, err := websearch.New(backend)
	if err != nil {
		panic(err)
	}
	r := tool.Invoke(context.Background(), search, model.ToolCall{ID: "call-1", Name: websearch.DefaultName, Arguments: []byte(`{"query":"Go gopher"}`)})
	fmt.Println(r.Text())
	// Output:
	// Results for "Go gopher", page 1:
	//
	// 1. Gopher (Wikipedia)
	//    https://en.wikipedia.org/wiki/Go_(programming_language)
	//    The Go mascot, drawn by Renee French.
	//
	// 2. Renee French
	//    https://duckduckgo.com/Renee_French
	//    American illustrator.
}

func ExampleBackendFunc() {
	// Any search service can be a backend: here, a fixed index of a
	// project's documentation.
	docs := map[string]string{
		"https://docs.example.org/install": "Installing the tool",
		"https://docs.example.org/config":  "Configuration file reference",
	}
	backend := websearch.BackendFunc(func(ctx context.Context, q websearch.Query) (websearch.Page, error) {
		var p websearch.Page
		for _, u := range []string{"https://docs.example.org/config", "https://docs.example.org/install"} {
			if strings.Contains(strings.ToLower(docs[u]), strings.ToLower(q.Text)) {
				p.Results = append(p.Results, websearch.Result{Title: docs[u], URL: u})
			}
		}
		return p, nil
	})
	search, err := websearch.New(backend, websearch.WithName("docs_search"))
	if err != nil {
		panic(err)
	}
	r := tool.Invoke(context.Background(), search, model.ToolCall{ID: "call-1", Name: "docs_search", Arguments: []byte(`{"query":"config"}`)})
	fmt.Println(r.Text())
	// Output:
	// Results for "config", page 1:
	//
	// 1. Configuration file reference
	//    https://docs.example.org/config
}
