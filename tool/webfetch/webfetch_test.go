package webfetch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/webfetch"
)

// site is a test server on 127.0.0.1 that answers each path with its
// handler, and records the requests it got.
type site struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newSite(t *testing.T, routes map[string]http.HandlerFunc) *site {
	t.Helper()
	s := &site{}
	mux := http.NewServeMux()
	for path, h := range routes {
		mux.HandleFunc(path, h)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *site) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs
}

// serve answers with the content type (none when it is "") and body.
func serve(contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType == "" {
			w.Header()["Content-Type"] = nil // no sniffing by the server
		} else {
			w.Header().Set("Content-Type", contentType)
		}
		_, _ = fmt.Fprint(w, body)
	}
}

func redirect(to string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, to, http.StatusFound) }
}

// failed starts the text of the tool's error results.
const failed = `tool "web_fetch" failed: `

func newTool(t *testing.T, opts ...webfetch.Option) tool.Tool {
	t.Helper()
	ft, err := webfetch.NewTool(opts...)
	require.NoError(t, err)
	return ft
}

func call(ctx context.Context, ft tool.Tool, args string) tool.Result {
	return tool.Invoke(ctx, ft, model.ToolCall{ID: "f1", Name: tool.Name(ft), Arguments: json.RawMessage(args)})
}

func fetch(t *testing.T, ft tool.Tool, u string) tool.Result {
	t.Helper()
	args, err := json.Marshal(map[string]string{"url": u})
	require.NoError(t, err)
	return call(context.Background(), ft, string(args))
}

func page(t *testing.T, r tool.Result) webfetch.Page {
	t.Helper()
	require.False(t, r.IsError, r.Text())
	p, ok := r.Details.(webfetch.Page)
	require.True(t, ok, "Details hold the page, got %T", r.Details)
	return p
}

// articleText is testdata/article.html as the model reads it, with BASE
// for the test server's address: its article, without the site's header,
// navigation and footer, and without the heading that repeats the title.
const articleText = `By Ada (BASE/authors/ada) · 3 min read

Water that is too hot scalds green tea; water that is too cool leaves coffee sour. Here’s what we’ve learned — mostly the hard way.

## Temperatures

1. Green tea: 70–80 °C
2. Black tea: 95 °C
   - Assam
   - Darjeeling, first flush
3. Coffee: 90–96 °C

### A timer in Go

func steep(d time.Duration) {
	time.Sleep(d) // wait <d>
	fmt.Println("done")
}

> Tea is liquid wisdom.

Drink | Grams
Tea | 3
Coffee | 15

Read the water guide (BASE/guides/water.html?units=metric) or write to kettle@example.org. See also https://example.org/faq
and nothing.`

func TestFetchReadsAnHTMLPage(t *testing.T) {
	article, err := os.ReadFile("testdata/article.html")
	require.NoError(t, err)
	s := newSite(t, map[string]http.HandlerFunc{
		"/posts/brewing": serve("text/html; charset=utf-8", string(article)),
	})
	ft := newTool(t, webfetch.WithAllowPrivateAddresses(), webfetch.WithUserAgent("trellis-test/1.0"))
	assert.Equal(t, webfetch.DefaultName, tool.Name(ft))
	assert.Equal(t, "Fetch web page", tool.TitleOf(ft))
	meta := tool.MetadataOf(ft)
	assert.True(t, meta.ReadOnly && meta.OpenWorld && meta.ConcurrencySafe && meta.SearchOrRead)

	r := fetch(t, ft, s.URL+"/posts/brewing#temperatures")
	p := page(t, r)
	want := strings.ReplaceAll(articleText, "BASE", s.URL)
	assert.Equal(t, "URL: "+s.URL+"/posts/brewing\nTitle: Brewing Tea & Coffee — The Kettle Blog\n\n"+want, r.Text())
	assert.Equal(t, webfetch.Page{
		URL: s.URL + "/posts/brewing", Status: http.StatusOK, ContentType: "text/html",
		Title: "Brewing Tea & Coffee — The Kettle Blog", Text: want, Length: len([]rune(want)),
	}, p)

	reqs := s.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "trellis-test/1.0", reqs[0].Header.Get("User-Agent"))
	assert.Contains(t, reqs[0].Header.Get("Accept"), "text/html")
	assert.Empty(t, reqs[0].URL.Fragment)
}

