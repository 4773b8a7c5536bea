package webfetch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/middleware"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

func TestAddressProblem(t *testing.T) {
	tests := []struct {
		addr string
		want string // "" when the tool connects
	}{
		{"93.184.215.14", ""},
		{"8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", ""},  // 6to4 of 8.8.8.8
		{"127.0.0.1", "a loopback address"},
		{"127.255.0.9", "a loopback address"},
		{"::1", "a loopback address"},
		{"::ffff:127.0.0.1", "a loopback address"},
		{"0.0.0.0", "an unspecified address"},
		{"::", "an unspecified address"},
		{"10.0.0.1", "a private address"},
		{"172.16.5.4", "a private address"},
		{"192.168.1.1", "a private address"},
		{"fd12:3456::1", "a private address"},
		{"fc00::1", "a private address"},
		{"169.254.169.254", "a link-local address (such as a cloud metadata service's)"},
		{"fe80::1", "a link-local address (such as a cloud metadata service's)"},
		{"fe80::1%eth0", "a link-local address (such as a cloud metadata service's)"},
		{"224.0.0.1", "a multicast address"},
		{"ff02::1", "a multicast address"},
		{"0.1.2.3", `a "this network" address`},
		{"100.100.100.200", "a shared (carrier-grade NAT) address"},
		{"192.0.0.170", "an IETF protocol assignment"},
		{"198.18.0.1", "a benchmarking address"},
		{"203.0.113.9", "a documentation address"},
		{"2001:db8::1", "a documentation address"},
		{"255.255.255.255", "a reserved or broadcast address"},
		{"240.0.0.1", "a reserved or broadcast address"},
		{"::7f00:1", "an IPv4-compatible address"},
		{"64:ff9b::7f00:1", "an address that embeds 127.0.0.1, a loopback address"},
		{"64:ff9b::a9fe:a9fe", "an address that embeds 169.254.169.254, a link-local address (such as a cloud metadata service's)"},
		{"2002:a00:1::1", "an address that embeds 10.0.0.1, a private address"},
		{"64:ff9b:1::1", "a local-use NAT64 address"},
		{"2001:0:4136:e378::1", "a Teredo address"},
		{"fec0::1", "a site-local address"},
		{"100::1", "a discard-only address"},

		// Every IPv6 spelling of a loopback, private or link-local IPv4
		// address is refused.
		{"::ffff:7f00:1", "a loopback address"},                                                 // IPv4-mapped
		{"::ffff:10.1.2.3", "a private address"},                                                // IPv4-mapped
		{"::ffff:169.254.169.254", "a link-local address (such as a cloud metadata service's)"}, // IPv4-mapped
		{"::ffff:0:7f00:1", "an address that embeds 127.0.0.1, a loopback address"},             // IPv4-translated
		{"::ffff:0:127.0.0.1", "an address that embeds 127.0.0.1, a loopback address"},          // IPv4-translated
		{"::ffff:0:a9fe:a9fe", "an address that embeds 169.254.169.254, a link-local address (such as a cloud metadata service's)"},
		{"::ffff:0:c0a8:101", "an address that embeds 192.168.1.1, a private address"},
		{"::ffff:0:808:808", ""},                      // IPv4-translated 8.8.8.8
		{"::127.0.0.1", "an IPv4-compatible address"}, // IPv4-compatible
		{"::10.0.0.1", "an IPv4-compatible address"},
		{"::8.8.8.8", "an IPv4-compatible address"},                                    // deprecated: refused whole
		{"64:ff9b::127.0.0.1", "an address that embeds 127.0.0.1, a loopback address"}, // NAT64
		{"64:ff9b::10.0.0.1", "an address that embeds 10.0.0.1, a private address"},
		{"64:ff9b::0.0.0.0", "an address that embeds 0.0.0.0, an unspecified address"},
		{"64:ff9b:1::a00:1", "a local-use NAT64 address"},
		{"2002:7f00:1::", "an address that embeds 127.0.0.1, a loopback address"}, // 6to4
		{"2002:a9fe:a9fe:1:2:3:4:5", "an address that embeds 169.254.169.254, a link-local address (such as a cloud metadata service's)"},
		{"2002:c0a8:101::1", "an address that embeds 192.168.1.1, a private address"},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", "a Teredo address"},                      // Teredo of 127.0.0.1
		{"2600::5efe:a00:1", "an address that embeds 10.0.0.1, a private address"},        // ISATAP
		{"2600::200:5efe:7f00:1", "an address that embeds 127.0.0.1, a loopback address"}, // ISATAP, universal bit
		{"2600::5efe:808:808", ""},                                                        // ISATAP of 8.8.8.8
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			assert.Equal(t, tt.want, addressProblem(netip.MustParseAddr(tt.addr)))
		})
	}
	assert.Equal(t, "not an IP address", addressProblem(netip.Addr{}))
}

