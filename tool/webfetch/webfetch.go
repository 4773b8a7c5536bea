package webfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trellis-go/trellis/internal/domains"
	"github.com/trellis-go/trellis/internal/httpstatus"
	"github.com/trellis-go/trellis/internal/textcut"
	"github.com/trellis-go/trellis/tool"
)

// DefaultName is the tool's name unless WithName says otherwise.
const DefaultName = "web_fetch"

// DefaultTimeout bounds one fetch, redirects and reading the body included,
// unless WithTimeout says otherwise.
const DefaultTimeout = 20 * time.Second

// DefaultMaxBytes is how much of a response body the tool reads unless
// WithMaxBytes says otherwise: 2 MiB.
const DefaultMaxBytes = 2 << 20

// DefaultMaxLength is how many characters of text a result holds at most
// unless WithMaxLength says otherwise.
const DefaultMaxLength = 20000

// DefaultUserAgent is the User-Agent header of the requests unless
// WithUserAgent says otherwise.
const DefaultUserAgent = "Mozilla/5.0 (compatible; trellis-webfetch/1.0; +https://github.com/trellis-go/trellis)"

// Args are the tool's arguments.
type Args struct {
	// URL is the page to fetch.
	URL string `json:"url" jsonschema:"minLength=1" jsonschema_description:"The absolute http or https address of the page, such as https://go.dev/doc/."`
	// MaxLength asks for fewer characters of text than the tool's limit.
	MaxLength int `json:"max_length,omitempty" jsonschema:"minimum=1" jsonschema_description:"The most characters of text to return, to read less than the tool's own limit; it cannot raise that limit."`
}

// Page is a fetched page. A tool result carries it in Details.
type Page struct {
	// URL is the page's address after redirects.
	URL string `json:"url"`
	// Status is the HTTP status code of the answer.
	Status int `json:"status"`
	// ContentType is the media type of the body, without parameters, such
	// as "text/html"; sniffed from the body when the server sent none.
	ContentType string `json:"content_type"`
	// Title is an HTML page's <title>, "" for other text.
	Title string `json:"title,omitempty"`
	// Text is the page's readable text, as the model read it (cut at the
	// length limit).
	Text string `json:"text"`
	// Truncated reports whether Text is less than the whole page: it was cut
	// at the length limit, or the body at the byte limit.
	Truncated bool `json:"truncated,omitempty"`
	// Length is how many characters the text had before it was cut at the
	// length limit (of the part of the body that was read); for an HTML
	// page much longer than the limit, a lower bound: its conversion stops
	// early.
	Length int `json:"length"`
}

// StatusError is the failure of a fetch a server answered with a status
// outside 2xx (after redirects). It is transient (middleware.Retry retries
// it) for 408, 429 and 5xx statuses.
type StatusError struct {
	// URL is the address that answered.
	URL string
	// Status is the HTTP status code.
	Status int
}

// Error returns the error's message.
func (e *StatusError) Error() string {
	return fmt.Sprintf("webfetch: %s answered %d %s", clipURL(e.URL), e.Status, http.StatusText(e.Status))
}

// Transient reports whether the fetch may succeed if made again.
func (e *StatusError) Transient() bool {
	return httpstatus.Transient(e.Status)
}

// fetchError is a fetch that failed on its way: its message names the URL
// once, and it wraps the transport's error for errors.Is and errors.As.
type fetchError struct {
	msg string
	err error
}

func (e *fetchError) Error() string { return e.msg }
func (e *fetchError) Unwrap() error { return e.err }

// Option configures the tool.
type Option func(*config)

type config struct {
	name         string
	timeout      time.Duration
	userAgent    string
	maxBytes     int64
	maxLength    int
	allowPrivate bool
	allowed      []string
	blocked      []string
	problems     []string
	client       *http.Client
	proxy        func(*http.Request) (*url.URL, error)

	// allowAddr lets tests reach chosen addresses the guard refuses.
	allowAddr func(netip.AddrPort) bool
}

// WithName names the tool (DefaultName unless set).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithTimeout bounds each fetch, redirects and reading the body included
// (DefaultTimeout unless set); d must be positive. The call's context
// bounds it too.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.problems = append(c.problems, "WithTimeout: the timeout must be positive")
		}
		c.timeout = d
	}
}

// WithUserAgent sets the User-Agent header of the requests
// (DefaultUserAgent unless set).
func WithUserAgent(ua string) Option {
	return func(c *config) {
		if strings.TrimSpace(ua) == "" || strings.ContainsAny(ua, "\r\n\x00") {
			c.problems = append(c.problems, fmt.Sprintf("WithUserAgent: %q is not a usable User-Agent", ua))
		}
		c.userAgent = ua
	}
}

