package duckduckgo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-go/trellis/internal/httpstatus"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// DefaultName is the tool's name unless WithName says otherwise.
const DefaultName = "duckduckgo_search"

// DefaultBaseURL is the Instant Answer API's address.
const DefaultBaseURL = "https://api.duckduckgo.com"

// DefaultMaxResults is how many results and related topics a result lists
// unless WithMaxResults says otherwise.
const DefaultMaxResults = 5

// maxBody is the most of a response the tool reads.
const maxBody = 4 << 20

// Args are the tool's arguments.
type Args struct {
	// Query is what to look up.
	Query string `json:"query" jsonschema:"minLength=1" jsonschema_description:"What to look up: a topic, a name, a term to define, a short question."`
}

// Response is what the Instant Answer API answered, as the tool reads it.
// A tool result carries it in Details.
type Response struct {
	// Heading names the topic found.
	Heading string `json:"heading,omitempty"`
	// Answer is an instant answer (a conversion, a calculation, a fact).
	Answer string `json:"answer,omitempty"`
	// AnswerType says what kind of instant answer Answer is.
	AnswerType string `json:"answer_type,omitempty"`
	// Abstract is a summary of the topic, and AbstractSource and
	// AbstractURL where it comes from.
	Abstract       string `json:"abstract,omitempty"`
	AbstractSource string `json:"abstract_source,omitempty"`
	AbstractURL    string `json:"abstract_url,omitempty"`
	// Definition is a dictionary definition, and DefinitionSource and
	// DefinitionURL where it comes from.
	Definition       string `json:"definition,omitempty"`
	DefinitionSource string `json:"definition_source,omitempty"`
	DefinitionURL    string `json:"definition_url,omitempty"`
	// Results are the topic's official sites and the like.
	Results []Topic `json:"results,omitempty"`
	// Related are related topics, groups of topics flattened in order.
	Related []Topic `json:"related,omitempty"`
	// Redirect is where a !bang query (such as "!w golang") leads.
	Redirect string `json:"redirect,omitempty"`
}

// Topic is a result or a related topic.
type Topic struct {
	// Text describes the topic.
	Text string `json:"text"`
	// URL is the topic's page.
	URL string `json:"url,omitempty"`
}

// Empty reports whether r holds nothing to tell.
func (r Response) Empty() bool {
	return r.Answer == "" && r.Abstract == "" && r.Definition == "" && len(r.Results) == 0 && len(r.Related) == 0 && r.Redirect == ""
}

// StatusError is the failure of a request the API answered with a status
// other than 200. It is transient (middleware.Retry retries it) for 408, 429
// and 5xx statuses.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	// Body is the start of the response body.
	Body string
}

// Error returns the error's message.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("duckduckgo: the API answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Transient reports whether the request may succeed if sent again.
func (e *StatusError) Transient() bool {
	return httpstatus.Transient(e.Status)
}

// Option configures the tool.
type Option func(*config)

type config struct {
	name       string
	baseURL    string
	base       *url.URL // baseURL parsed
	userAgent  string
	client     *http.Client
	maxResults int
	proxy      func(*http.Request) (*url.URL, error)
	problems   []string
}

// WithName names the tool (DefaultName unless set).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithBaseURL sets the API's address (DefaultBaseURL unless set), for a
// proxy or a test server.
func WithBaseURL(u string) Option { return func(c *config) { c.baseURL = u } }

// WithUserAgent sets the User-Agent header of the requests.
func WithUserAgent(ua string) Option { return func(c *config) { c.userAgent = ua } }

// WithHTTPClient sets the HTTP client of the requests (one with a 15-second
// timeout unless set). The call's context bounds each request either way.
func WithHTTPClient(c *http.Client) Option {
	return func(cfg *config) {
		if c == nil {
			cfg.problems = append(cfg.problems, "WithHTTPClient: the client is nil")
		}
		cfg.client = c
	}
}

