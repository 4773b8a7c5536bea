package websearch_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/websearch"
)

// fake is a backend that answers with page and records the queries.
type fake struct {
	mu      sync.Mutex
	queries []websearch.Query
	page    websearch.Page
	err     error
}

func (f *fake) Search(_ context.Context, q websearch.Query) (websearch.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	return f.page, f.err
}

func (f *fake) asked() []websearch.Query {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]websearch.Query(nil), f.queries...)
}

func newTool(t *testing.T, b websearch.Backend, opts ...websearch.Option) tool.Tool {
	t.Helper()
	st, err := websearch.New(b, opts...)
	require.NoError(t, err)
	return st
}

func call(t *testing.T, ctx context.Context, st tool.Tool, args string) tool.Result {
	t.Helper()
	return tool.Invoke(ctx, st, model.ToolCall{ID: "s1", Name: tool.Name(st), Arguments: json.RawMessage(args)})
}

func TestSearchListsResults(t *testing.T) {
	b := &fake{page: websearch.Page{
		Results: []websearch.Result{
			{Title: "Tutorial: Getting started with generics", URL: "https://go.dev/doc/tutorial/generics", Snippet: "This tutorial introduces\n the basics\tof generics.", Published: "2022-03-22"},
			{Title: "Same page again", URL: "http://www.go.dev/doc/tutorial/generics/#top"},
			{Title: "", URL: "https://pkg.go.dev/slices", Snippet: "Package slices."},
			{Title: "A script", URL: "javascript:alert(1)"},
			{Title: "No URL"},
			{Title: "Relative", URL: "/doc"},
		},
		HasMore: true,
		Notes:   []string{"some engines\ndid not answer."},
	}}
	st := newTool(t, b, websearch.WithLanguage("en"), websearch.WithRegion("us"), websearch.WithSafeSearch(websearch.SafeSearchStrict))
	assert.Equal(t, websearch.DefaultName, tool.Name(st))
	assert.Equal(t, "Web search", tool.TitleOf(st))
	meta := tool.MetadataOf(st)
	assert.True(t, meta.ReadOnly && meta.SearchOrRead && meta.OpenWorld && meta.ConcurrencySafe)

	r := call(t, context.Background(), st, `{"query":"  go generics ","page":2,"time_range":"month"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, strings.Join([]string{
		`Results for "go generics", page 2:`,
		``,
		`1. Tutorial: Getting started with generics`,
		`   https://go.dev/doc/tutorial/generics`,
		`   This tutorial introduces the basics of generics.`,
		`   Published: 2022-03-22`,
		``,
		`2. https://pkg.go.dev/slices`,
		`   https://pkg.go.dev/slices`,
		`   Package slices.`,
		``,
		`Note: some engines did not answer.`,
		`More results may be on page 3: call web_search with the same query and "page": 3.`,
	}, "\n"), r.Text(), "duplicates and results without a web URL are left out; a result without a title is named by its URL")

	asked := b.asked()
	require.Len(t, asked, 1)
	assert.Equal(t, websearch.Query{
		Text: "go generics", Page: 2, Count: websearch.DefaultMaxResults,
		Language: "en", Region: "US", SafeSearch: websearch.SafeSearchStrict, TimeRange: websearch.PastMonth,
	}, asked[0])

	resp, ok := r.Details.(websearch.Response)
	require.True(t, ok, "Details hold the response, got %T", r.Details)
	assert.Equal(t, "go generics", resp.Query)
	assert.Equal(t, 2, resp.Page)
	assert.True(t, resp.HasMore)
	assert.Equal(t, 1, resp.Duplicates)
	assert.Zero(t, resp.Filtered)
	assert.Len(t, resp.Results, 2)
	assert.Equal(t, "This tutorial introduces the basics of generics.", resp.Results[0].Snippet)
}