// WithMaxBytes caps how many bytes of a response body the tool reads
// (DefaultMaxBytes unless set); n must be at least 1. A longer body is cut,
// and the result says so.
func WithMaxBytes(n int64) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxBytes: n must be at least 1")
		}
		c.maxBytes = n
	}
}

// WithMaxLength caps how many characters of text a result holds
// (DefaultMaxLength unless set); n must be at least 1. The model's
// max_length may ask for less, never for more. Longer text is cut, and the
// result says how long it was.
func WithMaxLength(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxLength: n must be at least 1")
		}
		c.maxLength = n
	}
}

// WithAllowPrivateAddresses lets the tool connect to any address: loopback,
// private networks, link-local addresses (cloud metadata services among
// them) and the rest the tool refuses by default. Use it for a tool that is
// meant to read an intranet or a local test server, and for no model that
// reads untrusted text.
func WithAllowPrivateAddresses() Option { return func(c *config) { c.allowPrivate = true } }

// WithAllowedDomains limits the tool to hosts that are one of domains or a
// subdomain of one ("go.dev" allows go.dev and pkg.go.dev); "*.go.dev" and
// ".go.dev" mean go.dev too. The first URL and every redirect are checked.
// Calls add up. IP addresses are refused: an address has many spellings,
// which a list of names cannot match.
func WithAllowedDomains(domains ...string) Option {
	return func(c *config) { c.allowed = c.addDomains(c.allowed, "WithAllowedDomains", domains) }
}

// WithBlockedDomains keeps the tool from hosts that are one of domains or
// a subdomain of one, whatever WithAllowedDomains allows. The first URL and
// every redirect are checked. Calls add up.
func WithBlockedDomains(domains ...string) Option {
	return func(c *config) { c.blocked = c.addDomains(c.blocked, "WithBlockedDomains", domains) }
}

func (c *config) addDomains(list []string, option string, names []string) []string {
	if len(names) == 0 {
		c.problems = append(c.problems, option+": no domains")
	}
	for _, d := range names {
		n, ok := domains.Normalize(d)
		if looksLikeAddress(strings.Trim(strings.TrimSpace(d), "[]")) || looksLikeAddress(n) {
			// An address has many spellings (::ffff:127.0.0.1, 127.1, a
			// host name that resolves to it): a list of names cannot hold it.
			c.problems = append(c.problems, fmt.Sprintf("%s: %q is an IP address; the lists hold domain names", option, d))
			continue
		}
		if !ok {
			c.problems = append(c.problems, fmt.Sprintf("%s: %q is not a domain name", option, d))
			continue
		}
		list = append(list, n)
	}
	return list
}