// The domain rules themselves are tested in internal/domains.
func TestDomains(t *testing.T) {
	c := &config{allowed: []string{"xn--bcher-kva.example"}}
	u, err := url.Parse("https://BÜCHER.example/katalog")
	require.NoError(t, err)
	assert.Nil(t, c.checkURL(u, u.String()), "a host in Unicode matches its punycode")
}

// TestRedirectToAPrivateAddressIsRefused lets the guard through to one
// loopback port, standing for a public site, whose redirects lead to
// private addresses.
func TestRedirectToAPrivateAddressIsRefused(t *testing.T) {
	var reached atomic.Int32
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = w.Write([]byte("secret"))
	}))
	defer private.Close()
	privateURL, err := url.Parse(private.URL)
	require.NoError(t, err)
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			_, _ = w.Write([]byte("public"))
		case "/to-private":
			http.Redirect(w, r, private.URL+"/secret", http.StatusFound)
		case "/to-localhost":
			http.Redirect(w, r, "http://localhost:"+privateURL.Port()+"/secret", http.StatusMovedPermanently)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/", http.StatusTemporaryRedirect)
		}
	}))
	defer public.Close()
	publicAddr := netip.MustParseAddrPort(strings.TrimPrefix(public.URL, "http://"))

	ft, err := NewTool(func(c *config) { c.allowAddr = func(ap netip.AddrPort) bool { return ap == publicAddr } })
	require.NoError(t, err)
	fetch := func(u string) tool.Result {
		args, err := json.Marshal(Args{URL: u})
		require.NoError(t, err)
		return tool.Invoke(context.Background(), ft, model.ToolCall{ID: "f", Name: DefaultName, Arguments: args})
	}

	r := fetch(public.URL + "/page")
	require.False(t, r.IsError, r.Text())
	assert.Equal(t, "public", r.Details.(Page).Text)

	tests := []struct {
		path, want string
	}{
		{"/to-private", "refusing to fetch " + private.URL + "/secret (redirected from " + public.URL + "/to-private): its address 127.0.0.1 is a loopback address, and the tool does not connect to private or local networks"},
		{"/to-localhost", "refusing to fetch http://localhost:" + privateURL.Port() + "/secret (redirected from " + public.URL + "/to-localhost): its address "},
		{"/to-metadata", "refusing to fetch http://169.254.169.254/latest/meta-data/iam/ (redirected from " + public.URL + "/to-metadata): its address 169.254.169.254 is a link-local address (such as a cloud metadata service's)"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := fetch(public.URL + tt.path)
			require.True(t, r.IsError)
			assert.Contains(t, r.Text(), "webfetch: "+tt.want)
			assert.ErrorIs(t, r.Err, ErrRefused)
			assert.False(t, middleware.IsTransient(r.Err))
		})
	}
	assert.Zero(t, reached.Load(), "no redirect reached the private server")
}

