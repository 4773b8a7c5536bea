package webfetch_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/webfetch"
)

func ExampleNewTool() {
	// A stand-in for a web site, so that the example runs offline. It
	// listens on 127.0.0.1, which the tool refuses unless it is built
	// WithAllowPrivateAddresses; leave that option out to read the web.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html>
<html><head><title>Gophers</title><style>h1 { color: teal; }</style></head>
<body>
  <nav><a href="https://go.dev/">Go</a></nav>
  <h1>The Go gopher</h1>
  <p>Drawn by <a href="https://reneefrench.blogspot.com/">Renée French</a>.</p>
  <ul><li>Friendly</li><li>Fast</li></ul>
  <script>analytics();</script>
</body></html>`)
	}))
	defer site.Close()

	fetch, err := webfetch.NewTool(webfetch.WithAllowPrivateAddresses(), webfetch.WithMaxLength(5000))
	if err != nil {
		panic(err)
	}
	args := fmt.Sprintf(`{"url": %q}`, site.URL+"/gopher")
	r := tool.Invoke(context.Background(), fetch, model.ToolCall{ID: "call-1", Name: webfetch.DefaultName, Arguments: []byte(args)})
	if r.IsError {
		panic(r.Text())
	}
	// The model reads r.Text(): "URL: ...", "Title: Gophers", then the
	// text below. Details hold the same page, parsed.
	page := r.Details.(webfetch.Page)
	fmt.Println(page.Status, page.ContentType, page.Title)
	fmt.Println("--")
	fmt.Println(page.Text)
	// Output:
	// 200 text/html Gophers
	// --
	// Go (https://go.dev/)
	//
	// # The Go gopher
	//
	// Drawn by Renée French (https://reneefrench.blogspot.com/).
	//
	// - Friendly
	// - Fast
}

func ExampleWithProxy() {
	// A stand-in for a company's forward proxy, so that the example runs
	// offline: it answers every request itself. In a program, pass
	// http.ProxyFromEnvironment to use HTTPS_PROXY, HTTP_PROXY and
	// NO_PROXY.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "The proxy fetched %s for you.", r.URL)
	}))
	defer proxy.Close()
	proxyURL, err := url.Parse(proxy.URL)
	if err != nil {
		panic(err)
	}

	// The proxy listens on 127.0.0.1, which the tool connects to because
	// the application chose it; the pages' hosts are still checked.
	fetch, err := webfetch.NewTool(webfetch.WithProxy(http.ProxyURL(proxyURL)))
	if err != nil {
		panic(err)
	}
	// The first page is on a public address (an address rather than a
	// name, so that the example looks nothing up); the second is a cloud
	// metadata service's, which the tool does not ask the proxy for.
	for _, page := range []string{"http://93.184.215.14/tea", "http://169.254.169.254/latest/meta-data/"} {
		args := fmt.Sprintf(`{"url": %q}`, page)
		r := tool.Invoke(context.Background(), fetch, model.ToolCall{ID: "call-1", Name: webfetch.DefaultName, Arguments: []byte(args)})
		fmt.Println(r.Text())
		fmt.Println("--")
	}
	// Output:
	// URL: http://93.184.215.14/tea
	//
	// The proxy fetched http://93.184.215.14/tea for you.
	// --
	// tool "web_fetch" failed: webfetch: refusing to fetch http://169.254.169.254/latest/meta-data/: its address 169.254.169.254 is a link-local address (such as a cloud metadata service's), and the tool does not fetch from private or local networks, through a proxy or not
	// --
}
