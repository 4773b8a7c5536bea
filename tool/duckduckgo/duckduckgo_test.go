package duckduckgo_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/duckduckgo"
)

// api is a test server that answers like the Instant Answer API with the
// given status and body, and records the requests it got.
type api struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newAPI(t *testing.T, status int, body []byte) *api {
	t.Helper()
	a := &api{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.reqs = append(a.reqs, r.Clone(context.Background()))
		a.mu.Unlock()
		// The API labels its JSON as JavaScript.
		w.Header().Set("Content-Type", "application/x-javascript")
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *api) requests() []*http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reqs
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}

func search(t *testing.T, ctx context.Context, st tool.Tool, query string) tool.Result {
	t.Helper()
	args, err := json.Marshal(map[string]string{"query": query})
	require.NoError(t, err)
	return tool.Invoke(ctx, st, model.ToolCall{ID: "s1", Name: tool.Name(st), Arguments: args})
}

func TestSearchSpeaksTheInstantAnswerAPI(t *testing.T) {
	a := newAPI(t, http.StatusOK, fixture(t, "golang.json"))
	st, err := duckduckgo.NewTool(duckduckgo.WithBaseURL(a.URL), duckduckgo.WithUserAgent("trellis-test/1.0"), duckduckgo.WithMaxResults(3))
	require.NoError(t, err)
	assert.Equal(t, duckduckgo.DefaultName, tool.Name(st))
	assert.Equal(t, "DuckDuckGo search", tool.TitleOf(st))
	meta := tool.MetadataOf(st)
	assert.True(t, meta.ReadOnly && meta.OpenWorld && meta.ConcurrencySafe && meta.SearchOrRead)

	r := search(t, context.Background(), st, "golang & go?")
	require.False(t, r.IsError, r.Text())

	reqs := a.requests()
	require.Len(t, reqs, 1)
	q := reqs[0].URL.Query()
	assert.Equal(t, "/", reqs[0].URL.Path)
	assert.Equal(t, "golang & go?", q.Get("q"), "the query is escaped, not cut at &")
	assert.Equal(t, "json", q.Get("format"))
	assert.Equal(t, "1", q.Get("no_html"))
	assert.Equal(t, "1", q.Get("skip_disambig"))
	assert.Equal(t, "trellis-test/1.0", reqs[0].Header.Get("User-Agent"))

	assert.Equal(t, strings.Join([]string{
		"# Go (programming language)",
		"Go is a high-level general purpose programming language that is statically typed and compiled.",
		"Source: Wikipedia (https://en.wikipedia.org/wiki/Go_(programming_language))",
		"Results:",
		"1. Official site (https://go.dev/)",
		"Related topics:",
		"1. Robert Griesemer - Swiss computer scientist. (https://duckduckgo.com/Robert_Griesemer)",
		"2. Rob Pike - Canadian programmer and author. (https://duckduckgo.com/Rob_Pike)",
		"3. Erlang (programming language) - A general-purpose, concurrent, functional programming language. (https://duckduckgo.com/Erlang_(programming_language))",
	}, "\n"), r.Text(), "a group's topics come in its place; WithMaxResults caps the list")

	resp, ok := r.Details.(duckduckgo.Response)
	require.True(t, ok, "Details hold the response, got %T", r.Details)
	assert.Equal(t, "Wikipedia", resp.AbstractSource)
	assert.Len(t, resp.Related, 3)
}

func TestParse(t *testing.T) {
	all, err := duckduckgo.Parse(fixture(t, "golang.json"))
	require.NoError(t, err)
	assert.Len(t, all.Related, 4, "groups flattened: two topics and a group of two")
	assert.Equal(t, "Occam - A programming language which is concurrent.", all.Related[3].Text)
	assert.Equal(t, []duckduckgo.Topic{{Text: "Official site", URL: "https://go.dev/"}}, all.Results,
		"icons whose sizes are numbers or empty strings do not get in the way")

	conv, err := duckduckgo.Parse(fixture(t, "answer.json"))
	require.NoError(t, err)
	assert.Equal(t, "conversions", conv.AnswerType)
	assert.True(t, strings.HasPrefix(conv.Answer, `{"from":"unit_conversion"`), "an answer object is kept as compact JSON: %s", conv.Answer)
	assert.False(t, conv.Empty())

	none, err := duckduckgo.Parse(fixture(t, "nothing.json"))
	require.NoError(t, err)
	assert.True(t, none.Empty())

	bang, err := duckduckgo.Parse([]byte(`{"Heading":"","AbstractText":"","Redirect":"https://en.wikipedia.org/wiki/Special:Search?search=golang","RelatedTopics":[],"Results":[]}`))
	require.NoError(t, err)
	assert.False(t, bang.Empty(), "a !bang query's redirect is an answer")
	assert.Equal(t, "https://en.wikipedia.org/wiki/Special:Search?search=golang", bang.Redirect)

	// One odd field loses nothing else.
	odd, err := duckduckgo.Parse([]byte(`{"Heading":"Go","AbstractText":7,"Results":"","RelatedTopics":[3,{"Text":"kept","FirstURL":9},{"Topics":{"x":1}},{"Text":"also kept"}]}`))
	require.NoError(t, err)
	assert.Equal(t, "Go", odd.Heading)
	assert.Empty(t, odd.Abstract)
	assert.Equal(t, []duckduckgo.Topic{{Text: "kept"}, {Text: "also kept"}}, odd.Related)

	for _, bad := range []string{``, `[]`, `null`, `<html>rate limited</html>`} {
		_, err := duckduckgo.Parse([]byte(bad))
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "not an Instant Answer JSON object")
	}
}

