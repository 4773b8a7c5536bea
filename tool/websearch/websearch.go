package websearch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trellis-go/trellis/internal/domains"
	"github.com/trellis-go/trellis/internal/httpstatus"
	"github.com/trellis-go/trellis/tool"
)

// DefaultName is the tool's name unless WithName says otherwise.
const DefaultName = "web_search"

// DefaultMaxResults is how many results a page shows unless WithMaxResults
// says otherwise.
const DefaultMaxResults = 10

// MaxResultsLimit is the most WithMaxResults accepts.
const MaxResultsLimit = 50

// Backend is a search service the tool asks. Search returns one page of
// results for q, best first. An error should name the service; one that
// may pass if the search is made again should say so with a Transient()
// bool method (as *StatusError does), so that middleware.Retry retries it.
// A Backend is called from many goroutines at once.
type Backend interface {
	Search(ctx context.Context, q Query) (Page, error)
}

// BackendFunc adapts a function to a Backend.
type BackendFunc func(ctx context.Context, q Query) (Page, error)

// Search calls f.
func (f BackendFunc) Search(ctx context.Context, q Query) (Page, error) { return f(ctx, q) }

// Query is what the tool asks a backend for.
type Query struct {
	// Text is the model's query, as it wrote it (operators such as site:
	// and quotes included).
	Text string
	// Page is the page of results wanted, counting from 1.
	Page int
	// Count is how many results a page should hold: the tool's
	// WithMaxResults. A backend that cannot choose its page size returns
	// its own, and the tool shows Count of them at most.
	Count int
	// Language is the language of the results wanted, such as "en" or
	// "pt-br" (WithLanguage); "" leaves it to the backend.
	Language string
	// Region is the country the results are for, as a two-letter code such
	// as "US" (WithRegion); "" leaves it to the backend.
	Region string
	// SafeSearch is how strictly adult content is filtered (WithSafeSearch).
	SafeSearch SafeSearch
	// TimeRange limits the results to pages published or updated within a
	// recent period; "" means any time.
	TimeRange TimeRange
}

// SafeSearch is how strictly a backend filters adult content.
type SafeSearch int

// The SafeSearch levels.
const (
	// SafeSearchDefault leaves the level to the backend (Brave Search
	// moderates; a SearXNG instance uses its settings).
	SafeSearchDefault SafeSearch = iota
	// SafeSearchOff filters nothing.
	SafeSearchOff
	// SafeSearchModerate filters explicit images and videos.
	SafeSearchModerate
	// SafeSearchStrict filters all adult content.
	SafeSearchStrict
)

// String names the level.
func (s SafeSearch) String() string {
	switch s {
	case SafeSearchDefault:
		return "default"
	case SafeSearchOff:
		return "off"
	case SafeSearchModerate:
		return "moderate"
	case SafeSearchStrict:
		return "strict"
	}
	return fmt.Sprintf("SafeSearch(%d)", int(s))
}

// TimeRange is a recent period results were published or updated within.
type TimeRange string

// The time ranges.
const (
	AnyTime   TimeRange = ""
	PastDay   TimeRange = "day"
	PastWeek  TimeRange = "week"
	PastMonth TimeRange = "month"
	PastYear  TimeRange = "year"
)

// Page is one page of a backend's results.
type Page struct {
	// Results are the page's results, best first.
	Results []Result `json:"results"`
	// HasMore reports whether a next page may hold more results.
	HasMore bool `json:"has_more,omitempty"`
	// Notes are what the backend has to tell about the search, such as
	// the engines that did not answer; the model reads them after the
	// results.
	Notes []string `json:"notes,omitempty"`
}

// Result is one page found.
type Result struct {
	// Title is the page's title.
	Title string `json:"title"`
	// URL is the page's address.
	URL string `json:"url"`
	// Snippet is a short extract or description of the page.
	Snippet string `json:"snippet,omitempty"`
	// Published is when the page was published or last updated, as a date
	// (2024-03-15) when the backend gave one the tool could read, else as
	// the backend wrote it ("2 days ago"); "" when unknown.
	Published string `json:"published,omitempty"`
}

