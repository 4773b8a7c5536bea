// Package webfetch provides a tool that fetches one web page for a model
// and returns its readable text:
//
//	fetch, err := webfetch.NewTool(webfetch.WithUserAgent("my-app/1.0"))
//
// An HTML page becomes plain text that keeps its shape: headings marked
// with '#', list items with "- ", links written as "text (URL)" with
// absolute URLs, preformatted text line for line, and no scripts, styles or
// page head but the title (see HTMLText). A page that reads as an article
// is cut to its article first: the site's header, navigation, sidebars,
// banners and footer are left out, found as the reader view of a browser
// finds them (a port of Readability). Plain text, Markdown, JSON, CSV
// and XML are returned as they are; images, PDFs and other binary types are
// refused. The model reads the page's final URL, its title and its text,
// cut at WithMaxLength characters (its max_length argument may ask for
// less); the result's Details hold the Page.
//
// The tool fetches only http and https URLs and, unless
// WithAllowPrivateAddresses says otherwise, connects to no loopback,
// private, link-local (cloud metadata), multicast or otherwise special
// address, nor to an IPv6 address that carries such an IPv4 address by a
// standard form (mapped, translated, compatible, NAT64's well-known
// prefix, 6to4, ISATAP; a NAT64 network-specific prefix cannot be told):
// the check is on the address dialled, so neither a host name that
// resolves to such an address nor a redirect to one gets through.
// WithAllowedDomains and WithBlockedDomains limit the hosts, for the first
// URL and for each of at most 5 redirects. A status outside 2xx fails the
// call with a *StatusError, which middleware.Retry retries for 408, 429 and
// 5xx; a refusal's error is ErrRefused to errors.Is.
//
// The tool uses no proxy unless WithProxy says which (pass
// http.ProxyFromEnvironment for HTTPS_PROXY and the like). The proxy's own
// address is trusted; each page's host is resolved and checked before its
// request, or a redirect's, goes to the proxy, which resolves the name
// again: a DNS answer that changes between the two is beyond the check.
//
// An HTML page's charset comes from its byte order mark, its Content-Type
// or its <meta> declaration, other text's from its Content-Type; text meant
// to be UTF-8 that is not has its invalid bytes replaced with U+FFFD.
package webfetch
