// Package duckduckgo provides a tool that looks things up with DuckDuckGo's
// Instant Answer API, which needs no key:
//
//	search, err := duckduckgo.NewTool(duckduckgo.WithUserAgent("my-app/1.0"))
//
// The API answers with instant answers (conversions, calculations, facts),
// topic summaries with their source, dictionary definitions and related
// topics; it does not list general web pages, so a query it has no answer
// for finds nothing, and the tool tells the model so. The model reads the
// answer as text; the result's Details hold the parsed Response.
//
// WithBaseURL points the tool at another address (a proxy, a test server);
// WithProxy chooses the proxy (by default the environment's, as
// http.DefaultTransport's); WithHTTPClient, WithName and WithMaxResults set
// the rest. A status other
// than 200 fails the call with a *StatusError, which middleware.Retry
// retries for 408, 429 and 5xx.
package duckduckgo