// Response is what a call found, as the model read it. A tool result
// carries it in Details.
type Response struct {
	// Query is the model's query.
	Query string `json:"query"`
	// Page is the page shown, counting from 1.
	Page int `json:"page"`
	// Results are the results shown: duplicates, results outside the
	// allowed domains or within the blocked ones, and results without an
	// http or https URL left out, at most WithMaxResults of them.
	Results []Result `json:"results"`
	// HasMore reports whether the backend said a next page may hold more.
	HasMore bool `json:"has_more,omitempty"`
	// Filtered is how many of the backend's results the domain lists left
	// out.
	Filtered int `json:"filtered,omitempty"`
	// Duplicates is how many results were left out for repeating an
	// earlier result's URL.
	Duplicates int `json:"duplicates,omitempty"`
	// Notes are the backend's notes (Page.Notes).
	Notes []string `json:"notes,omitempty"`
}

// StatusError is the failure of a search a backend's service answered with
// a status other than 200. It is transient (middleware.Retry retries it)
// for 408, 429 and 5xx statuses.
type StatusError struct {
	// Backend names the service, such as "Brave Search" or "SearXNG".
	Backend string
	// Status is the HTTP status code.
	Status int
	// Body is what the service said, cut short: the message of a JSON
	// error, or the start of the body.
	Body string
	// RetryAfter is how long the service asked the caller to wait (its
	// Retry-After header), 0 when it did not say.
	RetryAfter time.Duration
	// Hint is what may fix the failure, "" when the status needs none.
	Hint string
}

// Error returns the error's message.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s answered %d %s", e.Backend, e.Status, http.StatusText(e.Status))
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter.Round(time.Second).String())
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Transient reports whether the search may succeed if made again.
func (e *StatusError) Transient() bool { return httpstatus.Transient(e.Status) }

// RetryDelay returns RetryAfter: middleware.Retry waits that long before
// searching again (see middleware.RetryDelayer).
func (e *StatusError) RetryDelay() time.Duration { return e.RetryAfter }

// Option configures the tool.
type Option func(*config)

type config struct {
	name       string
	maxResults int
	language   string
	region     string
	safe       SafeSearch
	allowed    []string
	blocked    []string
	problems   []string
}

// WithName names the tool (DefaultName unless set).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithMaxResults caps how many results a page shows (DefaultMaxResults
// unless set); n must be 1 to MaxResultsLimit. It is also the page size
// the tool asks the backend for.
func WithMaxResults(n int) Option {
	return func(c *config) {
		if n < 1 || n > MaxResultsLimit {
			c.problems = append(c.problems, fmt.Sprintf("WithMaxResults: n must be 1 to %d, not %d", MaxResultsLimit, n))
		}
		c.maxResults = n
	}
}

// WithLanguage asks for results in a language, such as "en", "de" or
// "pt-br" (Query.Language).
func WithLanguage(lang string) Option {
	return func(c *config) {
		if !isCode(lang, 2, 10, true) {
			c.problems = append(c.problems, fmt.Sprintf("WithLanguage: %q is not a language code such as \"en\" or \"pt-br\"", lang))
		}
		c.language = lang
	}
}

// WithRegion asks for results for a country, as a two-letter code such as
// "US" or "DE" (Query.Region).
func WithRegion(country string) Option {
	return func(c *config) {
		if !isCode(country, 2, 2, false) {
			c.problems = append(c.problems, fmt.Sprintf("WithRegion: %q is not a two-letter country code such as \"US\"", country))
		}
		c.region = strings.ToUpper(country)
	}
}

// WithSafeSearch sets how strictly adult content is filtered
// (SafeSearchDefault, the backend's own setting, unless set).
func WithSafeSearch(s SafeSearch) Option {
	return func(c *config) {
		if s < SafeSearchDefault || s > SafeSearchStrict {
			c.problems = append(c.problems, fmt.Sprintf("WithSafeSearch: %s is not a level", s))
		}
		c.safe = s
	}
}