func TestFetchReadsText(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        string
		wantType    string
		wantText    string
	}{
		{"plain text", "text/plain; charset=utf-8", "  Hello,\n\n  world.  \n", "text/plain", "Hello,\n\n  world."},
		{"markdown", "text/markdown", "# Notes\n\n- one\n- two\n", "text/markdown", "# Notes\n\n- one\n- two"},
		{"JSON as is", "application/json", `{"b": [1, 2],  "a": "x<y"}`, "application/json", `{"b": [1, 2],  "a": "x<y"}`},
		{"JSON-LD", "application/ld+json", `{"@type":"Thing"}`, "application/ld+json", `{"@type":"Thing"}`},
		{"CSV", "text/csv", "name,grams\ntea,3\n", "text/csv", "name,grams\ntea,3"},
		{"XML", "application/xml", "<feed><title>T</title></feed>", "application/xml", "<feed><title>T</title></feed>"},
		{"text XML", "text/xml; charset=utf-8", "<a>b</a>", "text/xml", "<a>b</a>"},
		{"XHTML read as HTML", "application/xhtml+xml", "<html><head><title>X</title></head><body><p>x</p></body></html>", "application/xhtml+xml", "x"},
		{"no Content-Type, sniffed", "", "just words", "text/plain", "just words"},
		{"no Content-Type, sniffed HTML", "", "<!DOCTYPE html><p>para</p>", "text/html", "para"},
		{"Latin-1 text", "text/plain; charset=iso-8859-1", "caf\xe9 cr\xe8me", "text/plain", "café crème"},
		{"Windows-1252 HTML from its meta", "text/html", `<meta charset="windows-1252"><p>na` + "\xefve \x93quotes\x94</p>", "text/html", "naïve “quotes”"},
		{"invalid UTF-8 replaced", "text/plain; charset=utf-8", "ok \xff\xfe ok", "text/plain", "ok \uFFFD ok"},
		{"UTF-8 BOM dropped", "text/plain", "\xef\xbb\xbfbom", "text/plain", "bom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSite(t, map[string]http.HandlerFunc{"/doc": serve(tt.contentType, tt.body)})
			r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses()), s.URL+"/doc")
			p := page(t, r)
			assert.Equal(t, tt.wantType, p.ContentType)
			assert.Equal(t, tt.wantText, p.Text)
			assert.False(t, p.Truncated)
			if p.Title == "" {
				assert.Equal(t, "URL: "+s.URL+"/doc\n\n"+tt.wantText, r.Text(), "no title line without a title")
			}
		})
	}

	s := newSite(t, map[string]http.HandlerFunc{"/empty": serve("text/html", "<html><head><title>Blank</title></head><body><script>x()</script></body></html>")})
	r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses()), s.URL+"/empty")
	assert.Equal(t, "URL: "+s.URL+"/empty\nTitle: Blank\n\n(The page has no readable text.)", r.Text())
}

func TestFetchCutsLongText(t *testing.T) {
	body := strings.Repeat("é", 10) + strings.Repeat("x", 16) // 26 characters
	s := newSite(t, map[string]http.HandlerFunc{"/long": serve("text/plain; charset=utf-8", body)})
	u := s.URL + "/long"
	tests := []struct {
		name     string
		opts     []webfetch.Option
		args     string
		wantText string
		wantNote string
	}{
		{"whole", nil, `{"url":%q}`, body, ""},
		{"the model asks for less", nil, `{"url":%q,"max_length":12}`, strings.Repeat("é", 10) + "xx", "[The text is cut at 12 of its 26 characters.]"},
		{"the tool's limit", []webfetch.Option{webfetch.WithMaxLength(5)}, `{"url":%q}`, "ééééé", "[The text is cut at 5 of its 26 characters.]"},
		{"the model cannot ask for more", []webfetch.Option{webfetch.WithMaxLength(5)}, `{"url":%q,"max_length":100}`, "ééééé", "[The text is cut at 5 of its 26 characters.]"},
		{"the lower of the two", []webfetch.Option{webfetch.WithMaxLength(5)}, `{"url":%q,"max_length":3}`, "ééé", "[The text is cut at 3 of its 26 characters.]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newTool(t, append(tt.opts, webfetch.WithAllowPrivateAddresses())...)
			r := call(context.Background(), ft, fmt.Sprintf(tt.args, u))
			p := page(t, r)
			assert.Equal(t, tt.wantText, p.Text)
			assert.Equal(t, 26, p.Length)
			assert.Equal(t, tt.wantNote != "", p.Truncated)
			want := "URL: " + u + "\n\n" + tt.wantText
			if tt.wantNote != "" {
				want += "\n\n" + tt.wantNote
			}
			assert.Equal(t, want, r.Text())
		})
	}

	r := call(context.Background(), newTool(t), fmt.Sprintf(`{"url":%q,"max_length":0}`, u))
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode, "max_length is at least 1")
}

