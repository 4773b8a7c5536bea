package websearch

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/trellis-go/trellis/internal/domains"
	"github.com/trellis-go/trellis/internal/textcut"
)

// Limits of what the model reads of one result, in bytes.
const (
	maxTitle     = 200
	maxSnippet   = 500
	maxPublished = 40
	maxNote      = 300
	maxNotes     = 5
)

// tidy is r as the model reads it: each field on one line and cut short,
// the URL as the backend gave it, the title the URL when it has none.
func tidy(r Result) Result {
	out := Result{
		Title:     textcut.Clip(oneLine(r.Title), maxTitle, "..."),
		URL:       strings.TrimSpace(r.URL),
		Snippet:   textcut.Clip(oneLine(r.Snippet), maxSnippet, "..."),
		Published: textcut.Clip(oneLine(r.Published), maxPublished, "..."),
	}
	if out.Title == "" {
		out.Title = out.URL
	}
	return out
}

// cleanNotes are a backend's notes as the model reads them.
func cleanNotes(notes []string) []string {
	var out []string
	for _, n := range notes {
		if n = textcut.Clip(oneLine(n), maxNote, "..."); n != "" && len(out) < maxNotes {
			out = append(out, n)
		}
	}
	return out
}

// oneLine is s with its runs of white space and control characters made
// one space, trimmed, and its invalid UTF-8 replaced.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// tag matches an HTML tag: a '<' followed by a letter (or '/' and a
// letter), up to its '>'. A '<' in text ("a < b") is left alone.
var tag = regexp.MustCompile(`</?[A-Za-z][^<>]*>`)

// htmlText is the text of a snippet that may hold HTML: its tags (such as
// the <strong> search engines mark matches with) removed, its character
// references decoded, on one line.
func htmlText(s string) string {
	return oneLine(html.UnescapeString(tag.ReplaceAllString(s, "")))
}

// dateLayouts are the forms of dates the backends give.
var dateLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02"}

// publishedDate is a date a backend gave as a day (2024-03-15) when it is
// one of dateLayouts, else as it is on one line; "" for a zero date.
func publishedDate(s string) string {
	s = strings.TrimSpace(s)
	for _, layout := range dateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() <= 1 {
				return ""
			}
			return t.Format("2006-01-02")
		}
	}
	return textcut.Clip(oneLine(s), maxPublished, "...")
}

// webURL is raw parsed when it is an absolute http or https URL with a
// host and no user information.
func webURL(raw string) (*url.URL, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.User != nil {
		return nil, false
	}
	return u, true
}

// urlKey is what two URLs of one page have in common: the host without
// "www." and a default port, the path without a trailing slash, and the
// query; the scheme and the fragment do not count.
func urlKey(u *url.URL) string {
	host := strings.TrimPrefix(domains.Host(u.Hostname()), "www.")
	if p := u.Port(); p != "" && p != "80" && p != "443" {
		host += ":" + p
	}
	key := host + strings.TrimRight(u.EscapedPath(), "/")
	if u.RawQuery != "" {
		key += "?" + u.RawQuery
	}
	return key
}

// isCode reports whether s is lo to hi ASCII letters, with single
// hyphens between them when hyphen is true.
func isCode(s string, lo, hi int, hyphen bool) bool {
	if len(s) < lo || len(s) > hi || s[0] == '-' || s[len(s)-1] == '-' || strings.Contains(s, "--") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c == '-' && hyphen:
		default:
			return false
		}
	}
	return true
}
