package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"strings"
)

// DefaultDuckDuckGoBaseURL is the address of DuckDuckGo's Instant Answer
// API.
const DefaultDuckDuckGoBaseURL = "https://api.duckduckgo.com"

// duckduckgoName names DuckDuckGo in errors.
const duckduckgoName = "DuckDuckGo"

// duckduckgoEmpty is the note of a query the Instant Answer API has no
// answer for.
const duckduckgoEmpty = "DuckDuckGo's Instant Answer API knows topics, names and terms, not general web pages: try a shorter or more specific query."

// DuckDuckGo is a Backend that asks DuckDuckGo's Instant Answer API
// (GET /?format=json), which needs no key. Build it with NewDuckDuckGo.
//
// The API answers with instant answers (conversions, calculations, facts),
// a topic's summary with its source, a dictionary definition, the topic's
// official sites and related topics; it does not list general web pages,
// so a query it has no answer for finds nothing. A page's results are the
// summary and the definition (each with its source's address), the
// official sites and the related topics, in that order; an instant answer
// and a !bang query's redirect are the page's notes.
type DuckDuckGo struct {
	h *httpBackend
}

// NewDuckDuckGo returns a backend that asks DuckDuckGo's Instant Answer
// API. WithBaseURL sets another address than DefaultDuckDuckGoBaseURL (a
// proxy, a test server); its query parameters are kept. WithAPIKey does
// not apply.
//
// The API has one page of answers: a later page is empty, asked for
// nothing. It takes no language, region, safe-search level or time range,
// and Query.Count does not change what it answers: the tool shows the
// first WithMaxResults results.
func NewDuckDuckGo(opts ...BackendOption) (*DuckDuckGo, error) {
	h, _, err := newHTTPBackend(duckduckgoName, DefaultDuckDuckGoBaseURL, opts, func(c *backendConfig) {
		if c.keySet {
			c.problems = append(c.problems, "WithAPIKey: DuckDuckGo's Instant Answer API takes no key")
		}
	})
	if err != nil {
		return nil, err
	}
	return &DuckDuckGo{h: h}, nil
}

// Search asks the API about q.
func (d *DuckDuckGo) Search(ctx context.Context, q Query) (Page, error) {
	if q.Page > 1 {
		return Page{Notes: []string{"DuckDuckGo's Instant Answer API gives one page of answers."}}, nil
	}
	body, err := d.h.get(ctx, "", url.Values{
		"q":             {q.Text},
		"format":        {"json"},
		"no_html":       {"1"},
		"no_redirect":   {"1"},
		"skip_disambig": {"1"},
	})
	if err != nil {
		return Page{}, err
	}
	return parseDuckDuckGo(body)
}

// parseDuckDuckGo reads a response of the Instant Answer API (format=json)
// as a page. Groups of related topics are flattened in order; an answer
// that is not a string (some instant answers are objects) is kept as
// compact JSON. A field of an unexpected type is read as absent, and a
// topic with one is left out, so that one odd field does not lose the
// rest; a body that is not a JSON object is an error that says so.
func parseDuckDuckGo(body []byte) (Page, error) {
	var f fields
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return Page{}, notJSON(duckduckgoName, "an Instant Answer JSON object", body, err)
	}
	var p Page
	add := func(title, u, snippet string) {
		u = strings.TrimSpace(u)
		if _, ok := webURL(u); !ok {
			return
		}
		p.Results = append(p.Results, Result{Title: oneLine(title), URL: u, Snippet: oneLine(snippet)})
	}
	heading := f.str("Heading")
	if abstract := f.str("AbstractText"); abstract != "" {
		add(titled(heading, f.str("AbstractSource")), f.str("AbstractURL"), abstract)
	}
	if def := f.str("Definition"); def != "" {
		add(titled("Definition of "+orQuoted(heading), f.str("DefinitionSource")), f.str("DefinitionURL"), def)
	}
	for _, t := range topics(topics(nil, f["Results"], 0), f["RelatedTopics"], 0) {
		// A related topic reads "Name - what it is".
		title, snippet, _ := strings.Cut(t.text, " - ")
		add(title, t.url, snippet)
	}
	if a := oneLine(answerText(f["Answer"])); a != "" {
		if kind := oneLine(f.str("AnswerType")); kind != "" {
			a += " (" + kind + ")"
		}
		p.Notes = append(p.Notes, "Instant answer: "+a)
	}
	if r := strings.TrimSpace(f.str("Redirect")); r != "" {
		if _, ok := webURL(r); ok {
			p.Notes = append(p.Notes, "The query is a redirect to "+r)
		}
	}
	if len(p.Results) == 0 && len(p.Notes) == 0 {
		p.Notes = append(p.Notes, duckduckgoEmpty)
	}
	return p, nil
}

// titled is a result's title: the topic's heading and where the text
// comes from.
func titled(heading, source string) string {
	switch {
	case heading != "" && source != "":
		return heading + " (" + source + ")"
	case heading != "":
		return heading
	}
	return source
}

// orQuoted is the heading, or "the query" when there is none.
func orQuoted(heading string) string {
	if heading == "" {
		return "the query"
	}
	return heading
}

// topic is a result or a related topic of the Instant Answer API.
type topic struct {
	text, url string
}

// topics appends the topics of the JSON array raw to out, a group's topics
// (an object with Topics) in its place; depth bounds nesting. Items that are
// not objects, or have no text, are left out.
func topics(out []topic, raw json.RawMessage, depth int) []topic {
	for _, item := range array(raw) {
		t := object(item)
		if t == nil {
			continue
		}
		if group, ok := t["Topics"]; ok && depth < 4 {
			out = topics(out, group, depth+1)
			continue
		}
		if text := t.str("Text"); text != "" {
			out = append(out, topic{text: text, url: t.str("FirstURL")})
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
