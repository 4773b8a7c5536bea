package duckduckgo_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/trellis-go/trellis/agent"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/duckduckgo"
)

func ExampleNewTool() {
	// A stand-in for the API, so that the example runs offline; leave
	// WithBaseURL out to ask DuckDuckGo itself.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"Heading":"Gopher","AbstractText":"The Go mascot, drawn by Renee French.","AbstractSource":"Wikipedia","AbstractURL":"https://en.wikipedia.org/wiki/Go_(programming_language)","RelatedTopics":[]}`)
	}))
	defer api.Close()

	search, err := duckduckgo.NewTool(duckduckgo.WithBaseURL(api.URL), duckduckgo.WithUserAgent("example/1.0"))
	if err != nil {
		panic(err)
	}
	researcher, err := agent.NewReAct(scripted.New(
		scripted.CallTools(scripted.Call(duckduckgo.DefaultName, `{"query":"Go gopher"}`)),
		scripted.Reply("The gopher is Go's mascot."),
	), agent.WithTools(search))
	if err != nil {
		panic(err)
	}
	out, err := researcher.Invoke(context.Background(), agent.Ask("What is the gopher?"))
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Messages[2].Text())
	fmt.Println("--")
	fmt.Println(agent.FinalText(out.Messages))
	// Output:
	// # Gopher
	// The Go mascot, drawn by Renee French.
	// Source: Wikipedia (https://en.wikipedia.org/wiki/Go_(programming_language))
	// --
	// The gopher is Go's mascot.
}

func ExampleWithProxy() {
	// A stand-in for a forward proxy, so that the example runs offline: it
	// answers every request itself, as the API would. The base URL is
	// plain http so that the stand-in reads the request; by https, the
	// proxy opens a tunnel to the API instead.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"Heading":"Proxy","AbstractText":"Asked for %s through the proxy."}`, r.URL.Host)
	}))
	defer proxy.Close()
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		panic(err)
	}

	search, err := duckduckgo.NewTool(
		duckduckgo.WithBaseURL("http://api.duckduckgo.com"),
		duckduckgo.WithProxy(http.ProxyURL(proxyURL)), // or http.ProxyFromEnvironment
	)
	if err != nil {
		panic(err)
	}
	r := tool.Invoke(context.Background(), search, model.ToolCall{ID: "call-1", Name: duckduckgo.DefaultName, Arguments: []byte(`{"query":"proxy"}`)})
	fmt.Println(r.Text())
	// Output:
	// # Proxy
	// Asked for api.duckduckgo.com through the proxy.
}