func TestTheToolUsesNoProxyUnlessAsked(t *testing.T) {
	var c *config
	keep := func(cfg *config) { c = cfg }
	_, err := NewTool(keep)
	require.NoError(t, err)
	tr, ok := c.client.Transport.(*http.Transport)
	require.True(t, ok, "one transport, got %T", c.client.Transport)
	assert.Nil(t, tr.Proxy, "no proxy from the environment")

	_, err = NewTool(WithProxy(http.ProxyFromEnvironment), keep)
	require.NoError(t, err)
	rt, ok := c.client.Transport.(*router)
	require.True(t, ok, "a router, got %T", c.client.Transport)
	assert.Nil(t, rt.direct.Proxy, "direct connections use no proxy")
	_, err = rt.proxied.Proxy(httptest.NewRequest(http.MethodGet, "http://example.org/", nil))
	assert.ErrorContains(t, err, "no proxy was chosen", "the proxied transport never dials a page itself")
}

func TestCutting(t *testing.T) {
	assert.Equal(t, "héllo", cutRunes("héllo wörld", 5))
	assert.Equal(t, "hé", cutRunes("hé", 5))
	assert.Equal(t, "", cutRunes("hé", 0))

	assert.Equal(t, []byte("ab"), trimPartialRune([]byte("ab\xc3")))
	assert.Equal(t, []byte("ab"), trimPartialRune([]byte("ab\xe2\x82")))
	assert.Equal(t, []byte("ab\xe2\x82\xac"), trimPartialRune([]byte("ab\xe2\x82\xac")))
	assert.Equal(t, []byte("ab\xff"), trimPartialRune([]byte("ab\xff")), "an invalid byte is not a cut character")
	assert.Empty(t, trimPartialRune(nil))
}

// FuzzAddressProblem checks that no IPv6 spelling of an IPv4 address the
// tool refuses gets through: mapped, translated, compatible, NAT64, 6to4
// and ISATAP forms, with any other bits where the form leaves them free.
func FuzzAddressProblem(f *testing.F) {
	for _, seed := range []struct {
		v4   [4]byte
		rest [16]byte
	}{
		{[4]byte{127, 0, 0, 1}, [16]byte{}},
		{[4]byte{10, 1, 2, 3}, [16]byte{0x26, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}},
		{[4]byte{169, 254, 169, 254}, [16]byte{0xff, 0xff}},
		{[4]byte{8, 8, 8, 8}, [16]byte{0x20, 0x01, 0x0d, 0xb8}},
		{[4]byte{192, 168, 0, 1}, [16]byte{0xfe, 0x80}},
	} {
		f.Add(seed.v4[:], seed.rest[:])
	}
	f.Fuzz(func(t *testing.T, v4b, rest []byte) {
		if len(v4b) != 4 || len(rest) != 16 {
			return
		}
		v4 := netip.AddrFrom4([4]byte(v4b))
		var free [16]byte
		copy(free[:], rest)
		// Any address at all: no panic, and a refusal says why.
		_ = addressProblem(netip.AddrFrom16(free))
		if addressProblem(v4) == "" {
			return
		}
		forms := map[string][16]byte{}
		put := func(name string, prefix []byte, v4At int, tail []byte) {
			var b [16]byte
			copy(b[:], prefix)
			copy(b[v4At:], v4b)
			if tail != nil {
				copy(b[v4At+4:], tail)
			}
			forms[name] = b
		}
		put("mapped", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 12, nil)
		put("translated", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0}, 12, nil)
		put("compatible", nil, 12, nil)
		put("nat64", []byte{0, 0x64, 0xff, 0x9b}, 12, nil)
		put("6to4", []byte{0x20, 0x02}, 2, free[6:])
		isatap := append(append([]byte(nil), free[:8]...), 0, 0, 0x5e, 0xfe)
		put("isatap", isatap, 12, nil)
		isatapU := append(append([]byte(nil), free[:8]...), 2, 0, 0x5e, 0xfe)
		put("isatap-u", isatapU, 12, nil)
		for name, b := range forms {
			a := netip.AddrFrom16(b)
			assert.NotEmpty(t, addressProblem(a), "%s form %s of %s gets through", name, a, v4)
		}
	})
}
