package websearch_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/tool/websearch"
)

func newDuckDuckGo(t *testing.T, opts ...websearch.BackendOption) *websearch.DuckDuckGo {
	t.Helper()
	b, err := websearch.NewDuckDuckGo(opts...)
	require.NoError(t, err)
	return b
}

func TestDuckDuckGoSpeaksTheInstantAnswerAPI(t *testing.T) {
	s := newService(t, http.StatusOK, fixture(t, "duckduckgo/golang.json"))
	// The API labels its JSON as JavaScript.
	s.answer(http.StatusOK, fixture(t, "duckduckgo/golang.json"), "Content-Type", "application/x-javascript")
	st := newTool(t, newDuckDuckGo(t, websearch.WithBaseURL(s.URL+"/?t=my-app"), websearch.WithUserAgent("trellis-test/1.0")), websearch.WithMaxResults(4))

	r := call(t, context.Background(), st, `{"query":"golang & go?"}`)
	require.False(t, r.IsError, r.Text())

	reqs := s.requests()
	require.Len(t, reqs, 1)
	q := reqs[0].URL.Query()
	assert.Equal(t, "/", reqs[0].URL.Path)
	assert.Equal(t, "golang & go?", q.Get("q"), "the query is escaped, not cut at &")
	assert.Equal(t, "json", q.Get("format"))
	assert.Equal(t, "1", q.Get("no_html"))
	assert.Equal(t, "1", q.Get("skip_disambig"))
	assert.Equal(t, "my-app", q.Get("t"), "the base URL's own parameters are kept")
	assert.Equal(t, "trellis-test/1.0", reqs[0].Header.Get("User-Agent"))

	assert.Equal(t, strings.Join([]string{
		`Results for "golang & go?", page 1:`,
		``,
		`1. Go (programming language) (Wikipedia)`,
		`   https://en.wikipedia.org/wiki/Go_(programming_language)`,
		`   Go is a high-level general purpose programming language that is statically typed and compiled.`,
		``,
		`2. Official site`,
		`   https://go.dev/`,
		``,
		`3. Robert Griesemer`,
		`   https://duckduckgo.com/Robert_Griesemer`,
		`   Swiss computer scientist.`,
		``,
		`4. Rob Pike`,
		`   https://duckduckgo.com/Rob_Pike`,
		`   Canadian programmer and author.`,
	}, "\n"), r.Text(), "the summary, the official sites, then the related topics, a group's in its place; WithMaxResults caps the list")

	resp, ok := r.Details.(websearch.Response)
	require.True(t, ok, "Details hold the response, got %T", r.Details)
	assert.False(t, resp.HasMore)

	// The API has one page: a later one is empty, asked for nothing.
	r = call(t, context.Background(), st, `{"query":"golang","page":2}`)
	require.False(t, r.IsError, r.Text())
	assert.Contains(t, r.Text(), "gives one page of answers")
	assert.Len(t, s.requests(), 1)
}

func TestDuckDuckGoAnswersAndNothingAreNotes(t *testing.T) {
	s := newService(t, http.StatusOK, fixture(t, "duckduckgo/answer.json"))
	b := newDuckDuckGo(t, websearch.WithBaseURL(s.URL))

	p, err := b.Search(context.Background(), websearch.Query{Text: "10 km in miles", Page: 1})
	require.NoError(t, err)
	assert.Empty(t, p.Results)
	require.Len(t, p.Notes, 1)
	assert.True(t, strings.HasPrefix(p.Notes[0], `Instant answer: {"from":"unit_conversion"`), "an answer object is kept as compact JSON: %s", p.Notes[0])
	assert.True(t, strings.HasSuffix(p.Notes[0], "(conversions)"), p.Notes[0])

	s.answer(http.StatusOK, fixture(t, "duckduckgo/nothing.json"))
	r := call(t, context.Background(), newTool(t, b), `{"query":"qwzx"}`)
	require.False(t, r.IsError, "finding nothing is an answer, not a failure")
	assert.Equal(t, `No results for "qwzx". Try other or fewer words.`+"\nNote: DuckDuckGo's Instant Answer API knows topics, names and terms, not general web pages: try a shorter or more specific query.", r.Text())

	s.answer(http.StatusOK, []byte(`{"Heading":"","AbstractText":"","Redirect":"https://en.wikipedia.org/wiki/Special:Search?search=golang","RelatedTopics":[],"Results":[]}`))
	p, err = b.Search(context.Background(), websearch.Query{Text: "!w golang", Page: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"The query is a redirect to https://en.wikipedia.org/wiki/Special:Search?search=golang"}, p.Notes, "a !bang query's redirect is an answer")

	s.answer(http.StatusOK, []byte(`{"Heading":"serendipity","Definition":"luck that takes the form of finding valuable things","DefinitionSource":"Wordnik","DefinitionURL":"https://www.wordnik.com/words/serendipity"}`))
	p, err = b.Search(context.Background(), websearch.Query{Text: "define serendipity", Page: 1})
	require.NoError(t, err)
	assert.Equal(t, []websearch.Result{{Title: "Definition of serendipity (Wordnik)", URL: "https://www.wordnik.com/words/serendipity", Snippet: "luck that takes the form of finding valuable things"}}, p.Results)
}

func TestDuckDuckGoFailures(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		want      string
		transient bool
	}{
		{"rate limited", http.StatusTooManyRequests, "slow down", "DuckDuckGo answered 429 Too Many Requests: slow down", true},
		{"server error", http.StatusBadGateway, "", "DuckDuckGo answered 502 Bad Gateway", true},
		{"request timeout", http.StatusRequestTimeout, "", "DuckDuckGo answered 408 Request Timeout", true},
		{"refused", http.StatusForbidden, strings.Repeat("x", 500), "DuckDuckGo answered 403 Forbidden: " + strings.Repeat("x", 200) + "...", false},
		{"not JSON", http.StatusOK, "<html>busy</html>", `DuckDuckGo: the response is not an Instant Answer JSON object ("<html>busy</html>")`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(t, tt.status, []byte(tt.body))
			r := call(t, context.Background(), newTool(t, newDuckDuckGo(t, websearch.WithBaseURL(s.URL))), `{"query":"go"}`)
			require.True(t, r.IsError)
			assert.Contains(t, r.Text(), tt.want)
			assert.Equal(t, tt.transient, middleware.IsTransient(r.Err), "middleware.Retry retries what is transient")
			var se *websearch.StatusError
			assert.Equal(t, tt.status != http.StatusOK, errors.As(r.Err, &se))
		})
	}
}

func TestNewDuckDuckGoRejectsBadSettings(t *testing.T) {
	tests := []struct {
		name string
		opts []websearch.BackendOption
		want string
	}{
		{"no scheme", []websearch.BackendOption{websearch.WithBaseURL("api.duckduckgo.test")}, `"api.duckduckgo.test" is not an http or https URL`},
		{"other scheme", []websearch.BackendOption{websearch.WithBaseURL("ftp://example.test")}, "is not an http or https URL"},
		{"nil client", []websearch.BackendOption{websearch.WithHTTPClient(nil)}, "the client is nil"},
		{"a key", []websearch.BackendOption{websearch.WithAPIKey("k")}, "takes no key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := websearch.NewDuckDuckGo(tt.opts...)
			require.ErrorIs(t, err, websearch.ErrInvalidBackend)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	b, err := websearch.NewDuckDuckGo(nil)
	require.NoError(t, err)
	require.NotNil(t, b)
}
