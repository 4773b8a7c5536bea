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
	"github.com/trellis-go/trellis/tool/websearch"
)

const braveKey = "BSA-test-key-123"

func newBrave(t *testing.T, opts ...websearch.BackendOption) *websearch.Brave {
	t.Helper()
	b, err := websearch.NewBrave(opts...)
	require.NoError(t, err)
	return b
}

func TestBraveSpeaksTheAPI(t *testing.T) {
	s := newService(t, http.StatusOK, fixture(t, "brave.json"))
	b := newBrave(t, websearch.WithBaseURL(s.URL), websearch.WithAPIKey(braveKey))
	st := newTool(t, b, websearch.WithMaxResults(5), websearch.WithLanguage("EN"), websearch.WithRegion("gb"), websearch.WithSafeSearch(websearch.SafeSearchStrict))

	r := call(t, context.Background(), st, `{"query":"go generics","page":2,"time_range":"week"}`)
	require.False(t, r.IsError, r.Text())

	reqs := s.requests()
	require.Len(t, reqs, 1)
	req := reqs[0]
	assert.Equal(t, "/res/v1/web/search", req.URL.Path)
	assert.Equal(t, braveKey, req.Header.Get("X-Subscription-Token"))
	assert.Equal(t, "application/json", req.Header.Get("Accept"))
	q := req.URL.Query()
	assert.Equal(t, "go generics", q.Get("q"))
	assert.Equal(t, "5", q.Get("count"), "the tool's page size")
	assert.Equal(t, "1", q.Get("offset"), "the offset counts pages from 0")
	assert.Equal(t, "en", q.Get("search_lang"))
	assert.Equal(t, "GB", q.Get("country"))
	assert.Equal(t, "strict", q.Get("safesearch"))
	assert.Equal(t, "pw", q.Get("freshness"))

	assert.Equal(t, strings.Join([]string{
		`Results for "go generics", page 2:`,
		``,
		`1. Tutorial: Getting started with generics - The Go Programming Language`,
		`   https://go.dev/doc/tutorial/generics`,
		`   This tutorial introduces the basics of generics in Go. With generics, you can declare and use functions or types that are written to work with any of a set of types provided by calling code.`,
		``,
		`2. An Introduction To Generics - The Go Programming Language`,
		`   https://go.dev/blog/intro-generics`,
		`   This blog post is based on our talk at GopherCon 2021: Generics!`,
		`   Published: 2022-03-22`,
		``,
		`3. Go 1.18 generics & type parameters`,
		`   https://example.org/go118`,
		`   A walk through type parameters.`,
		`   Published: 2 days ago`,
		``,
		`More results may be on page 3: call web_search with the same query and "page": 3.`,
	}, "\n"), r.Text(), "the marks of matches are gone; page_age is read as a date, age as it is")
	assert.NotContains(t, r.Text(), braveKey)
}