// NewTool returns a tool that fetches one web page and returns its readable
// text: an HTML page's title and text (see HTMLText), or plain text,
// Markdown, JSON, CSV or XML (any text/* type, JSON and XML types) as it
// is, cut at WithMaxLength characters. The
// model reads the text after the page's final URL and title; the result's
// Details hold the Page.
//
// Only absolute http and https URLs without user information are fetched,
// with at most 5 redirects. The tool connects to no loopback, private,
// link-local (cloud metadata), multicast or otherwise special address
// unless WithAllowPrivateAddresses says so: the address checked is the one
// dialled, after name resolution, for the first request and for every
// redirect. It sends no cookies, and connects to the pages directly unless
// WithProxy names a proxy (it does not read one from the environment by
// itself); through a proxy, each page's host is checked before its request
// is sent.
//
// The tool is read-only, search-or-read, open-world and concurrency-safe
// (tool.Metadata). A failed fetch is an error result: a refusal (errors.Is
// ErrRefused), a *StatusError for a status outside 2xx (transient for 408,
// 429 and 5xx), a content type the tool cannot read, or the transport's
// error; cancellation and deadlines are the call's context's, and
// WithTimeout bounds each fetch.
func NewTool(opts ...Option) (tool.Tool, error) {
	c := &config{
		name:      DefaultName,
		timeout:   DefaultTimeout,
		userAgent: DefaultUserAgent,
		maxBytes:  DefaultMaxBytes,
		maxLength: DefaultMaxLength,
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	if len(c.problems) > 0 {
		return nil, fmt.Errorf("%w: webfetch tool %q: %s", tool.ErrInvalidTool, c.name, strings.Join(c.problems, "; "))
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Control: c.control}
	// Without a proxy the address dialled is the page's, which the guard
	// checks; with one, the pages' hosts are checked before their requests
	// go to the proxy, whose own address is trusted.
	var rt http.RoundTripper = newTransport(dialer.DialContext, nil)
	if c.proxy != nil {
		proxyDialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		rt = &router{c: c, direct: rt.(*http.Transport), proxied: newTransport(proxyDialer.DialContext, chosenProxy)}
	}
	c.client = &http.Client{
		Transport:     rt,
		CheckRedirect: c.checkRedirect,
		Timeout:       c.timeout,
	}
	return tool.NewFunc(c.name, c.description(),
		func(ctx context.Context, in Args) (tool.Result, error) {
			page, notes, err := c.fetch(ctx, in)
			if err != nil {
				return tool.Result{}, err
			}
			r := tool.Text(page.render(notes))
			r.Details = page
			return r, nil
		},
		tool.WithMetadata(tool.Metadata{ReadOnly: true, SearchOrRead: true, OpenWorld: true, ConcurrencySafe: true}),
		tool.WithTitle("Fetch web page"))
}

// newTransport is a transport of the tool's settings that dials with dial
// and uses the proxies proxy chooses (none when it is nil).
func newTransport(dial func(ctx context.Context, network, address string) (net.Conn, error), proxy func(*http.Request) (*url.URL, error)) *http.Transport {
	t := &http.Transport{
		Proxy:                  proxy,
		DialContext:            dial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 64 << 10, // a redirect's URL is a header
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  time.Second,
	}
	if proxy != nil {
		t.OnProxyConnectResponse = httpstatus.TunnelRefused
	}
	return t
}

// description is what the model reads about the tool.
func (c *config) description() string {
	d := fmt.Sprintf("Fetches one web page by its http or https URL and returns its readable text: "+
		"an HTML page's title and text, with headings marked by '#', list items by '- ' and links as \"text (URL)\"; "+
		"plain text, Markdown, JSON, CSV and XML as they are. It does not search, run scripts or read images and PDFs. "+
		"Text longer than %d characters is cut; max_length asks for less.", c.maxLength)
	if len(c.allowed) > 0 {
		d += " It fetches only pages of " + strings.Join(c.allowed, ", ") + " and their subdomains."
	}
	return d
}

// fetch gets the page in.URL and reads it, with notes on what was cut.
func (c *config) fetch(ctx context.Context, in Args) (Page, []string, error) {
	raw := strings.TrimSpace(in.URL)
	if raw == "" {
		return Page{}, nil, &refusedError{url: `""`, why: "the URL is empty; give the whole address, such as https://example.com/page"}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Page{}, nil, &refusedError{url: raw, quoted: true, why: "it is not a valid URL"}
	}
	if re := c.checkURL(u, raw); re != nil {
		return Page{}, nil, re
	}
	u.Fragment, u.RawFragment = "", ""
	asked := u.String()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, asked, nil)
	if err != nil {
		return Page{}, nil, fmt.Errorf("webfetch: %s: %w", clipURL(asked), err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,text/markdown;q=0.9,application/json;q=0.8,text/*;q=0.7,*/*;q=0.1")
	res, err := c.client.Do(req)
	if err != nil {
		return Page{}, nil, c.failure(ctx, asked, err)
	}
	defer res.Body.Close()
	final := res.Request.URL.String()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		_, _ = io.CopyN(io.Discard, res.Body, 4<<10) // lets a short answer's connection be reused
		return Page{}, nil, &StatusError{URL: final, Status: res.StatusCode}
	}

	if ce := strings.TrimSpace(res.Header.Get("Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		// The transport decodes gzip itself and then drops the header.
		return Page{}, nil, fmt.Errorf("webfetch: %s is encoded with %q, which the tool cannot decode", clipURL(final), clipURL(ce))
	}
	header := res.Header.Get("Content-Type")
	mediaType, _, mtErr := mime.ParseMediaType(header)
	if header != "" && mtErr == nil && !readable(mediaType) {
		return Page{}, nil, unreadable(final, mediaType)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, c.maxBytes+1))
	if err != nil {
		return Page{}, nil, c.failure(ctx, final, fmt.Errorf("reading the body: %w", err))
	}
	bodyCut := int64(len(body)) > c.maxBytes
	if bodyCut {
		body = body[:c.maxBytes]
	}
	if header == "" || mtErr != nil || mediaType == "" {
		// No usable Content-Type: sniff one, but trust no charset it guesses.
		header = ""
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(body))
		if !readable(mediaType) {
			return Page{}, nil, unreadable(final, mediaType)
		}
	}

	page := Page{URL: final, Status: res.StatusCode, ContentType: mediaType}
	isHTML := mediaType == "text/html" || mediaType == "application/xhtml+xml"
	text := decode(body, header, isHTML, bodyCut)
	limit := c.maxLength
	if in.MaxLength > 0 && in.MaxLength < limit {
		limit = in.MaxLength
	}
	complete := true
	if isHTML {
		// The conversion stops well past what can be shown: links to long
		// URLs can make the text much longer than the page.
		page.Title, text, complete = articleText(text, res.Request.URL, 4*limit+4096)
	} else {
		text = strings.TrimSpace(text)
	}
	page.Length = utf8.RuneCountInString(text)

	var notes []string
	switch {
	case page.Length > limit && !complete:
		text = cutRunes(text, limit)
		page.Truncated = true
		notes = append(notes, fmt.Sprintf("[The text is cut at %d of its more than %d characters.]", limit, page.Length))
	case page.Length > limit:
		text = cutRunes(text, limit)
		page.Truncated = true
		notes = append(notes, fmt.Sprintf("[The text is cut at %d of its %d characters.]", limit, page.Length))
	case !complete:
		// The conversion stopped on a page of mostly white space or markup.
		page.Truncated = true
		notes = append(notes, "[The page's text is cut: the rest of the page was not read.]")
	}
	if bodyCut {
		page.Truncated = true
		notes = append(notes, fmt.Sprintf("[The page is larger than %d bytes; only its first %d bytes were read.]", c.maxBytes, c.maxBytes))
	}
	page.Text = text
	return page, notes, nil
}