func TestFetchCutsLargeBodies(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{
		"/big":      serve("text/plain; charset=utf-8", strings.Repeat("a", 95)+"ééééé"),
		"/big.html": serve("text/html", "<title>Big</title><p>"+strings.Repeat("word ", 100)+"</p>"),
	})
	ft := newTool(t, webfetch.WithAllowPrivateAddresses(), webfetch.WithMaxBytes(100))
	r := fetch(t, ft, s.URL+"/big")
	p := page(t, r)
	assert.Equal(t, strings.Repeat("a", 95)+"éé", p.Text, "a character cut in two at the end is dropped")
	assert.True(t, p.Truncated)
	assert.Equal(t, 97, p.Length)
	assert.Equal(t, "URL: "+s.URL+"/big\n\n"+p.Text+"\n\n[The page is larger than 100 bytes; only its first 100 bytes were read.]", r.Text())

	r = fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses(), webfetch.WithMaxBytes(60), webfetch.WithMaxLength(10)), s.URL+"/big.html")
	p = page(t, r)
	assert.Equal(t, "Big", p.Title)
	assert.Equal(t, "word word ", p.Text)
	assert.True(t, strings.HasSuffix(r.Text(), "word word \n\n[The text is cut at 10 of its 39 characters.]\n\n[The page is larger than 60 bytes; only its first 60 bytes were read.]"), r.Text())
}

func TestFetchFollowsRedirects(t *testing.T) {
	routes := map[string]http.HandlerFunc{
		"/page": serve("text/plain", "arrived"),
		"/loop": redirect("/loop"),
	}
	for i := 1; i <= 6; i++ {
		routes[fmt.Sprintf("/hop%d", i)] = redirect(fmt.Sprintf("/hop%d", i-1))
	}
	routes["/hop0"] = redirect("/page")
	s := newSite(t, routes)
	ft := newTool(t, webfetch.WithAllowPrivateAddresses())

	r := fetch(t, ft, s.URL+"/hop4")
	p := page(t, r)
	assert.Equal(t, s.URL+"/page", p.URL, "five redirects are followed")
	assert.Equal(t, "arrived", p.Text)
	assert.True(t, strings.HasPrefix(r.Text(), "URL: "+s.URL+"/page\n"), "the model reads the final URL")

	for _, start := range []string{"/hop5", "/loop"} {
		r = fetch(t, ft, s.URL+start)
		require.True(t, r.IsError, start)
		assert.Contains(t, r.Text(), "the tool follows at most 5 redirects")
		assert.Contains(t, r.Text(), "(redirected from "+s.URL+start+")")
		assert.ErrorIs(t, r.Err, webfetch.ErrRefused)
	}
}

