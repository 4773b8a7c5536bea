package websearch_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/websearch"
)

func newSearXNG(t *testing.T, opts ...websearch.BackendOption) *websearch.SearXNG {
	t.Helper()
	b, err := websearch.NewSearXNG(opts...)
	require.NoError(t, err)
	return b
}

func TestSearXNGSpeaksTheJSONAPI(t *testing.T) {
	s := newService(t, http.StatusOK, fixture(t, "searxng.json"))
	b := newSearXNG(t, websearch.WithBaseURL(s.URL+"/searxng/?token=abc"), websearch.WithHeader("Authorization", "Basic dXNlcjpwdw=="))
	st := newTool(t, b, websearch.WithLanguage("en"), websearch.WithRegion("US"), websearch.WithSafeSearch(websearch.SafeSearchOff))

	r := call(t, context.Background(), st, `{"query":"go generics & more","page":2,"time_range":"week"}`)
	require.False(t, r.IsError, r.Text())

	reqs := s.requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	assert.Equal(t, http.MethodGet, req.Method)
	assert.Equal(t, "/searxng/search", req.URL.Path, "the search path is added to the base URL's")
	q := req.URL.Query()
	assert.Equal(t, "go generics & more", q.Get("q"), "the query is escaped, not cut at &")
	assert.Equal(t, "json", q.Get("format"))
	assert.Equal(t, "2", q.Get("pageno"))
	assert.Equal(t, "en-US", q.Get("language"))
	assert.Equal(t, "0", q.Get("safesearch"))
	assert.Equal(t, "week", q.Get("time_range"))
	assert.Equal(t, "abc", q.Get("token"), "the base URL's parameters are kept")
	assert.Equal(t, "Basic dXNlcjpwdw==", req.Header.Get("Authorization"))
	assert.Equal(t, websearch.DefaultUserAgent, req.Header.Get("User-Agent"))
	assert.Equal(t, "application/json", req.Header.Get("Accept"))

	assert.Equal(t, strings.Join([]string{
		`Results for "go generics & more", page 2:`,
		``,
		`1. Tutorial: Getting started with generics`,
		`   https://go.dev/doc/tutorial/generics`,
		`   This tutorial introduces the basics of generics in Go. With generics, you can declare and use functions or types that are written to work with any of a set of types.`,
		``,
		`2. An Introduction To Generics - The Go Programming Language`,
		`   https://go.dev/blog/intro-generics`,
		`   Robert Griesemer and Ian Lance Taylor 22 March 2022. Introduction. This blog post is based on our talk at GopherCon 2021: Generics!`,
		`   Published: 2022-03-22`,
		``,
		`3. Generics in Go & you`,
		`   https://www.reddit.com/r/golang/comments/generics`,
		`   Discussion "thread"`,
		`   Published: 2023-11-02`,
		``,
		`Note: these search engines did not answer the instance, so results may be missing: google (timeout), bing (CAPTCHA).`,
		`More results may be on page 3: call web_search with the same query and "page": 3.`,
	}, "\n"), r.Text(), "the http copy of the first result is a duplicate; the javascript: one is no web page")
}