func TestBravePages(t *testing.T) {
	s := newService(t, http.StatusOK, fixture(t, "brave.json"))
	b := newBrave(t, websearch.WithBaseURL(s.URL+"/"), websearch.WithAPIKey(braveKey))

	p, err := b.Search(context.Background(), websearch.Query{Text: "go", Page: 1, Count: 50})
	require.NoError(t, err)
	assert.True(t, p.HasMore)
	q := s.requests()[0].URL.Query()
	assert.Equal(t, "20", q.Get("count"), "the API gives 20 results a page at most")
	for _, k := range []string{"offset", "search_lang", "country", "safesearch", "freshness"} {
		assert.False(t, q.Has(k), "%s is left to the API on a first page with nothing set", k)
	}

	p, err = b.Search(context.Background(), websearch.Query{Text: "go", Page: 10, SafeSearch: websearch.SafeSearchOff, TimeRange: websearch.PastYear})
	require.NoError(t, err)
	assert.NotEmpty(t, p.Results)
	assert.False(t, p.HasMore, "page 10 is the API's last, whatever it says")
	q = s.requests()[1].URL.Query()
	assert.Equal(t, "9", q.Get("offset"))
	assert.Equal(t, "off", q.Get("safesearch"))
	assert.Equal(t, "py", q.Get("freshness"))

	p, err = b.Search(context.Background(), websearch.Query{Text: "go", Page: 11})
	require.NoError(t, err)
	assert.Empty(t, p.Results)
	assert.Equal(t, []string{"Brave Search gives 10 pages of results at most."}, p.Notes)
	assert.Len(t, s.requests(), 2, "a page past the last is asked for nothing")

	for tr, want := range map[websearch.TimeRange]string{websearch.PastDay: "pd", websearch.PastMonth: "pm"} {
		_, err = b.Search(context.Background(), websearch.Query{Text: "go", Page: 1, TimeRange: tr, SafeSearch: websearch.SafeSearchModerate})
		require.NoError(t, err)
		reqs := s.requests()
		q = reqs[len(reqs)-1].URL.Query()
		assert.Equal(t, want, q.Get("freshness"))
		assert.Equal(t, "moderate", q.Get("safesearch"))
	}

	s.answer(http.StatusOK, []byte(`{"type":"search","query":{"original":"qwzx","more_results_available":false}}`))
	st := newTool(t, b)
	r := call(t, context.Background(), st, `{"query":"qwzx"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, `No results for "qwzx". Try other or fewer words.`, r.Text(), "an answer without web results finds nothing")
}

func TestBraveKey(t *testing.T) {
	s := newService(t, http.StatusOK, fixture(t, "brave.json"))

	t.Setenv(websearch.BraveAPIKeyEnv, " env-key ")
	_, err := newBrave(t, websearch.WithBaseURL(s.URL)).Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.NoError(t, err)
	assert.Equal(t, "env-key", s.requests()[0].Header.Get("X-Subscription-Token"), "the key comes from the environment")

	_, err = newBrave(t, websearch.WithBaseURL(s.URL), websearch.WithAPIKey(braveKey)).Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.NoError(t, err)
	assert.Equal(t, braveKey, s.requests()[1].Header.Get("X-Subscription-Token"), "WithAPIKey wins over the environment")

	t.Setenv(websearch.BraveAPIKeyEnv, "")
	b, err := websearch.NewBrave()
	require.ErrorIs(t, err, websearch.ErrInvalidBackend)
	assert.Nil(t, b)
	assert.Contains(t, err.Error(), "Brave Search: no API key: give WithAPIKey or set BRAVE_SEARCH_API_KEY")

	t.Setenv(websearch.BraveAPIKeyEnv, "a\nb")
	_, err = websearch.NewBrave()
	assert.ErrorContains(t, err, "BRAVE_SEARCH_API_KEY holds a line break")

	for name, opts := range map[string][]websearch.BackendOption{
		"empty key":      {websearch.WithAPIKey(" ")},
		"bad address":    {websearch.WithAPIKey(braveKey), websearch.WithBaseURL("api.search.brave.com")},
		"proxy + client": {websearch.WithAPIKey(braveKey), websearch.WithHTTPClient(http.DefaultClient), websearch.WithProxy(http.ProxyFromEnvironment)},
		"nil proxy":      {websearch.WithAPIKey(braveKey), websearch.WithProxy(nil)},
	} {
		_, err := websearch.NewBrave(opts...)
		assert.ErrorIs(t, err, websearch.ErrInvalidBackend, name)
	}
}

func TestBraveFailures(t *testing.T) {
	const invalidToken = `{"type":"ErrorResponse","error":{"id":"c2a5e6b1","status":401,"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"The provided subscription token is invalid.","meta":{"component":"authentication"}},"time":1700000000}`
	const rateLimited = `{"type":"ErrorResponse","error":{"id":"7f1d","status":429,"code":"RATE_LIMITED","detail":"Request rate limit exceeded for plan.","meta":{"plan":"Free","rate_limit":1,"rate_current":2}},"time":1700000000}`
	tests := []struct {
		name      string
		status    int
		body      string
		header    []string
		want      string
		transient bool
	}{
		{"key refused", http.StatusUnauthorized, invalidToken, nil,
			"Brave Search answered 401 Unauthorized: SUBSCRIPTION_TOKEN_INVALID: The provided subscription token is invalid. (check the subscription key given by WithAPIKey or BRAVE_SEARCH_API_KEY)", false},
		{"rate limited", http.StatusTooManyRequests, rateLimited, []string{"Retry-After", "2"},
			"Brave Search answered 429 Too Many Requests (retry after 2s): RATE_LIMITED: Request rate limit exceeded for plan. (the subscription's rate limit or monthly quota is reached)", true},
		{"rate limited until a date", http.StatusTooManyRequests, "slow down", []string{"Retry-After", time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)},
			"Brave Search answered 429 Too Many Requests (retry after 1m", true},
		{"bad parameter", http.StatusUnprocessableEntity, `{"error":{"code":"VALIDATION","detail":"Unable to validate request parameter(s)."}}`, nil,
			"Brave Search answered 422 Unprocessable Entity: VALIDATION: Unable to validate request parameter(s). (the API refused a parameter", false},
		{"server error", http.StatusInternalServerError, "<html><body>upstream failed</body></html>", nil,
			"Brave Search answered 500 Internal Server Error: upstream failed", true},
		{"bad gateway", http.StatusBadGateway, strings.Repeat("x", 500), nil,
			"Brave Search answered 502 Bad Gateway: " + strings.Repeat("x", 200) + "...", true},
		{"malformed JSON", http.StatusOK, `{"web":{"results":[`, nil, `Brave Search: the response is not a web search JSON object ("{\"web\":{\"results\":[")`, false},
		{"null", http.StatusOK, `null`, nil, `Brave Search: the response is not a web search JSON object ("null"): not an object`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t, tt.status, nil)
			s.answer(tt.status, []byte(tt.body), tt.header...)
			st := newTool(t, newBrave(t, websearch.WithBaseURL(s.URL), websearch.WithAPIKey(braveKey)))
			r := call(t, context.Background(), st, `{"query":"go"}`)
			require.True(t, r.IsError)
			assert.Contains(t, r.Text(), `tool "web_search" failed: websearch: `+tt.want)
			assert.NotContains(t, r.Text(), braveKey)
			assert.Equal(t, tt.transient, middleware.IsTransient(r.Err), "middleware.Retry retries what is transient")
			var se *websearch.StatusError
			if assert.Equal(t, tt.status != http.StatusOK, errors.As(r.Err, &se)) && se != nil {
				assert.Equal(t, "Brave Search", se.Backend)
				assert.Equal(t, tt.status, se.Status)
				assert.Equal(t, tt.header != nil, se.RetryAfter > 0)
			}
		})
	}

	// A query longer than the API takes fails before any request.
	s := newService(t, http.StatusOK, fixture(t, "brave.json"))
	st := newTool(t, newBrave(t, websearch.WithBaseURL(s.URL), websearch.WithAPIKey(braveKey)))
	r := call(t, context.Background(), st, `{"query":"`+strings.Repeat("é", 401)+`"}`)
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "websearch: Brave Search: the query is 401 characters long, and the API takes 400 at most: shorten it")
	assert.False(t, middleware.IsTransient(r.Err))
	assert.Empty(t, s.requests())
}

func TestBraveKeyStaysWithTheAPI(t *testing.T) {
	elsewhere := newService(t, http.StatusOK, fixture(t, "brave.json"))
	elsewhereURL := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhereURL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer api.Close()
	_, err := newBrave(t, websearch.WithBaseURL(api.URL), websearch.WithAPIKey(braveKey)).Search(context.Background(), websearch.Query{Text: "go", Page: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Brave Search: ")
	assert.Contains(t, err.Error(), "not following a redirect to another host")
	assert.Empty(t, elsewhere.requests(), "the key was not sent to another host")
}