func TestFetchHonoursDomainLists(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{
		"/page":         serve("text/plain", "ok"),
		"/to-blocked":   redirect("http://ads.tracker.test/pixel"),
		"/to-elsewhere": redirect("https://elsewhere.test/"),
		"/to-file":      redirect("file:///etc/passwd"),
	})
	tests := []struct {
		name string
		opts []webfetch.Option
		path string
		want string // "" for success
	}{
		{"allowed host", []webfetch.Option{webfetch.WithAllowedDomains("localhost")}, "/page", ""},
		{"blocked domain on redirect", []webfetch.Option{webfetch.WithBlockedDomains("tracker.test")},
			"/to-blocked", "refusing to fetch http://ads.tracker.test/pixel (redirected from BASE/to-blocked): ads.tracker.test is within the blocked domain tracker.test"},
		{"redirect outside the allowed domains", []webfetch.Option{webfetch.WithAllowedDomains("localhost", "example.org")},
			"/to-elsewhere", "refusing to fetch https://elsewhere.test/ (redirected from BASE/to-elsewhere): elsewhere.test is not within the allowed domains (localhost, example.org)"},
		{"blocked wins over allowed", []webfetch.Option{webfetch.WithAllowedDomains("localhost"), webfetch.WithBlockedDomains("localhost")},
			"/page", "refusing to fetch BASE/page: localhost is within the blocked domain localhost"},
		{"first URL outside the allowed domains", []webfetch.Option{webfetch.WithAllowedDomains("example.org")},
			"/page", "refusing to fetch BASE/page: localhost is not within the allowed domains (example.org)"},
	}
	// The lists hold names: the site is reached as localhost.
	base := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newTool(t, append(tt.opts, webfetch.WithAllowPrivateAddresses())...)
			r := fetch(t, ft, base+tt.path)
			if tt.want == "" {
				assert.Equal(t, "ok", page(t, r).Text)
				return
			}
			require.True(t, r.IsError)
			assert.Equal(t, failed+"webfetch: "+strings.ReplaceAll(tt.want, "BASE", base), r.Text())
			assert.ErrorIs(t, r.Err, webfetch.ErrRefused)
			assert.False(t, middleware.IsTransient(r.Err))
		})
	}

	// A domain's subdomains are in it; look-alikes are not. These are
	// refused before any connection.
	ft := newTool(t, webfetch.WithAllowedDomains("*.example.org"), webfetch.WithBlockedDomains("private.example.org"))
	for u, want := range map[string]string{
		"https://evil-example.org/":          "evil-example.org is not within the allowed domains (example.org)",
		"https://example.org.evil.test/":     "example.org.evil.test is not within the allowed domains (example.org)",
		"https://WIKI.Private.Example.org./": "wiki.private.example.org is within the blocked domain private.example.org",
	} {
		r := fetch(t, ft, u)
		require.True(t, r.IsError, u)
		assert.Equal(t, failed+"webfetch: refusing to fetch "+u+": "+want, r.Text())
	}
	assert.Contains(t, ft.Definition().Description, "only pages of example.org", "the model is told which sites it may read")

	// A redirect to another scheme is refused too.
	r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses()), s.URL+"/to-file")
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "refusing to fetch file:///etc/passwd (redirected from "+s.URL+"/to-file): only http and https URLs can be fetched, not file: URLs")
}

func TestFetchRefusesWhatIsNotAWebPage(t *testing.T) {
	tests := []struct {
		url  string
		want string
	}{
		{"file:///etc/passwd", "refusing to fetch file:///etc/passwd: only http and https URLs can be fetched, not file: URLs"},
		{"ftp://example.org/pub/file.txt", "refusing to fetch ftp://example.org/pub/file.txt: only http and https URLs can be fetched, not ftp: URLs"},
		{"javascript:alert(1)", "refusing to fetch javascript:alert(1): only http and https URLs can be fetched, not javascript: URLs"},
		{"data:text/html,<p>hi</p>", "refusing to fetch data:text/html,<p>hi</p>: only http and https URLs can be fetched, not data: URLs"},
		{"/docs/page.html", "refusing to fetch /docs/page.html: it is not an absolute URL; give the whole address, such as https://example.com/page"},
		{"example.org/page", "refusing to fetch example.org/page: it is not an absolute URL"},
		{"https://user:secret@example.org/", "refusing to fetch https://user:secret@example.org/: it carries a user name or password, which the tool does not send"},
		{"https://", "refusing to fetch https://: it names no host"},
		{"http:example.org", "refusing to fetch http:example.org: it names no host"},
		{"https://exa mple.org/", `refusing to fetch "https://exa mple.org/": it is not a valid URL`},
	}
	s := newSite(t, map[string]http.HandlerFunc{"/": serve("text/plain", "no")})
	ft := newTool(t, webfetch.WithAllowPrivateAddresses())
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			r := fetch(t, ft, tt.url)
			require.True(t, r.IsError)
			assert.Equal(t, tool.CodeToolError, r.ErrorCode)
			assert.Contains(t, r.Text(), "webfetch: "+tt.want)
			assert.ErrorIs(t, r.Err, webfetch.ErrRefused)
			assert.False(t, middleware.IsTransient(r.Err))
		})
	}
	assert.Empty(t, s.requests())

	r := call(context.Background(), ft, `{"url":""}`)
	assert.Equal(t, tool.CodeInvalidArguments, r.ErrorCode)
}