func TestSearXNGDefaultsAndPaging(t *testing.T) {
	s := newService(t, http.StatusOK, []byte(`{"number_of_results":3,"results":[{"url":"https://a.example/","title":"A"},{"url":"https://b.example/","title":"B"},{"url":"https://c.example/","title":"C"}]}`))
	b := newSearXNG(t, websearch.WithBaseURL(s.URL), websearch.WithUserAgent("my-agent/2.0"))

	p, err := b.Search(context.Background(), websearch.Query{Text: "letters", Page: 1, Language: "de"})
	require.NoError(t, err)
	assert.Len(t, p.Results, 3)
	assert.False(t, p.HasMore, "the instance counts 3 results, and this page shows them all")
	req := s.requests()[0]
	assert.Equal(t, "/search", req.URL.Path)
	q := req.URL.Query()
	assert.Equal(t, "1", q.Get("pageno"))
	assert.Equal(t, "de", q.Get("language"), "a language without a region")
	for _, k := range []string{"safesearch", "time_range"} {
		assert.False(t, q.Has(k), "%s is left to the instance unless set", k)
	}
	assert.Equal(t, "my-agent/2.0", req.Header.Get("User-Agent"))

	s.answer(http.StatusOK, []byte(`{"number_of_results":120,"results":[{"url":"https://a.example/","title":"A"}]}`))
	p, err = b.Search(context.Background(), websearch.Query{Text: "letters", Page: 2, SafeSearch: websearch.SafeSearchStrict})
	require.NoError(t, err)
	assert.True(t, p.HasMore)
	assert.Equal(t, "2", s.requests()[1].URL.Query().Get("safesearch"))

	s.answer(http.StatusOK, []byte(`{"number_of_results":0,"results":[]}`))
	p, err = b.Search(context.Background(), websearch.Query{Text: "letters", Page: 9, SafeSearch: websearch.SafeSearchModerate, Language: "pt-br", Region: "BR"})
	require.NoError(t, err)
	assert.False(t, p.HasMore, "an empty page is the last")
	assert.Empty(t, p.Notes)
	q = s.requests()[2].URL.Query()
	assert.Equal(t, "1", q.Get("safesearch"))
	assert.Equal(t, "pt-br", q.Get("language"), "a language with its own region is kept as it is")
}

func TestSearXNGFailures(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		header    []string
		want      string
		transient bool
	}{
		{"json not enabled", http.StatusForbidden, "<html><body><h1>Forbidden</h1></body></html>", nil,
			"SearXNG answered 403 Forbidden: Forbidden (an instance refuses format=json unless its settings.yml lists json under search.formats)", false},
		{"rate limited", http.StatusTooManyRequests, "Too Many Requests", []string{"Retry-After", "30"},
			"SearXNG answered 429 Too Many Requests (retry after 30s): Too Many Requests (the instance's limiter may refuse API clients", true},
		{"server error", http.StatusInternalServerError, "", nil, "SearXNG answered 500 Internal Server Error", true},
		{"malformed JSON", http.StatusOK, `{"results":[{"url":`, nil, `SearXNG: the response is not a SearXNG JSON object ("{\"results\":[{\"url\":")`, false},
		{"HTML", http.StatusOK, `<!DOCTYPE html><html>login</html>`, nil, "SearXNG: the response is not a SearXNG JSON object", false},
		{"not an object", http.StatusOK, `[]`, nil, "SearXNG: the response is not a SearXNG JSON object", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t, tt.status, []byte(tt.body))
			s.answer(tt.status, []byte(tt.body), tt.header...)
			st := newTool(t, newSearXNG(t, websearch.WithBaseURL(s.URL)))
			r := call(t, context.Background(), st, `{"query":"go"}`)
			require.True(t, r.IsError)
			assert.Contains(t, r.Text(), `tool "web_search" failed: websearch: `+tt.want)
			assert.Equal(t, tt.transient, middleware.IsTransient(r.Err), "middleware.Retry retries what is transient")
			var se *websearch.StatusError
			if assert.Equal(t, tt.status != http.StatusOK, errors.As(r.Err, &se)) && se != nil {
				assert.Equal(t, "SearXNG", se.Backend)
				assert.Equal(t, tt.status, se.Status)
			}
		})
	}

	// A Retry-After on a status that is not retried says nothing.
	s := newService(t, http.StatusBadRequest, nil)
	s.answer(http.StatusBadRequest, nil, "Retry-After", "30")
	_, err := newSearXNG(t, websearch.WithBaseURL(s.URL)).Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	var se *websearch.StatusError
	require.ErrorAs(t, err, &se)
	assert.Zero(t, se.RetryAfter)
	assert.Equal(t, "SearXNG answered 400 Bad Request", err.Error())

	// An instance that is not there: the transport's error, which names the
	// backend and the address and is transient (the connection was
	// refused).
	gone := httptest.NewServer(http.NotFoundHandler())
	addr := gone.URL
	gone.Close()
	_, err = newSearXNG(t, websearch.WithBaseURL(addr+"/?token=secret")).Search(context.Background(), websearch.Query{Text: "private words", Page: 1})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "SearXNG: asking "+addr+"/search: "), err.Error())
	assert.NotContains(t, err.Error(), "secret", "the address is named without its query")
	assert.NotContains(t, err.Error(), "private")
	assert.True(t, middleware.IsTransient(err), "%v", err)
}

