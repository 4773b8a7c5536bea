package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/textcut"
)

// DefaultBraveBaseURL is Brave Search API's address.
const DefaultBraveBaseURL = "https://api.search.brave.com"

// BraveAPIKeyEnv is the environment variable NewBrave reads the key from
// when WithAPIKey gives none.
const BraveAPIKeyEnv = "BRAVE_SEARCH_API_KEY"

// Brave Search API's limits.
const (
	braveMaxCount = 20  // results a page
	braveMaxPages = 10  // offsets 0 to 9
	braveMaxQuery = 400 // characters of a query
)

// braveName names Brave Search in errors.
const braveName = "Brave Search"

// Brave is a Backend that asks Brave Search's web search API
// (GET /res/v1/web/search), which needs a subscription key. Build it with
// NewBrave.
type Brave struct {
	h *httpBackend
}

// NewBrave returns a backend that asks Brave Search's API with the key of
// WithAPIKey, or else of the environment variable BRAVE_SEARCH_API_KEY;
// without either it fails. WithBaseURL sets another address than
// DefaultBraveBaseURL (a proxy, a test server).
//
// Query.Count is the page size (at most 20, the API's limit) and the API
// gives 10 pages at most: a later page is empty, asked for nothing. A
// query longer than 400 characters fails without a request. Language is
// its search_lang ("en", "pt-br"), Region its country, SafeSearch its
// safesearch and TimeRange its freshness (pd, pw, pm, py).
func NewBrave(opts ...BackendOption) (*Brave, error) {
	h, c, err := newHTTPBackend(braveName, DefaultBraveBaseURL, opts, func(c *backendConfig) {
		if !c.keySet {
			c.apiKey = strings.TrimSpace(os.Getenv(BraveAPIKeyEnv))
			switch {
			case c.apiKey == "":
				c.problems = append(c.problems, "no API key: give WithAPIKey or set "+BraveAPIKeyEnv)
			case strings.ContainsAny(c.apiKey, "\r\n\x00"):
				c.problems = append(c.problems, BraveAPIKeyEnv+" holds a line break")
			}
		}
	})
	if err != nil {
		return nil, err
	}
	h.header.Set("X-Subscription-Token", c.apiKey)
	h.errorBody = braveErrorBody
	h.hint = braveHint
	return &Brave{h: h}, nil
}

// Search asks the API for a page of results for q.
func (b *Brave) Search(ctx context.Context, q Query) (Page, error) {
	page := max(q.Page, 1)
	if page > braveMaxPages {
		return Page{Notes: []string{fmt.Sprintf("Brave Search gives %d pages of results at most.", braveMaxPages)}}, nil
	}
	if n := utf8.RuneCountInString(q.Text); n > braveMaxQuery {
		return Page{}, fmt.Errorf("%s: the query is %d characters long, and the API takes %d at most: shorten it", braveName, n, braveMaxQuery)
	}
	params := url.Values{"q": {q.Text}}
	if q.Count > 0 {
		params.Set("count", strconv.Itoa(min(q.Count, braveMaxCount)))
	}
	if page > 1 {
		params.Set("offset", strconv.Itoa(page-1))
	}
	if q.Language != "" {
		params.Set("search_lang", strings.ToLower(q.Language))
	}
	if q.Region != "" {
		params.Set("country", strings.ToUpper(q.Region))
	}
	switch q.SafeSearch {
	case SafeSearchOff:
		params.Set("safesearch", "off")
	case SafeSearchModerate:
		params.Set("safesearch", "moderate")
	case SafeSearchStrict:
		params.Set("safesearch", "strict")
	}
	switch q.TimeRange {
	case PastDay:
		params.Set("freshness", "pd")
	case PastWeek:
		params.Set("freshness", "pw")
	case PastMonth:
		params.Set("freshness", "pm")
	case PastYear:
		params.Set("freshness", "py")
	}
	body, err := b.h.get(ctx, "res/v1/web/search", params)
	if err != nil {
		return Page{}, err
	}
	p, err := parseBrave(body)
	if err != nil {
		return Page{}, err
	}
	if page == braveMaxPages {
		p.HasMore = false
	}
	return p, nil
}

// braveHint is what may fix a Brave Search failure with status.
func braveHint(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return "check the subscription key given by WithAPIKey or " + BraveAPIKeyEnv
	case http.StatusTooManyRequests:
		return "the subscription's rate limit or monthly quota is reached"
	case http.StatusUnprocessableEntity:
		return "the API refused a parameter, such as the language or the country"
	}
	return ""
}

// braveErrorBody is what a failed request's body says: the API's error
// code and detail when it is the API's JSON error, else its start.
func braveErrorBody(body []byte) string {
	if e := object(object(body)["error"]); e != nil {
		code, detail := oneLine(e.str("code")), oneLine(e.str("detail"))
		msg := detail
		if code != "" && detail != "" {
			msg = code + ": " + detail
		} else if code != "" {
			msg = code
		}
		if msg != "" {
			return textcut.Clip(msg, 200, "...")
		}
	}
	return plainBody(body)
}

// parseBrave reads a web search answer of Brave Search's API. A field of
// an unexpected type is read as absent and a result with one without its
// value, so that one odd field does not lose the rest; a result without
// an http or https URL is left out. Titles and descriptions lose the HTML
// the API marks matches with. HasMore is the API's
// query.more_results_available.
func parseBrave(body []byte) (Page, error) {
	var f fields
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return Page{}, notJSON(braveName, "a web search JSON object", body, err)
	}
	var p Page
	for _, item := range array(object(f["web"])["results"]) {
		r := object(item)
		if r == nil {
			continue
		}
		u := strings.TrimSpace(r.str("url"))
		if _, ok := webURL(u); !ok {
			continue
		}
		published := publishedDate(r.str("page_age"))
		if published == "" {
			published = publishedDate(r.str("age"))
		}
		p.Results = append(p.Results, Result{
			Title:     htmlText(r.str("title")),
			URL:       u,
			Snippet:   htmlText(r.str("description")),
			Published: published,
		})
	}
	p.HasMore = object(f["query"]).boolean("more_results_available")
	return p, nil
}