func TestFetchRefusesPrivateAddresses(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": serve("text/plain", "secret")})
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	require.NoError(t, err)
	ft := newTool(t) // no WithAllowPrivateAddresses
	tests := []struct {
		url  string
		want string
	}{
		{s.URL + "/", "refusing to fetch " + s.URL + "/: its address 127.0.0.1 is a loopback address, and the tool does not connect to private or local networks"},
		{"http://localhost:" + port + "/admin", "a loopback address"},
		{"http://[::1]:" + port + "/", "its address ::1 is a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "its address 127.0.0.1 is a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "its address 169.254.169.254 is a link-local address (such as a cloud metadata service's)"},
		{"http://10.1.2.3:8080/", "its address 10.1.2.3 is a private address"},
		{"http://192.168.0.1/", "its address 192.168.0.1 is a private address"},
		{"http://0.0.0.0:" + port + "/", "its address 0.0.0.0 is an unspecified address"},
		{"http://[fd00::1]/", "its address fd00::1 is a private address"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			r := fetch(t, ft, tt.url)
			require.True(t, r.IsError)
			assert.Contains(t, r.Text(), "webfetch: refusing to fetch "+tt.url)
			assert.Contains(t, r.Text(), tt.want)
			assert.ErrorIs(t, r.Err, webfetch.ErrRefused)
			assert.False(t, middleware.IsTransient(r.Err), "a refusal is not retried")
		})
	}
	assert.Empty(t, s.requests(), "nothing reached the server")
	// Redirects from a public address to a private one are tested inside
	// the package, where a test may let one loopback port through.
}

func TestFetchFailures(t *testing.T) {
	tests := []struct {
		status    int
		want      string
		transient bool
	}{
		{http.StatusNotFound, "answered 404 Not Found", false},
		{http.StatusForbidden, "answered 403 Forbidden", false},
		{http.StatusRequestTimeout, "answered 408 Request Timeout", true},
		{http.StatusTooManyRequests, "answered 429 Too Many Requests", true},
		{http.StatusInternalServerError, "answered 500 Internal Server Error", true},
		{http.StatusServiceUnavailable, "answered 503 Service Unavailable", true},
		{http.StatusNotModified, "answered 304 Not Modified", false},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			s := newSite(t, map[string]http.HandlerFunc{"/gone": func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = fmt.Fprint(w, "<html>error page</html>")
			}})
			r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses()), s.URL+"/gone")
			require.True(t, r.IsError)
			assert.Equal(t, tool.CodeToolError, r.ErrorCode)
			assert.Equal(t, failed+"webfetch: "+s.URL+"/gone "+tt.want, r.Text())
			var se *webfetch.StatusError
			require.ErrorAs(t, r.Err, &se)
			assert.Equal(t, tt.status, se.Status)
			assert.Equal(t, s.URL+"/gone", se.URL)
			assert.Equal(t, tt.transient, se.Transient())
			assert.Equal(t, tt.transient, middleware.IsTransient(r.Err), "middleware.Retry retries what is transient")
		})
	}

	// Nothing listens: the transport's error, wrapped.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses()), "http://"+addr+"/")
	require.True(t, r.IsError)
	assert.True(t, strings.HasPrefix(r.Text(), failed+"webfetch: fetching http://"+addr+"/: dial tcp "), r.Text())
	var oe *net.OpError
	assert.ErrorAs(t, r.Err, &oe)
	assert.True(t, middleware.IsTransient(r.Err), "a refused connection may be retried")
	assert.NotErrorIs(t, r.Err, webfetch.ErrRefused)
}