// WithAllowedDomains shows only results whose host is one of domains or a
// subdomain of one ("go.dev" allows go.dev and pkg.go.dev); "*.go.dev" and
// ".go.dev" mean go.dev too. Calls add up. The lists filter the results a
// backend returns, which can leave a page empty: the tool's description
// tells the model the domains, so that it can add site: to its query.
func WithAllowedDomains(domains ...string) Option {
	return func(c *config) { c.allowed = c.addDomains(c.allowed, "WithAllowedDomains", domains) }
}

// WithBlockedDomains leaves out results whose host is one of domains or a
// subdomain of one, whatever WithAllowedDomains allows. Calls add up.
func WithBlockedDomains(domains ...string) Option {
	return func(c *config) { c.blocked = c.addDomains(c.blocked, "WithBlockedDomains", domains) }
}

func (c *config) addDomains(list []string, option string, names []string) []string {
	if len(names) == 0 {
		c.problems = append(c.problems, option+": no domains")
	}
	for _, d := range names {
		n, ok := domains.Normalize(d)
		if !ok {
			c.problems = append(c.problems, fmt.Sprintf("%s: %q is not a domain name", option, d))
			continue
		}
		list = append(list, n)
	}
	return list
}

// Args are the tool's arguments.
type Args struct {
	// Query is what to search for.
	Query string `json:"query" jsonschema:"minLength=1" jsonschema_description:"What to search the web for: keywords or a question. Operators such as \"exact phrase\", -word and site:example.com work with most backends."`
	// Page is the page of results to show.
	Page int `json:"page,omitempty" jsonschema:"minimum=1" jsonschema_description:"Which page of results to show, counting from 1 (the default). Ask for the next page when the result says there are more."`
	// TimeRange limits the results to recent pages.
	TimeRange string `json:"time_range,omitempty" jsonschema:"enum=day,enum=week,enum=month,enum=year" jsonschema_description:"Only pages published or updated within the past day, week, month or year. Leave it out for any time."`
}

// New returns a tool that searches the web with b and shows the model one
// page of results as a numbered list: each result's title, URL, snippet
// and date when known, and a note when a next page may hold more. Results
// are deduplicated by URL (scheme, "www.", a trailing slash and the
// fragment aside), filtered by WithAllowedDomains and WithBlockedDomains,
// and cut at WithMaxResults; the result's Details hold the Response.
//
// The tool is read-only, search-or-read, open-world and concurrency-safe
// (tool.Metadata). A backend's failure is an error result whose error
// wraps the backend's: a *StatusError for an HTTP status of the built-in
// backends (transient for 408, 429 and 5xx, so that middleware.Retry
// retries it), or the transport's error; cancellation and deadlines are
// the call's context's.
func New(b Backend, opts ...Option) (tool.Tool, error) {
	c := config{name: DefaultName, maxResults: DefaultMaxResults}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	switch bb := b.(type) {
	case nil:
		c.problems = append(c.problems, "the backend is nil")
	case BackendFunc:
		if bb == nil {
			c.problems = append(c.problems, "the backend is a nil BackendFunc")
		}
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: websearch tool %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	s := &searcher{c: c, b: b}
	return tool.NewFunc(c.name, c.description(),
		func(ctx context.Context, in Args) (tool.Result, error) {
			resp, err := s.search(ctx, in)
			if err != nil {
				return tool.Result{}, err
			}
			r := tool.Text(resp.render(c.name, c.allowed))
			r.Details = resp
			return r, nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, OpenWorld: true, ConcurrencySafe: true}),
		tool.WithTitle("Web search"))
}

// description is what the model reads about the tool.
func (c *config) description() string {
	d := fmt.Sprintf("Searches the web and lists the pages found, up to %d a page: each one's title, URL and a snippet. "+
		"For more results of the same query, ask for the next page. The snippets are short: to read a page, fetch its URL.", c.maxResults)
	if len(c.allowed) > 0 {
		d += " Only results from " + strings.Join(c.allowed, ", ") + " (and their subdomains) are shown; add site: to the query to find more of them."
	}
	if len(c.blocked) > 0 {
		d += " Results from " + strings.Join(c.blocked, ", ") + " are left out."
	}
	return d
}

