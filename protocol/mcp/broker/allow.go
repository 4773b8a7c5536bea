package broker

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/trellis-go/trellis/internal/textcut"
)

// ErrNotAllowed: an ad-hoc URL is not on the broker's allow-list.
var ErrNotAllowed = errors.New("broker: URL not allowed")

// pattern is one entry of the allow-list.
type pattern struct {
	raw    string
	scheme string
	host   string // lower case, with the port if any
	path   string
	query  string
	prefix bool // the entry ended with "*": path is a prefix
}

// parsePattern reads an allow-list entry: an http or https URL, matched
// exactly, or ending with "*" to match every path that starts with what
// precedes the star on the same scheme and host.
func parsePattern(s string) (pattern, error) {
	raw := strings.TrimSpace(s)
	body, prefix := strings.CutSuffix(raw, "*")
	if strings.Contains(body, "*") {
		return pattern{}, fmt.Errorf("allow-list entry %s: only a final * is supported", quoteURL(s))
	}
	u, err := url.Parse(body)
	if err != nil {
		return pattern{}, fmt.Errorf("allow-list entry %s: %w", quoteURL(s), parseError(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return pattern{}, fmt.Errorf("allow-list entry %s: the scheme must be http or https", quoteURL(s))
	}
	if u.Host == "" || u.User != nil || u.Fragment != "" {
		return pattern{}, fmt.Errorf("allow-list entry %s: want scheme://host[:port]/path, without user or fragment", quoteURL(s))
	}
	if prefix && u.RawQuery != "" {
		return pattern{}, fmt.Errorf("allow-list entry %s: a prefix entry takes no query", quoteURL(s))
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	return pattern{raw: raw, scheme: u.Scheme, host: strings.ToLower(u.Host), path: p, query: u.RawQuery, prefix: prefix}, nil
}

// match reports whether u (checked by checkURL) is allowed by p.
func (p pattern) match(u *url.URL) bool {
	if u.Scheme != p.scheme || strings.ToLower(u.Host) != p.host {
		return false
	}
	up := u.Path
	if up == "" {
		up = "/"
	}
	if p.prefix {
		return strings.HasPrefix(up, p.path)
	}
	return up == p.path && u.RawQuery == p.query
}

// checkURL parses an ad-hoc URL and refuses the forms that could make an
// allow-list entry match a URL it was not meant for: user information
// (http://allowed@evil/), dot segments (/mcp/../admin, with "\" read as
// "/" too: /mcp/..\admin), empty segments, fragments, and anything that is
// not an absolute http or https URL.
func checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a URL: %w", ErrNotAllowed, quoteURL(raw), parseError(err))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: %s: only http and https URLs can be used", ErrNotAllowed, quoteURL(raw))
	case u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("%w: %s has no host", ErrNotAllowed, quoteURL(raw))
	case u.User != nil:
		return nil, fmt.Errorf("%w: %s carries user information", ErrNotAllowed, quoteURL(raw))
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%w: %s has a fragment", ErrNotAllowed, quoteURL(raw))
	}
	if u.Path != "" {
		// Some servers read "\" (or "%5C") as "/": a dot segment between
		// backslashes climbs for them too.
		p := strings.ReplaceAll(u.Path, `\`, "/")
		clean := path.Clean(p)
		if strings.HasSuffix(p, "/") && clean != "/" {
			clean += "/"
		}
		if clean != p {
			return nil, fmt.Errorf("%w: %s has a path that is not in canonical form", ErrNotAllowed, quoteURL(raw))
		}
	}
	return u, nil
}

// parseError returns the reason of url.Parse's error without the URL,
// which it quotes in full.
func parseError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

// maxQuoted bounds how much of a name an error quotes, and maxQuotedURL
// how much of a URL: both may come from the model, and an error must not
// repeat a huge one.
const (
	maxQuoted    = 64
	maxQuotedURL = 200
)

// quote returns s quoted as %q would, cut to its first maxQuoted bytes
// (between characters) with "…" at the cut.
func quote(s string) string { return strconv.Quote(textcut.Clip(s, maxQuoted, "…")) }

// quoteURL is quote for a URL, cut to maxQuotedURL bytes.
func quoteURL(s string) string { return strconv.Quote(textcut.Clip(s, maxQuotedURL, "…")) }

// allowList is the broker's list of ad-hoc URLs it may connect to.
type allowList []pattern

// check returns the parsed URL when raw is allowed, or an error wrapping
// ErrNotAllowed that says why not.
func (l allowList) check(raw string) (*url.URL, error) {
	if len(l) == 0 {
		return nil, fmt.Errorf("%w: %s: this broker connects to its named servers only", ErrNotAllowed, quoteURL(raw))
	}
	u, err := checkURL(raw)
	if err != nil {
		return nil, err
	}
	for _, p := range l {
		if p.match(u) {
			return u, nil
		}
	}
	return nil, fmt.Errorf("%w: %s matches no entry of the allow-list", ErrNotAllowed, quoteURL(raw))
}

// entries returns the allow-list as written.
func (l allowList) entries() []string {
	out := make([]string, len(l))
	for i, p := range l {
		out[i] = p.raw
	}
	return out
}