func TestFetchRefusesUnreadableContent(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
	tests := []struct {
		contentType string
		body        string
		want        string
	}{
		{"image/png", png, "is image/png, which the tool cannot read"},
		{"application/pdf", "%PDF-1.7", "is application/pdf, which the tool cannot read"},
		{"application/octet-stream", "\x00\x01", "is application/octet-stream, which the tool cannot read"},
		{"", png, "is image/png, which the tool cannot read"},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			s := newSite(t, map[string]http.HandlerFunc{"/file": serve(tt.contentType, tt.body)})
			r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses()), s.URL+"/file")
			require.True(t, r.IsError)
			assert.Equal(t, failed+"webfetch: "+s.URL+"/file "+tt.want+": it reads HTML pages and text (plain text, Markdown, JSON, CSV, XML)", r.Text())
			assert.False(t, middleware.IsTransient(r.Err))
		})
	}
}

func TestFetchHonoursTheCallsDeadline(t *testing.T) {
	release := make(chan struct{})
	s := newSite(t, map[string]http.HandlerFunc{"/slow": func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}})
	defer close(release)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := call(ctx, newTool(t, webfetch.WithAllowPrivateAddresses()), fmt.Sprintf(`{"url":%q}`, s.URL+"/slow"))
	assert.Equal(t, tool.StatusTimeout, r.Status)
	assert.ErrorIs(t, r.Err, context.DeadlineExceeded)

	// WithTimeout bounds a fetch when the call's context does not.
	start := time.Now()
	r = fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses(), webfetch.WithTimeout(50*time.Millisecond)), s.URL+"/slow")
	require.True(t, r.IsError)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Contains(t, r.Text(), "webfetch: fetching "+s.URL+"/slow: no answer within 50ms")
}

func TestFetchIsConcurrencySafe(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/n/": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = fmt.Fprintf(w, "<title>%s</title><p>page %s</p>", r.URL.Path, r.URL.Path)
	}})
	ft := newTool(t, webfetch.WithAllowPrivateAddresses())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := page(t, fetch(t, ft, fmt.Sprintf("%s/n/%d", s.URL, i)))
			assert.Equal(t, fmt.Sprintf("page /n/%d", i), p.Text)
		})
	}
	wg.Wait()
}