// searcher runs the tool's calls.
type searcher struct {
	c config
	b Backend
}

// search asks the backend for the page in asks for and keeps what the
// settings let through.
func (s *searcher) search(ctx context.Context, in Args) (Response, error) {
	page := max(in.Page, 1)
	q := Query{
		Text:       strings.TrimSpace(in.Query),
		Page:       page,
		Count:      s.c.maxResults,
		Language:   s.c.language,
		Region:     s.c.region,
		SafeSearch: s.c.safe,
		TimeRange:  TimeRange(in.TimeRange),
	}
	if q.Text == "" {
		return Response{}, errors.New("websearch: the query is empty: give keywords or a question")
	}
	p, err := s.b.Search(ctx, q)
	if err != nil {
		return Response{}, fmt.Errorf("websearch: %w", err)
	}
	resp := Response{Query: q.Text, Page: page, HasMore: p.HasMore, Notes: cleanNotes(p.Notes)}
	seen := make(map[string]bool, len(p.Results))
	for _, r := range p.Results {
		u, ok := webURL(r.URL)
		if !ok {
			continue
		}
		if !s.c.admits(domains.Host(u.Hostname())) {
			resp.Filtered++
			continue
		}
		key := urlKey(u)
		if seen[key] {
			resp.Duplicates++
			continue
		}
		seen[key] = true
		if len(resp.Results) == s.c.maxResults {
			continue // counted neither as filtered nor as a duplicate
		}
		resp.Results = append(resp.Results, tidy(r))
	}
	return resp, nil
}

// admits reports whether the domain lists let results of host through.
func (c *config) admits(host string) bool {
	for _, d := range c.blocked {
		if domains.Covers(d, host) {
			return false
		}
	}
	if len(c.allowed) == 0 {
		return true
	}
	for _, d := range c.allowed {
		if domains.Covers(d, host) {
			return true
		}
	}
	return false
}

// render is the text the model reads; name is the tool's.
func (r Response) render(name string, allowed []string) string {
	var b strings.Builder
	if len(r.Results) == 0 {
		switch {
		case r.Filtered > 0 && len(allowed) > 0:
			fmt.Fprintf(&b, "No results for %q on page %d within %s: %d %s elsewhere %s left out. Try adding site:%s to the query.",
				r.Query, r.Page, strings.Join(allowed, ", "), r.Filtered, plural(r.Filtered, "result", "results"), plural(r.Filtered, "was", "were"), allowed[0])
		case r.Filtered > 0:
			fmt.Fprintf(&b, "No results for %q on page %d: all %d were from blocked domains.", r.Query, r.Page, r.Filtered)
		case r.Page > 1:
			fmt.Fprintf(&b, "No more results for %q: page %d is empty.", r.Query, r.Page)
		default:
			fmt.Fprintf(&b, "No results for %q. Try other or fewer words.", r.Query)
		}
	} else {
		fmt.Fprintf(&b, "Results for %q, page %d:\n", r.Query, r.Page)
		for i, res := range r.Results {
			fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, res.Title, res.URL)
			if res.Snippet != "" {
				b.WriteString("   " + res.Snippet + "\n")
			}
			if res.Published != "" {
				b.WriteString("   Published: " + res.Published + "\n")
			}
		}
		if r.Filtered > 0 {
			fmt.Fprintf(&b, "\n(%d %s from domains this tool does not show %s left out.)\n", r.Filtered, plural(r.Filtered, "result", "results"), plural(r.Filtered, "was", "were"))
		}
	}
	for _, n := range r.Notes {
		b.WriteString("\nNote: " + n)
	}
	if r.HasMore {
		fmt.Fprintf(&b, "\nMore results may be on page %d: call %s with the same query and \"page\": %d.", r.Page+1, name, r.Page+1)
	}
	return strings.TrimRight(b.String(), "\n")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