// WithProxy sends the requests through the proxy that proxy chooses for
// each of them: http.ProxyURL for one proxy, http.ProxyFromEnvironment for
// HTTPS_PROXY, HTTP_PROXY and NO_PROXY; a nil URL means a direct
// connection for that request, and an error fails the call and is wrapped
// in the tool's. Without it the tool's client follows the environment's
// proxy settings, as http.DefaultTransport does; a function that always
// returns nil turns them off.
//
// The tool connects only to the API's address (WithBaseURL), which the
// application chose, so neither it nor the proxy's is checked against
// private networks, unlike in package webfetch. A proxy's refusal to open
// a tunnel to an https address fails the call with an error that says so
// (transient for 408, 429 and 5xx). WithProxy cannot be combined with
// WithHTTPClient, whose client's transport decides on proxies.
func WithProxy(proxy func(*http.Request) (*url.URL, error)) Option {
	return func(c *config) {
		if proxy == nil {
			c.problems = append(c.problems, "WithProxy: the proxy function is nil")
		}
		c.proxy = proxy
	}
}

// WithMaxResults caps how many results and how many related topics the
// model is shown (DefaultMaxResults unless set); n must be at least 1.
func WithMaxResults(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxResults: n must be at least 1")
		}
		c.maxResults = n
	}
}

// NewTool returns a tool that looks things up with DuckDuckGo's Instant
// Answer API: instant answers, topic summaries, definitions and related
// topics — not a full list of web results. It needs no key. The model reads
// the answer as text; the result's Details hold the Response.
//
// The tool is read-only, concurrency-safe and open-world (tool.Metadata). A
// failed request is an error result whose error is a *StatusError for an
// HTTP status (transient for 429 and 5xx) or the transport's error;
// cancellation and deadlines are the call's context's.
func NewTool(opts ...Option) (tool.Tool, error) {
	c := config{name: DefaultName, baseURL: DefaultBaseURL, maxResults: DefaultMaxResults}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	u, err := url.Parse(c.baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		c.problems = append(c.problems, fmt.Sprintf("WithBaseURL: %q is not an http or https URL", c.baseURL))
	}
	c.base = u
	if c.proxy != nil && c.client != nil {
		c.problems = append(c.problems, "WithProxy: a client given by WithHTTPClient uses its own transport's proxy; set the proxy there, or leave WithHTTPClient out")
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: duckduckgo tool %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	if c.client == nil {
		c.client = &http.Client{Timeout: 15 * time.Second}
		if c.proxy != nil {
			c.client.Transport = httpstatus.ProxyTransport(c.proxy)
		}
	}
	return tool.NewFunc(c.name, "Looks up a topic, a name or a term with DuckDuckGo's Instant Answer API: a summary with its source, a definition, an instant answer, and related topics. It does not list general web pages; a query without an answer finds nothing.",
		func(ctx context.Context, in Args) (tool.Result, error) {
			resp, err := c.search(ctx, in.Query)
			if err != nil {
				return tool.Result{}, err
			}
			r := tool.Text(resp.render(in.Query))
			r.Details = resp
			return r, nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, OpenWorld: true, ConcurrencySafe: true}),
		tool.WithTitle("DuckDuckGo search"))
}

// search asks the API about query.
func (c *config) search(ctx context.Context, query string) (Response, error) {
	u := *c.base
	if u.Path == "" {
		u.Path = "/"
	}
	q := u.Query() // what the base URL carries (a proxy's key, say) is kept
	q.Set("q", query)
	q.Set("format", "json")
	q.Set("no_html", "1")
	q.Set("no_redirect", "1")
	q.Set("skip_disambig", "1")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Response{}, fmt.Errorf("duckduckgo: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("duckduckgo: %w", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return Response{}, fmt.Errorf("duckduckgo: reading the response: %w", err)
	}
	if res.StatusCode != http.StatusOK {
		return Response{}, &StatusError{Status: res.StatusCode, Body: textcut.Clip(strings.TrimSpace(string(body)), 200, "...")}
	}
	if len(body) > maxBody {
		return Response{}, fmt.Errorf("duckduckgo: the response is larger than %d bytes", maxBody)
	}
	resp, err := Parse(body)
	if err != nil {
		return Response{}, err
	}
	resp.Results = resp.Results[:min(len(resp.Results), c.maxResults)]
	resp.Related = resp.Related[:min(len(resp.Related), c.maxResults)]
	return resp, nil
}