func TestNewToolRejectsBadSettings(t *testing.T) {
	tests := []struct {
		name string
		opts []webfetch.Option
		want string
	}{
		{"timeout", []webfetch.Option{webfetch.WithTimeout(0)}, "WithTimeout: the timeout must be positive"},
		{"user agent", []webfetch.Option{webfetch.WithUserAgent(" ")}, `WithUserAgent: " " is not a usable User-Agent`},
		{"user agent with a newline", []webfetch.Option{webfetch.WithUserAgent("a\r\nX-Evil: 1")}, "is not a usable User-Agent"},
		{"max bytes", []webfetch.Option{webfetch.WithMaxBytes(0)}, "WithMaxBytes: n must be at least 1"},
		{"max length", []webfetch.Option{webfetch.WithMaxLength(-1)}, "WithMaxLength: n must be at least 1"},
		{"no allowed domains", []webfetch.Option{webfetch.WithAllowedDomains()}, "WithAllowedDomains: no domains"},
		{"a URL as a domain", []webfetch.Option{webfetch.WithBlockedDomains("https://example.org/")}, `WithBlockedDomains: "https://example.org/" is not a domain name`},
		{"an empty domain", []webfetch.Option{webfetch.WithAllowedDomains("go.dev", "")}, `WithAllowedDomains: "" is not a domain name`},
		{"an IPv4 address", []webfetch.Option{webfetch.WithBlockedDomains("127.0.0.1")}, `WithBlockedDomains: "127.0.0.1" is an IP address; the lists hold domain names`},
		{"an IPv6 address", []webfetch.Option{webfetch.WithAllowedDomains("[::1]")}, `"[::1]" is an IP address`},
		{"an address with a final dot", []webfetch.Option{webfetch.WithAllowedDomains("127.0.0.1.")}, `"127.0.0.1." is an IP address`},
		{"an address as a wildcard", []webfetch.Option{webfetch.WithBlockedDomains("*.10.0.0.1")}, `"*.10.0.0.1" is an IP address`},
		{"a short IPv4 form", []webfetch.Option{webfetch.WithBlockedDomains("127.1")}, `"127.1" is an IP address`},
		{"all problems told", []webfetch.Option{webfetch.WithMaxBytes(0), webfetch.WithMaxLength(0)}, "WithMaxBytes: n must be at least 1; WithMaxLength: n must be at least 1"},
		{"bad name", []webfetch.Option{webfetch.WithName("web fetch")}, "web fetch"},
		{"nil proxy function", []webfetch.Option{webfetch.WithProxy(nil)}, "WithProxy: the proxy function is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := webfetch.NewTool(tt.opts...)
			require.ErrorIs(t, err, tool.ErrInvalidTool)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	ft, err := webfetch.NewTool(webfetch.WithName("read_page"), nil)
	require.NoError(t, err)
	assert.Equal(t, "read_page", tool.Name(ft))
	assert.Contains(t, ft.Definition().Description, "longer than 20000 characters is cut")
	var schema map[string]any
	require.NoError(t, json.Unmarshal(ft.Definition().InputSchema, &schema))
	assert.Equal(t, []any{"url"}, schema["required"], "max_length is optional")
}

func TestFetchStaysSmallOnPagesOfLongLinks(t *testing.T) {
	// A long <base href> turns every short relative link into a long URL:
	// the URLs are left out, and the conversion stops once the text is
	// well past what can be shown.
	long := "https://example.test/" + strings.Repeat("a", 64<<10) + "/"
	links := strings.Repeat(`<a href="x">y</a> `, 4000)
	s := newSite(t, map[string]http.HandlerFunc{"/": serve("text/html", `<base href="`+long+`"><p>`+links+`</p>`)})
	p := page(t, fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses(), webfetch.WithMaxLength(100)), s.URL+"/"))
	assert.True(t, p.Truncated)
	assert.Less(t, len(p.Text), 1000)
	assert.NotContains(t, p.Text, "aaaa", "a link URL over 2 KiB is not shown")

	// Short URLs are shown; a page far longer than the limit is cut with a
	// lower bound for its length.
	many := strings.Repeat(`<a href="/page">word</a> `, 50000)
	s = newSite(t, map[string]http.HandlerFunc{"/": serve("text/html", `<p>`+many+`</p>`)})
	r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses(), webfetch.WithMaxLength(100)), s.URL+"/")
	p = page(t, r)
	assert.Contains(t, r.Text(), "of its more than")
	assert.Less(t, p.Length, 4*100+4096+200, "the conversion stopped early")
}

func TestFetchSaysWhenItStoppedEarly(t *testing.T) {
	// White space counts toward the conversion's budget before it is
	// collapsed: a page of it can stop the conversion with little text to
	// show, and the result says so.
	s := newSite(t, map[string]http.HandlerFunc{"/": serve("text/html", "<pre>"+strings.Repeat("\n", 5000)+"</pre><p>THE END</p>")})
	r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses(), webfetch.WithMaxLength(10)), s.URL+"/")
	p := page(t, r)
	assert.True(t, p.Truncated)
	assert.Contains(t, r.Text(), "[The page's text is cut: the rest of the page was not read.]")
}

func TestFetchRefusesEncodingsItCannotDecode(t *testing.T) {
	s := newSite(t, map[string]http.HandlerFunc{"/": func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Encoding", "br")
		_, _ = w.Write([]byte("\x1b\x00\xff"))
	}})
	r := fetch(t, newTool(t, webfetch.WithAllowPrivateAddresses()), s.URL+"/")
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), `is encoded with "br", which the tool cannot decode`)
}

func TestFetchNamesAnEmptyURL(t *testing.T) {
	r := call(context.Background(), newTool(t), `{"url":"   "}`)
	require.True(t, r.IsError)
	assert.Contains(t, r.Text(), "the URL is empty")
	assert.ErrorIs(t, r.Err, webfetch.ErrRefused)
}
