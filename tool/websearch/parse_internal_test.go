package websearch

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func seed(f *testing.F, name string) []byte {
	f.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// checkPage fails t when p breaks what the parsers promise: web URLs only,
// every text on one line.
func checkPage(t *testing.T, p Page) {
	t.Helper()
	for _, r := range p.Results {
		if _, ok := webURL(r.URL); !ok {
			t.Fatalf("a result without a web URL: %+v", r)
		}
		for _, s := range []string{r.Title, r.Snippet, r.Published} {
			if strings.ContainsAny(s, "\r\n\t") || s != strings.TrimSpace(s) {
				t.Fatalf("a field not on one line: %q", s)
			}
		}
	}
	if len(p.Results) == 0 && p.HasMore {
		t.Fatalf("more pages after an empty one")
	}
}

func FuzzParseSearXNG(f *testing.F) {
	f.Add(seed(f, "searxng.json"), 1)
	f.Add([]byte(`{"number_of_results":1e308,"results":[{"url":" https://a.example/ ","title":7,"content":"<b>x</b>\n&amp;","publishedDate":"0001-01-01T00:00:00"}]}`), 3)
	f.Add([]byte(`{"results":[null,"x",{"url":"ftp://a"}],"unresponsive_engines":[["a"],[1,2],"x",[]]}`), 0)
	f.Fuzz(func(t *testing.T, body []byte, page int) {
		p, err := parseSearXNG(body, max(page, 1))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "SearXNG: the response is not a SearXNG JSON object") {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		checkPage(t, p)
		if len(p.Notes) > 1 {
			t.Fatalf("more than one note: %q", p.Notes)
		}
	})
}

func FuzzParseBrave(f *testing.F) {
	f.Add(seed(f, "brave.json"))
	f.Add([]byte(`{"web":{"results":[{"url":"https://a.example/x?y#z","title":"<strong>a</strong>","description":null,"page_age":"2024-02-30","age":3}]},"query":{"more_results_available":"yes"}}`))
	f.Add([]byte(`{"web":[],"query":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseBrave(body)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "Brave Search: the response is not a web search JSON object") {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		for _, r := range p.Results {
			if _, ok := webURL(r.URL); !ok {
				t.Fatalf("a result without a web URL: %+v", r)
			}
		}
		for _, r := range p.Results {
			for _, s := range []string{r.Title, r.Snippet, r.Published} {
				if strings.ContainsAny(s, "\r\n\t") {
					t.Fatalf("a field not on one line: %q", s)
				}
			}
		}
	})
}

func TestParsersReadOddFieldsAsAbsent(t *testing.T) {
	p, err := parseSearXNG([]byte(`{"number_of_results":"many","results":[3,{"url":"https://a.example/","title":["x"],"content":"kept","publishedDate":5},{"title":"no url"},{"url":"https://b.example/","title":"B"}],"unresponsive_engines":"none"}`), 1)
	require.NoError(t, err)
	assert.Equal(t, []Result{{URL: "https://a.example/", Snippet: "kept"}, {Title: "B", URL: "https://b.example/"}}, p.Results)
	assert.True(t, p.HasMore, "without a usable count, a page with results may have a next")
	assert.Empty(t, p.Notes)

	p, err = parseBrave([]byte(`{"query":{"more_results_available":1},"web":{"results":{"0":{}}}}`))
	require.NoError(t, err)
	assert.Empty(t, p.Results)
	assert.False(t, p.HasMore)
}

func TestPublishedDate(t *testing.T) {
	for in, want := range map[string]string{
		"2022-03-22T00:00:00":       "2022-03-22",
		"2022-03-22T10:00:00+02:00": "2022-03-22",
		"2023-11-02 10:20:00":       "2023-11-02",
		"2023-11-02 10:20:00.123":   "2023-11-02",
		"2024-01-05":                "2024-01-05",
		"0001-01-01T00:00:00Z":      "",
		"":                          "",
		"3 days ago":                "3 days ago",
		" March\n22, 2022 ":         "March 22, 2022",
	} {
		assert.Equal(t, want, publishedDate(in), in)
	}
}

func TestURLKey(t *testing.T) {
	key := func(s string) string {
		u, ok := webURL(s)
		require.True(t, ok, s)
		return urlKey(u)
	}
	same := []string{"https://go.dev/doc/", "http://go.dev/doc", "https://www.GO.dev/doc#intro", "https://go.dev:443/doc/", "http://go.dev:80/doc"}
	for _, s := range same {
		assert.Equal(t, "go.dev/doc", key(s), s)
	}
	assert.NotEqual(t, key("https://go.dev/doc"), key("https://go.dev/doc?x=1"))
	assert.NotEqual(t, key("https://go.dev/doc"), key("https://go.dev:8443/doc"))
	assert.NotEqual(t, key("https://go.dev/doc"), key("https://pkg.go.dev/doc"))
	assert.Equal(t, "xn--bcher-kva.example", key("https://Bücher.example/"), "an internationalized name in ASCII")

	for _, bad := range []string{"", "go.dev/doc", "ftp://go.dev/", "mailto:a@go.dev", "https://user@go.dev/", "https:///path", "http://[::1"} {
		_, ok := webURL(bad)
		assert.False(t, ok, bad)
	}
	_, err := url.Parse("http://[::1")
	assert.Error(t, err)
}

func TestHTMLText(t *testing.T) {
	assert.Equal(t, "Go & generics: a < b and c > d", htmlText("<strong>Go</strong> &amp; generics:\n a < b and c > d"))
	assert.Equal(t, "one two three", htmlText("one<br/>\u2028two\x00three"))
	assert.Equal(t, "x \uFFFD", oneLine("x \xff"))
}

func FuzzParseDuckDuckGo(f *testing.F) {
	for _, name := range []string{"golang.json", "answer.json", "nothing.json"} {
		f.Add(seed(f, "duckduckgo/"+name))
	}
	f.Add([]byte(`{"RelatedTopics":[{"Topics":[{"Topics":[{"Text":"deep","FirstURL":"https://a.example/"}]}]}],"Answer":[1,2]}`))
	f.Add([]byte(`{"Heading":"Go","AbstractText":7,"Results":"","RelatedTopics":[3,{"Text":"kept","FirstURL":9},{"Topics":{"x":1}},{"Text":"also kept - x","FirstURL":" https://b.example/\n"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := parseDuckDuckGo(body)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "DuckDuckGo: the response is not an Instant Answer JSON object") {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		checkPage(t, p)
		if len(p.Results) == 0 && len(p.Notes) == 0 {
			t.Fatal("an empty page without a note")
		}
	})
}

// One odd field of an Instant Answer loses nothing else, and groups of
// related topics are flattened in order.
func TestParseDuckDuckGoKeepsWhatItCanRead(t *testing.T) {
	p, err := parseDuckDuckGo([]byte(`{"Heading":"Go","AbstractText":7,"Results":"","RelatedTopics":[3,{"Text":"no address","FirstURL":9},{"Topics":{"x":1}},{"Text":"kept - first","FirstURL":"https://a.example/"},{"Topics":[{"Text":"grouped","FirstURL":"https://b.example/"}]}]}`))
	require.NoError(t, err)
	assert.Equal(t, []Result{{Title: "kept", URL: "https://a.example/", Snippet: "first"}, {Title: "grouped", URL: "https://b.example/"}}, p.Results)
	for _, bad := range []string{``, `[]`, `null`, `<html>rate limited</html>`} {
		_, err := parseDuckDuckGo([]byte(bad))
		require.Error(t, err, "%q", bad)
		assert.Contains(t, err.Error(), "not an Instant Answer JSON object")
	}
}