func TestSearchPages(t *testing.T) {
	b := &fake{}
	st := newTool(t, b, websearch.WithName("search_web"))
	assert.Equal(t, "search_web", tool.Name(st))

	r := call(t, context.Background(), st, `{"query":"qwzx"}`)
	require.False(t, r.IsError, "finding nothing is an answer, not a failure")
	assert.Equal(t, `No results for "qwzx". Try other or fewer words.`, r.Text())
	assert.Equal(t, 1, b.asked()[0].Page, "page 1 unless asked for another")
	assert.Equal(t, websearch.AnyTime, b.asked()[0].TimeRange)

	r = call(t, context.Background(), st, `{"query":"qwzx","page":4}`)
	assert.Equal(t, `No more results for "qwzx": page 4 is empty.`, r.Text())

	b.page = websearch.Page{Results: []websearch.Result{{Title: "One", URL: "https://example.org/"}}}
	r = call(t, context.Background(), st, `{"query":"one"}`)
	assert.Equal(t, "Results for \"one\", page 1:\n\n1. One\n   https://example.org/", r.Text(), "no note without more pages")

	b.page.HasMore = true
	r = call(t, context.Background(), st, `{"query":"one"}`)
	assert.True(t, strings.HasSuffix(r.Text(), "\nMore results may be on page 2: call search_web with the same query and \"page\": 2."), r.Text())
}

func TestSearchFiltersDomains(t *testing.T) {
	results := []websearch.Result{
		{Title: "Go", URL: "https://go.dev/"},
		{Title: "Package slices", URL: "https://PKG.go.dev./slices"},
		{Title: "Blog", URL: "https://blog.example.org/go"},
		{Title: "Look-alike", URL: "https://notgo.dev/"},
		{Title: "Playground", URL: "https://play.go.dev/"},
	}
	b := &fake{page: websearch.Page{Results: results}}
	st := newTool(t, b, websearch.WithAllowedDomains("*.go.dev"), websearch.WithBlockedDomains("play.go.dev"))
	assert.Contains(t, st.Definition().Description, "Only results from go.dev (and their subdomains) are shown")
	assert.Contains(t, st.Definition().Description, "Results from play.go.dev are left out")

	r := call(t, context.Background(), st, `{"query":"go"}`)
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, strings.Join([]string{
		`Results for "go", page 1:`,
		``,
		`1. Go`,
		`   https://go.dev/`,
		``,
		`2. Package slices`,
		`   https://PKG.go.dev./slices`,
		``,
		`(3 results from domains this tool does not show were left out.)`,
	}, "\n"), r.Text(), "a domain covers its subdomains, not names that merely end alike; the blocked list wins")
	assert.Equal(t, 3, r.Details.(websearch.Response).Filtered)

	b.page.Results = results[2:4]
	r = call(t, context.Background(), st, `{"query":"go"}`)
	assert.Equal(t, `No results for "go" on page 1 within go.dev: 2 results elsewhere were left out. Try adding site:go.dev to the query.`, r.Text())

	st = newTool(t, b, websearch.WithBlockedDomains("example.org", "notgo.dev"))
	r = call(t, context.Background(), st, `{"query":"go"}`)
	assert.Equal(t, `No results for "go" on page 1: all 2 were from blocked domains.`, r.Text())
}

func TestSearchCapsTheResults(t *testing.T) {
	var results []websearch.Result
	for _, u := range []string{"a", "b", "c", "d", "e"} {
		results = append(results, websearch.Result{Title: u, URL: "https://" + u + ".example/", Snippet: strings.Repeat("word ", 200)})
	}
	b := &fake{page: websearch.Page{Results: results}}
	st := newTool(t, b, websearch.WithMaxResults(2))
	assert.Contains(t, st.Definition().Description, "up to 2 a page")
	r := call(t, context.Background(), st, `{"query":"letters"}`)
	require.False(t, r.IsError, r.Text())
	resp := r.Details.(websearch.Response)
	require.Len(t, resp.Results, 2)
	assert.Equal(t, "a", resp.Results[0].Title)
	assert.Equal(t, 2, b.asked()[0].Count, "the cap is the page size asked for")
	assert.Less(t, len(resp.Results[0].Snippet), 510, "a long snippet is cut")
	assert.True(t, strings.HasSuffix(resp.Results[0].Snippet, "..."))
	assert.NotContains(t, r.Text(), "3.")
}