func TestSearXNGFollowsRedirectsOnlyWithinItsHost(t *testing.T) {
	elsewhere := newService(t, http.StatusOK, fixture(t, "searxng.json"))
	home := newService(t, http.StatusOK, fixture(t, "searxng.json"))
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/search":
			http.Redirect(w, r, "/moved/search?"+r.URL.RawQuery, http.StatusFound)
		case "/moved/search":
			http.Redirect(w, r, home.URL+"/search?"+r.URL.RawQuery, http.StatusFound) // same host, another port
		default:
			http.Redirect(w, r, elsewhere.URL+"/search", http.StatusFound)
		}
	}))
	defer redirect.Close()

	b := newSearXNG(t, websearch.WithBaseURL(redirect.URL), websearch.WithHeader("Authorization", "Bearer secret"))
	p, err := b.Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.NoError(t, err, "redirects within the host are followed")
	assert.NotEmpty(t, p.Results)
	require.Len(t, home.requests(), 1)

	// Another host: not followed, so the header goes nowhere else.
	elsewhereURL := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)
	away := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhereURL+"/search", http.StatusFound)
	}))
	defer away.Close()
	b = newSearXNG(t, websearch.WithBaseURL(away.URL), websearch.WithHeader("Authorization", "Bearer secret"))
	_, err = b.Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not following a redirect to another host, localhost:")
	assert.Empty(t, elsewhere.requests())
}

func TestNewSearXNGRejectsBadSettings(t *testing.T) {
	tests := []struct {
		name string
		opts []websearch.BackendOption
		want string
	}{
		{"no address", nil, "WithBaseURL: the service's address is required"},
		{"no scheme", []websearch.BackendOption{websearch.WithBaseURL("searx.example.org")}, `"searx.example.org" is not an http or https URL`},
		{"other scheme", []websearch.BackendOption{websearch.WithBaseURL("ftp://searx.example.org")}, "is not an http or https URL"},
		{"user information", []websearch.BackendOption{websearch.WithBaseURL("https://me:pw@searx.example.org")}, "without user information"},
		{"a key", []websearch.BackendOption{websearch.WithBaseURL("http://localhost:8888"), websearch.WithAPIKey("k")}, "WithAPIKey: SearXNG takes no key"},
		{"nil client", []websearch.BackendOption{websearch.WithBaseURL("http://localhost:8888"), websearch.WithHTTPClient(nil)}, "the client is nil"},
		{"bad header", []websearch.BackendOption{websearch.WithBaseURL("http://localhost:8888"), websearch.WithHeader("X Bad", "v")}, `WithHeader: "X Bad" is not a valid header name`},
		{"header value with a line break", []websearch.BackendOption{websearch.WithBaseURL("http://localhost:8888"), websearch.WithHeader("X-Ok", "a\r\nb")}, `WithHeader: "X-Ok"`},
		{"bad user agent", []websearch.BackendOption{websearch.WithBaseURL("http://localhost:8888"), websearch.WithUserAgent(" ")}, "WithUserAgent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := websearch.NewSearXNG(tt.opts...)
			require.ErrorIs(t, err, websearch.ErrInvalidBackend)
			assert.Nil(t, b)
			assert.Contains(t, err.Error(), "SearXNG: ")
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestSearXNGHonoursTheContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	st := newTool(t, newSearXNG(t, websearch.WithBaseURL(srv.URL)))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := call(t, ctx, st, `{"query":"go"}`)
	assert.Equal(t, tool.StatusTimeout, r.Status)
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
}