// failure is the error of a fetch of u that failed on its way.
func (c *config) failure(ctx context.Context, u string, err error) error {
	var re *refusedError
	if errors.As(err, &re) {
		// A refusal is returned alone: the network error around it would
		// read as transient.
		if re.url == "" {
			re.url = u
			var ue *url.Error
			if errors.As(err, &ue) {
				re.url = ue.URL
			}
			if re.url != u {
				re.via = u
			}
		}
		return re
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.URL != "" {
			u = ue.URL
		}
		cause = ue.Err
	}
	var pe *proxyError
	if errors.As(cause, &pe) {
		u += " through the proxy " + pe.proxy
		cause = pe.err
	}
	// The cause may name the host again (a failed lookup does): both are
	// cut.
	u = clipURL(u)
	why := textcut.Clip(fmt.Sprint(cause), 2*maxShown, "…")
	msg := fmt.Sprintf("webfetch: fetching %s: %s", u, why)
	if ctx.Err() == nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			msg = fmt.Sprintf("webfetch: fetching %s: no answer within %s (%s)", u, c.timeout, why)
		}
	}
	return &fetchError{msg: msg, err: err}
}

// readable reports whether the tool reads bodies of the media type mt.
func readable(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"):
		return true
	case mt == "application/xhtml+xml", mt == "application/json", mt == "application/xml",
		mt == "application/x-ndjson", mt == "application/javascript", mt == "application/ecmascript":
		return true
	case strings.HasPrefix(mt, "application/") && (strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")):
		return true
	}
	return false
}

// unreadable is the error of a page of a media type the tool cannot read.
func unreadable(u, mt string) error {
	if mt == "" {
		mt = "of an unknown type"
	}
	return fmt.Errorf("webfetch: %s is %s, which the tool cannot read: it reads HTML pages and text (plain text, Markdown, JSON, CSV, XML)", clipURL(u), clipURL(mt))
}

// charsetParam is the charset parameter of a Content-Type, "" without one.
func charsetParam(contentType string) string {
	if contentType == "" {
		return ""
	}
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return params["charset"]
}

// cutRunes is s cut after n characters.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// render is the text the model reads.
func (p Page) render(notes []string) string {
	var b strings.Builder
	b.WriteString("URL: " + p.URL + "\n")
	if p.Title != "" {
		b.WriteString("Title: " + p.Title + "\n")
	}
	b.WriteString("\n")
	if p.Text == "" {
		b.WriteString("(The page has no readable text.)")
	} else {
		b.WriteString(p.Text)
	}
	for _, n := range notes {
		b.WriteString("\n\n" + n)
	}
	return b.String()
}

// looksLikeAddress reports whether a host is an IP address, or would be
// read as an IPv4 one: a name whose last label is a number (127.1, 0x7f.1).
func looksLikeAddress(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}