func TestSearchFailures(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		want      string
		transient bool
	}{
		{"rate limited", &websearch.StatusError{Backend: "Brave Search", Status: http.StatusTooManyRequests, Body: "RATE_LIMITED: slow down", RetryAfter: 2 * time.Second},
			`tool "web_search" failed: websearch: Brave Search answered 429 Too Many Requests (retry after 2s): RATE_LIMITED: slow down`, true},
		{"server error", &websearch.StatusError{Backend: "SearXNG", Status: http.StatusBadGateway},
			`websearch: SearXNG answered 502 Bad Gateway`, true},
		{"refused key", &websearch.StatusError{Backend: "Brave Search", Status: http.StatusUnauthorized, Hint: "check the key"},
			`websearch: Brave Search answered 401 Unauthorized (check the key)`, false},
		{"a function's own error", errors.New("my index: closed"), `websearch: my index: closed`, false},
		{"a function's transient error", middleware.Transient(errors.New("my index: busy")), `websearch: my index: busy`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newTool(t, &fake{err: tt.err})
			r := call(t, context.Background(), st, `{"query":"go"}`)
			require.True(t, r.IsError)
			assert.Equal(t, tool.CodeToolError, r.ErrorCode)
			assert.Contains(t, r.Text(), tt.want)
			assert.ErrorIs(t, r.Err, tt.err)
			assert.Equal(t, tt.transient, middleware.IsTransient(r.Err), "middleware.Retry retries what is transient")
		})
	}
}

func TestRetryRetriesTransientFailures(t *testing.T) {
	for _, tc := range []struct {
		status   int
		attempts int64
	}{{http.StatusServiceUnavailable, 3}, {http.StatusTooManyRequests, 3}, {http.StatusUnauthorized, 1}} {
		var attempts atomic.Int64
		st := newTool(t, websearch.BackendFunc(func(context.Context, websearch.Query) (websearch.Page, error) {
			if attempts.Add(1) < 3 {
				return websearch.Page{}, &websearch.StatusError{Backend: "test", Status: tc.status}
			}
			return websearch.Page{Results: []websearch.Result{{Title: "Found", URL: "https://example.org/"}}}, nil
		}))
		h := executor.Chain(executor.Terminal(nil), middleware.Retry(middleware.WithMaxAttempts(3), middleware.WithInitialInterval(time.Millisecond)))
		r := h.Handle(context.Background(), &executor.Request{Call: model.ToolCall{ID: "1", Name: websearch.DefaultName, Arguments: json.RawMessage(`{"query":"go"}`)}, Tool: st})
		assert.Equal(t, tc.attempts, attempts.Load(), "status %d", tc.status)
		assert.Equal(t, tc.attempts == 3, !r.IsError, "status %d: %s", tc.status, r.Text())
	}
}

func TestInvalidArgumentsNeverReachTheBackend(t *testing.T) {
	b := &fake{}
	st := newTool(t, b)
	for _, args := range []string{`{"query":""}`, `{}`, `{"query":"go","page":0}`, `{"query":"go","time_range":"decade"}`} {
		r := call(t, context.Background(), st, args)
		assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, args)
	}
	r := call(t, context.Background(), st, `{"query":"   "}`)
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "the query is empty")
	assert.Empty(t, b.asked())
}

