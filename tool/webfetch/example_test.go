package webfetch_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

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
