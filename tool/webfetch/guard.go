package webfetch

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"github.com/trellis-go/trellis/internal/domains"
	"github.com/trellis-go/trellis/internal/textcut"
)

// ErrRefused is what errors.Is finds in the error of a fetch the tool
// refused to make: a URL that is not an absolute http or https address or
// that carries a user name or password, a host outside the allowed domains
// or within the blocked ones, an address in a private or local network, one
// redirect too many. A refusal is never transient.
var ErrRefused = errors.New("webfetch: refused")

// refusedError is a fetch the tool refused to make, and why.
type refusedError struct {
	url    string // the URL refused
	via    string // the URL asked for, when url was reached by redirects
	why    string
	quoted bool // url is shown quoted: it is not a valid URL
}

func (e *refusedError) Error() string {
	u := clipURL(e.url)
	if e.quoted {
		u = strconv.Quote(u)
	}
	if e.via != "" {
		return fmt.Sprintf("webfetch: refusing to fetch %s (redirected from %s): %s", u, clipURL(e.via), e.why)
	}
	return fmt.Sprintf("webfetch: refusing to fetch %s: %s", u, e.why)
}

// maxShown bounds how much of a URL or a host name a message shows: the
// model, a page's redirects or its links may make them huge.
const maxShown = 200

// clipURL returns the first maxShown bytes of s, between characters, with
// "…" when s was cut.
func clipURL(s string) string { return textcut.Clip(s, maxShown, "…") }

func (e *refusedError) Is(target error) bool { return target == ErrRefused }

// maxRedirects is how many redirects a fetch follows.
const maxRedirects = 5

// checkURL refuses what the tool does not fetch: anything but an absolute
// http or https URL with a host and no user information, and hosts the
// domain lists keep out. raw names the URL in the refusal.
func (c *config) checkURL(u *url.URL, raw string) *refusedError {
	refuse := func(format string, args ...any) *refusedError {
		return &refusedError{url: raw, why: fmt.Sprintf(format, args...)}
	}
	switch {
	case u.Scheme == "":
		return refuse("it is not an absolute URL; give the whole address, such as https://example.com/page")
	case u.Scheme != "http" && u.Scheme != "https":
		return refuse("only http and https URLs can be fetched, not %s: URLs", clipURL(u.Scheme))
	case u.Opaque != "" || u.Host == "":
		return refuse("it names no host")
	case u.User != nil:
		return refuse("it carries a user name or password, which the tool does not send")
	}
	host := domains.Host(u.Hostname())
	for _, d := range c.blocked {
		if domains.Covers(d, host) {
			return refuse("%s is within the blocked domain %s", clipURL(host), d)
		}
	}
	if len(c.allowed) > 0 {
		for _, d := range c.allowed {
			if domains.Covers(d, host) {
				return nil
			}
		}
		return refuse("%s is not within the allowed domains (%s)", clipURL(host), strings.Join(c.allowed, ", "))
	}
	return nil
}

// checkRedirect is the client's CheckRedirect: it follows at most
// maxRedirects redirects, each to a URL checkURL accepts.
func (c *config) checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL.String()
	target := req.URL.String()
	if len(via) > maxRedirects {
		return &refusedError{url: target, via: first, why: fmt.Sprintf("the tool follows at most %d redirects", maxRedirects)}
	}
	if re := c.checkURL(req.URL, target); re != nil {
		re.via = first
		return re
	}
	return nil
}

// control is the dialer's Control function: it runs once the address to
// connect to is known, after name resolution, so that neither a host name
// that resolves to a private address nor a redirect reaches one.
func (c *config) control(_, address string, _ syscall.RawConn) error {
	if c.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &refusedError{why: fmt.Sprintf("its address %q is not an IP address and port", clipURL(address))}
	}
	if c.allowAddr != nil && c.allowAddr(ap) {
		return nil
	}
	if why := addressProblem(ap.Addr()); why != "" {
		return &refusedError{why: fmt.Sprintf("its address %s is %s, and the tool does not connect to private or local networks", ap.Addr().Unmap().WithZone(""), why)}
	}
	return nil
}

// special are address ranges the tool does not connect to beyond those
// netip.Addr's methods name, with why.
var special = []struct {
	prefix netip.Prefix
	why    string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `a "this network" address`},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved or broadcast address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "a local-use NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "a discard-only address"},
	{netip.MustParsePrefix("2001::/32"), "a Teredo address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
}

// Ranges of IPv6 addresses that carry an IPv4 address, which decides.
// (IPv4-mapped addresses, ::ffff:0:0/96, are unmapped first; the
// IPv4-compatible ::/96, the local-use NAT64 64:ff9b:1::/48 and Teredo
// 2001::/32 are refused whole, in special.)
var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052, the well-known prefix
	sixToFour  = netip.MustParsePrefix("2002::/16")       // RFC 3056
	translated = netip.MustParsePrefix("::ffff:0:0:0/96") // RFC 2765 (SIIT), IPv4-translated
)

// embeddedIPv4 returns the IPv4 addresses an IPv6 address a carries by the
// standard ways of carrying one — NAT64's well-known prefix, 6to4, an
// IPv4-translated address, an ISATAP interface identifier (RFC 5214:
// 0000:5efe or 0200:5efe before the IPv4 address, under any prefix) — and
// whether one of them is where the packets go (all but ISATAP's, whose
// prefix routes them).
func embeddedIPv4(a netip.Addr) (v4s []netip.Addr, decides bool) {
	if !a.Is6() {
		return nil, false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a), translated.Contains(a):
		return []netip.Addr{netip.AddrFrom4([4]byte(b[12:16]))}, true
	case sixToFour.Contains(a):
		v4s, decides = []netip.Addr{netip.AddrFrom4([4]byte(b[2:6]))}, true
	}
	if (b[8] == 0 || b[8] == 2) && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe {
		v4s = append(v4s, netip.AddrFrom4([4]byte(b[12:16])))
	}
	return v4s, decides
}

// addressProblem says what kind of address a is when the tool does not
// connect to it (loopback, private, link-local, ...), "" when it does.
func addressProblem(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	switch {
	case !a.IsValid():
		return "not an IP address"
	case a.IsUnspecified():
		return "an unspecified address"
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast():
		return "a link-local address (such as a cloud metadata service's)"
	case a.IsMulticast():
		return "a multicast address"
	}
	for _, s := range special {
		if s.prefix.Contains(a) {
			return s.why
		}
	}
	v4s, decides := embeddedIPv4(a)
	for _, v4 := range v4s {
		if why := addressProblem(v4); why != "" {
			return "an address that embeds " + v4.String() + ", " + why
		}
	}
	if decides {
		return ""
	}
	if !a.IsGlobalUnicast() {
		return "not a global unicast address"
	}
	return ""
}