func TestSearchHonoursTheCallsDeadline(t *testing.T) {
	st := newTool(t, websearch.BackendFunc(func(ctx context.Context, _ websearch.Query) (websearch.Page, error) {
		<-ctx.Done()
		return websearch.Page{}, ctx.Err()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r := call(t, ctx, st, `{"query":"go"}`)
	assert.Equal(t, tool.StatusTimeout, r.Status)
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
}

func TestNewRejectsBadSettings(t *testing.T) {
	ok := &fake{}
	tests := []struct {
		name string
		b    websearch.Backend
		opts []websearch.Option
		want string
	}{
		{"nil backend", nil, nil, "the backend is nil"},
		{"nil function", websearch.BackendFunc(nil), nil, "the backend is a nil BackendFunc"},
		{"no results", ok, []websearch.Option{websearch.WithMaxResults(0)}, "WithMaxResults: n must be 1 to 50, not 0"},
		{"too many results", ok, []websearch.Option{websearch.WithMaxResults(51)}, "not 51"},
		{"bad language", ok, []websearch.Option{websearch.WithLanguage("english!")}, `WithLanguage: "english!"`},
		{"bad region", ok, []websearch.Option{websearch.WithRegion("USA")}, `WithRegion: "USA"`},
		{"bad safe search", ok, []websearch.Option{websearch.WithSafeSearch(9)}, "WithSafeSearch: SafeSearch(9) is not a level"},
		{"no domains", ok, []websearch.Option{websearch.WithAllowedDomains()}, "WithAllowedDomains: no domains"},
		{"a URL for a domain", ok, []websearch.Option{websearch.WithBlockedDomains("https://example.org/")}, `WithBlockedDomains: "https://example.org/" is not a domain name`},
		{"bad name", ok, []websearch.Option{websearch.WithName("web search")}, "web search"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := websearch.New(tt.b, tt.opts...)
			require.ErrorIs(t, err, tool.ErrInvalidTool)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := websearch.New(ok, nil, websearch.WithLanguage("pt-br"), websearch.WithRegion("br"))
	assert.NoError(t, err, "a nil option is skipped")
}

func TestSafeSearchNames(t *testing.T) {
	assert.Equal(t, "default", websearch.SafeSearchDefault.String())
	assert.Equal(t, "off", websearch.SafeSearchOff.String())
	assert.Equal(t, "moderate", websearch.SafeSearchModerate.String())
	assert.Equal(t, "strict", websearch.SafeSearchStrict.String())
}

// sleepLog is a middleware.Clock that records the waits and does not wait.
type sleepLog struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *sleepLog) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *sleepLog) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

// A service's Retry-After reaches middleware.Retry through StatusError:
// the retry waits as long as asked, and gives up when asked for longer
// than its maximum interval.
func TestRetryWaitsAsLongAsTheServiceAsks(t *testing.T) {
	for _, tc := range []struct {
		after    time.Duration
		attempts int64
		sleeps   []time.Duration
	}{{1500 * time.Millisecond, 3, []time.Duration{1500 * time.Millisecond, 1500 * time.Millisecond}}, {time.Minute, 1, nil}} {
		var attempts atomic.Int64
		st := newTool(t, websearch.BackendFunc(func(context.Context, websearch.Query) (websearch.Page, error) {
			if attempts.Add(1) < 3 {
				return websearch.Page{}, &websearch.StatusError{Backend: "test", Status: http.StatusTooManyRequests, RetryAfter: tc.after}
			}
			return websearch.Page{Results: []websearch.Result{{Title: "Found", URL: "https://example.org/"}}}, nil
		}))
		clock := &sleepLog{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		h := executor.Chain(executor.Terminal(nil), middleware.Retry(middleware.WithClock(clock), middleware.WithMaxAttempts(3),
			middleware.WithInitialInterval(time.Millisecond), middleware.WithMaxInterval(10*time.Second)))
		h.Handle(context.Background(), &executor.Request{Call: model.ToolCall{ID: "1", Name: websearch.DefaultName, Arguments: json.RawMessage(`{"query":"go"}`)}, Tool: st})
		assert.Equal(t, tc.attempts, attempts.Load(), "retry after %s", tc.after)
		assert.Equal(t, tc.sleeps, clock.sleeps, "retry after %s", tc.after)
	}
}
