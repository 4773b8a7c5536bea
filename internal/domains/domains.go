package domains

import (
	"strings"

	"golang.org/x/net/idna"
)

// Host is host as the lists compare it: lower case, without a final dot,
// and in ASCII (punycode) when it is an internationalized name that has an
// ASCII form.
func Host(host string) string {
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			if a, err := idna.Lookup.ToASCII(host); err == nil {
				return a
			}
			break
		}
	}
	return host
}

// Normalize is a domain given to an allow or block list as the list holds
// it ("*.example.com" and ".example.com" are example.com), and false when
// it is not a domain name: empty, or holding a scheme, path, port, user,
// wildcard, space, an empty label or a leading dot.
func Normalize(d string) (string, bool) {
	d = strings.TrimSpace(d)
	d = strings.TrimPrefix(d, "*.")
	d = strings.TrimPrefix(d, ".")
	d = Host(d)
	if d == "" || strings.ContainsAny(d, "/:@?#[]*\\ \t") || strings.HasPrefix(d, ".") || strings.Contains(d, "..") {
		return d, false
	}
	return d, true
}

// Covers reports whether host (spelled as Host spells it) is domain or one
// of its subdomains.
func Covers(domain, host string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}
