package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// searxngName names SearXNG in errors.
const searxngName = "SearXNG"

// SearXNG is a Backend that asks a SearXNG instance, the self-hosted
// metasearch engine, through its JSON API (GET /search?format=json). The
// instance must allow the json format: its settings.yml lists it under
// search.formats. Build it with NewSearXNG.
type SearXNG struct {
	h *httpBackend
}

// NewSearXNG returns a backend that asks the SearXNG instance at the
// address WithBaseURL gives, which is required. WithAPIKey does not apply:
// WithHeader sends what an instance behind authentication needs.
//
// The instance chooses how many results a page holds; Query.Count does not
// change it, and the tool shows the first WithMaxResults of them. Language
// and region make its language parameter ("en", "en-US"); SafeSearch its
// safesearch (0, 1, 2) and TimeRange its time_range.
func NewSearXNG(opts ...BackendOption) (*SearXNG, error) {
	h, _, err := newHTTPBackend(searxngName, "", opts, func(c *backendConfig) {
		if c.keySet {
			c.problems = append(c.problems, "WithAPIKey: SearXNG takes no key; use WithHeader for an instance behind authentication")
		}
	})
	if err != nil {
		return nil, err
	}
	h.hint = searxngHint
	return &SearXNG{h: h}, nil
}

// Search asks the instance for a page of results for q.
func (s *SearXNG) Search(ctx context.Context, q Query) (Page, error) {
	page := max(q.Page, 1)
	params := url.Values{
		"q":      {q.Text},
		"format": {"json"},
		"pageno": {strconv.Itoa(page)},
	}
	if lang := searxngLanguage(q.Language, q.Region); lang != "" {
		params.Set("language", lang)
	}
	switch q.SafeSearch {
	case SafeSearchOff:
		params.Set("safesearch", "0")
	case SafeSearchModerate:
		params.Set("safesearch", "1")
	case SafeSearchStrict:
		params.Set("safesearch", "2")
	}
	switch q.TimeRange {
	case PastDay, PastWeek, PastMonth, PastYear:
		params.Set("time_range", string(q.TimeRange))
	}
	body, err := s.h.get(ctx, "search", params)
	if err != nil {
		return Page{}, err
	}
	return parseSearXNG(body, page)
}

// searxngLanguage is SearXNG's language parameter for a language and a
// region: "en-US", or "en" without a region; "" without a language.
func searxngLanguage(lang, region string) string {
	switch {
	case lang == "":
		return ""
	case region == "" || strings.Contains(lang, "-"):
		return lang
	}
	return strings.ToLower(lang) + "-" + strings.ToUpper(region)
}

// searxngHint is what may fix a SearXNG failure with status.
func searxngHint(status int) string {
	switch status {
	case http.StatusForbidden:
		return "an instance refuses format=json unless its settings.yml lists json under search.formats"
	case http.StatusTooManyRequests:
		return "the instance's limiter may refuse API clients; a self-hosted instance can turn server.limiter off or pass this client's address"
	}
	return ""
}

// parseSearXNG reads the JSON answer of a SearXNG instance for page. A
// field of an unexpected type is read as absent and a result with one
// without its value, so that one odd field does not lose the rest; a
// result without an http or https URL is left out. The instance does not
// say whether there are more pages: HasMore is true when this one had
// results, unless the instance's estimate of their number says they are
// all shown. Engines that did not answer make a note.
func parseSearXNG(body []byte, page int) (Page, error) {
	var f fields
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return Page{}, notJSON(searxngName, "a SearXNG JSON object", body, err)
	}
	var p Page
	for _, item := range array(f["results"]) {
		r := object(item)
		if r == nil {
			continue
		}
		u := strings.TrimSpace(r.str("url"))
		if _, ok := webURL(u); !ok {
			continue
		}
		p.Results = append(p.Results, Result{
			Title:     htmlText(r.str("title")),
			URL:       u,
			Snippet:   htmlText(r.str("content")),
			Published: publishedDate(r.str("publishedDate")),
		})
	}
	if n := len(p.Results); n > 0 {
		total := f.num("number_of_results")
		p.HasMore = total <= 0 || total > float64(page)*float64(n)
	}
	var down []string
	for _, item := range array(f["unresponsive_engines"]) {
		// Each is [engine, reason].
		var pair []json.RawMessage
		if json.Unmarshal(item, &pair) != nil || len(pair) == 0 {
			continue
		}
		var name, why string
		if json.Unmarshal(pair[0], &name) != nil || strings.TrimSpace(name) == "" {
			continue
		}
		if len(pair) > 1 && json.Unmarshal(pair[1], &why) == nil && strings.TrimSpace(why) != "" {
			name += " (" + why + ")"
		}
		down = append(down, name)
		if len(down) == 8 {
			break
		}
	}
	if len(down) > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("these search engines did not answer the instance, so results may be missing: %s.", strings.Join(down, ", ")))
	}
	return p, nil
}