func TestSearchWithoutAnAnswerSaysSo(t *testing.T) {
	a := newAPI(t, http.StatusOK, fixture(t, "nothing.json"))
	st, err := duckduckgo.NewTool(duckduckgo.WithBaseURL(a.URL + "/?t=my-app"))
	require.NoError(t, err)
	r := search(t, context.Background(), st, "qwzx")
	require.False(t, r.IsError, "finding nothing is an answer, not a failure")
	assert.Equal(t, `No instant answer for "qwzx". The Instant Answer API knows topics, names and terms, not general web pages: try a shorter or more specific query.`, r.Text())
	assert.Equal(t, "/", a.requests()[0].URL.Path)
	q := a.requests()[0].URL.Query()
	assert.Equal(t, "my-app", q.Get("t"), "the base URL's own parameters are kept")
	assert.Equal(t, "qwzx", q.Get("q"))
	assert.Equal(t, "json", q.Get("format"))
}

func TestSearchFailures(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		want      string
		transient bool
	}{
		{"rate limited", http.StatusTooManyRequests, "slow down", "the API answered 429 Too Many Requests: slow down", true},
		{"server error", http.StatusBadGateway, "", "the API answered 502 Bad Gateway", true},
		{"request timeout", http.StatusRequestTimeout, "", "the API answered 408 Request Timeout", true},
		{"refused", http.StatusForbidden, strings.Repeat("x", 500), "the API answered 403 Forbidden: " + strings.Repeat("x", 200) + "...", false},
		{"not JSON", http.StatusOK, "<html>busy</html>", `the response is not an Instant Answer JSON object ("<html>busy</html>")`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAPI(t, tt.status, []byte(tt.body))
			st, err := duckduckgo.NewTool(duckduckgo.WithBaseURL(a.URL))
			require.NoError(t, err)
			r := search(t, context.Background(), st, "go")
			require.True(t, r.IsError)
			assert.Equal(t, tool.CodeToolError, r.ErrorCode)
			assert.Contains(t, r.Text(), tt.want)
			assert.Equal(t, tt.transient, middleware.IsTransient(r.Err), "middleware.Retry retries what is transient")
			var se *duckduckgo.StatusError
			assert.Equal(t, tt.status != http.StatusOK, errors.As(r.Err, &se))
		})
	}

	// Invalid arguments never reach the API.
	a := newAPI(t, http.StatusOK, fixture(t, "golang.json"))
	st, err := duckduckgo.NewTool(duckduckgo.WithBaseURL(a.URL))
	require.NoError(t, err)
	r := tool.Invoke(context.Background(), st, model.ToolCall{ID: "s", Name: duckduckgo.DefaultName, Arguments: json.RawMessage(`{"query":""}`)})
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode)
	assert.Empty(t, a.requests())
}

func TestSearchHonoursTheCallsDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	st, err := duckduckgo.NewTool(duckduckgo.WithBaseURL(srv.URL))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := search(t, ctx, st, "go")
	assert.Equal(t, tool.StatusTimeout, r.Status)
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
}

func TestNewToolRejectsBadSettings(t *testing.T) {
	tests := []struct {
		name string
		opts []duckduckgo.Option
		want string
	}{
		{"no scheme", []duckduckgo.Option{duckduckgo.WithBaseURL("api.duckduckgo.com")}, `"api.duckduckgo.com" is not an http or https URL`},
		{"other scheme", []duckduckgo.Option{duckduckgo.WithBaseURL("ftp://example.test")}, "is not an http or https URL"},
		{"nil client", []duckduckgo.Option{duckduckgo.WithHTTPClient(nil)}, "the client is nil"},
		{"no results", []duckduckgo.Option{duckduckgo.WithMaxResults(0)}, "at least 1"},
		{"bad name", []duckduckgo.Option{duckduckgo.WithName("web search")}, "web search"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := duckduckgo.NewTool(tt.opts...)
			require.ErrorIs(t, err, tool.ErrInvalidTool)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	st, err := duckduckgo.NewTool(duckduckgo.WithName("web_lookup"), nil)
	require.NoError(t, err)
	assert.Equal(t, "web_lookup", tool.Name(st))
}

func FuzzParseResponse(f *testing.F) {
	for _, name := range []string{"golang.json", "answer.json", "nothing.json"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"RelatedTopics":[{"Topics":[{"Topics":[{"Text":"deep"}]}]}],"Answer":[1,2]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := duckduckgo.Parse(body)
		if err != nil {
			if !strings.Contains(err.Error(), "not an Instant Answer JSON object") {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		for _, tp := range append(r.Results, r.Related...) {
			if tp.Text == "" {
				t.Fatalf("a topic without text: %+v", tp)
			}
		}
	})
}
