// Package websearch provides a tool that searches the web through a
// backend of the application's choice and shows the model one page of
// results at a time:
//
//	searx, err := websearch.NewSearXNG(websearch.WithBaseURL("http://localhost:8888"))
//	...
//	search, err := websearch.New(searx, websearch.WithMaxResults(8))
//
// The tool (DefaultName, "web_search") takes a query, a page (1 unless
// given) and an optional time range, and answers with a numbered list:
// each result's title, URL, snippet and date when known, then a note when
// a next page may hold more. Results are deduplicated by URL and filtered
// by WithAllowedDomains and WithBlockedDomains; the result's Details hold
// the Response.
//
// A Backend is anything with Search(ctx, Query) (Page, error);
// BackendFunc adapts a function. Three come with the package:
//
//   - NewSearXNG asks a SearXNG instance (self-hosted metasearch, no key)
//     through its JSON API; WithBaseURL, the instance's address, is
//     required, and the instance must allow format=json.
//   - NewBrave asks Brave Search's web search API with a subscription key
//     from WithAPIKey or the environment variable BRAVE_SEARCH_API_KEY.
//   - NewDuckDuckGo asks DuckDuckGo's Instant Answer API, which needs no
//     key but knows topics, names and terms rather than general web pages:
//     its results are a topic's summary, a definition, official sites and
//     related topics, and an instant answer (a conversion, a fact) is a
//     note.
//
// Their options (BackendOption) are WithBaseURL, WithAPIKey, WithHeader,
// WithUserAgent, WithHTTPClient and WithProxy. A status other than 200
// fails the call with a *StatusError that names the service and the
// status, and says what the service said and how long it asked to wait;
// middleware.Retry retries it for 408, 429 and 5xx. A response that is not
// the JSON the backend expects fails the call and is never retried.
package websearch