// Parse reads a response of the Instant Answer API (format=json). Groups of
// related topics are flattened in order; an answer that is not a string
// (some instant answers are objects) is kept as compact JSON. A field of an
// unexpected type is read as absent, and a topic with one is left out, so
// that one odd field does not lose the rest; a body that is not a JSON
// object is an error that says so.
func Parse(body []byte) (Response, error) {
	var f fields
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		if err == nil {
			err = errors.New("null")
		}
		return Response{}, fmt.Errorf("duckduckgo: the response is not an Instant Answer JSON object (%q): %w", textcut.Clip(string(body), 80, "..."), err)
	}
	r := Response{
		Heading: f.str("Heading"), Answer: answerText(f["Answer"]), AnswerType: f.str("AnswerType"),
		Abstract: f.str("AbstractText"), AbstractSource: f.str("AbstractSource"), AbstractURL: f.str("AbstractURL"),
		Definition: f.str("Definition"), DefinitionSource: f.str("DefinitionSource"), DefinitionURL: f.str("DefinitionURL"),
		Redirect: f.str("Redirect"),
	}
	r.Results = topics(r.Results, f["Results"], 0)
	r.Related = topics(r.Related, f["RelatedTopics"], 0)
	return r, nil
}

// fields are the members of a JSON object, undecoded.
type fields map[string]json.RawMessage

// str is the string member k, "" when it is absent or not a string.
func (f fields) str(k string) string {
	var s string
	if json.Unmarshal(f[k], &s) != nil {
		return ""
	}
	return s
}

// topics appends the topics of the JSON array raw to out, a group's topics
// (an object with Topics) in its place; depth bounds nesting. Items that are
// not objects, or have no text, are left out.
func topics(out []Topic, raw json.RawMessage, depth int) []Topic {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return out
	}
	for _, item := range items {
		var t fields
		if json.Unmarshal(item, &t) != nil {
			continue
		}
		if group, ok := t["Topics"]; ok && depth < 4 {
			out = topics(out, group, depth+1)
			continue
		}
		if text := t.str("Text"); text != "" {
			out = append(out, Topic{Text: text, URL: t.str("FirstURL")})
		}
	}
	return out
}

// answerText is the text of an answer: a string as is, anything else but
// null as compact JSON.
func answerText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return ""
	}
	return b.String()
}

// render is the text the model reads.
func (r Response) render(query string) string {
	if r.Empty() {
		return fmt.Sprintf("No instant answer for %q. The Instant Answer API knows topics, names and terms, not general web pages: try a shorter or more specific query.", query)
	}
	var b strings.Builder
	line := func(format string, args ...any) {
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	if r.Heading != "" {
		line("# %s", r.Heading)
	}
	if r.Answer != "" {
		line("Answer: %s", r.Answer)
	}
	if r.Redirect != "" {
		line("The query is a redirect to %s", r.Redirect)
	}
	if r.Abstract != "" {
		line("%s", r.Abstract)
		if src := source(r.AbstractSource, r.AbstractURL); src != "" {
			line("Source: %s", src)
		}
	}
	if r.Definition != "" {
		line("Definition: %s", r.Definition)
		if src := source(r.DefinitionSource, r.DefinitionURL); src != "" {
			line("Source: %s", src)
		}
	}
	list := func(title string, ts []Topic) {
		if len(ts) == 0 {
			return
		}
		line("%s:", title)
		for i, t := range ts {
			if t.URL != "" {
				line("%s. %s (%s)", strconv.Itoa(i+1), t.Text, t.URL)
			} else {
				line("%s. %s", strconv.Itoa(i+1), t.Text)
			}
		}
	}
	list("Results", r.Results)
	list("Related topics", r.Related)
	return strings.TrimRight(b.String(), "\n")
}

// source names where a text comes from: its source's name and address.
func source(name, u string) string {
	switch {
	case name != "" && u != "":
		return name + " (" + u + ")"
	case name != "":
		return name
	}
	return u
}
