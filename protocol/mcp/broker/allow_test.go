package broker

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAllowList(t *testing.T) {
	l := allowList{
		mustPattern(t, "https://mcp.example.com/tools/*"),
		mustPattern(t, "http://127.0.0.1:8080/mcp"),
		mustPattern(t, "https://Docs.Example.com"),
	}
	tests := []struct {
		url  string
		want string // "" for allowed
	}{
		{"https://mcp.example.com/tools/search", ""},
		{"https://MCP.example.com/tools/a/b?x=1", ""},
		{"http://127.0.0.1:8080/mcp", ""},
		{"https://docs.example.com/", ""},
		{"https://docs.example.com", ""},
		{"https://mcp.example.com/tool", "matches no entry"},
		{"http://mcp.example.com/tools/search", "matches no entry"},
		{"https://mcp.example.com.evil.test/tools/x", "matches no entry"},
		{"http://127.0.0.1:8080/mcp/admin", "matches no entry"},
		{"http://127.0.0.1:8080/mcp?admin=1", "matches no entry"},
		{"http://127.0.0.1:80800/mcp", "matches no entry"},
		{"https://mcp.example.com@evil.test/tools/x", "user information"},
		{"https://mcp.example.com/tools/../admin", "canonical"},
		{"https://mcp.example.com/tools/%2e%2e/admin", "canonical"},
		{"https://mcp.example.com/tools//x", "canonical"},
		{`https://mcp.example.com/tools/..\admin`, "canonical"},
		{`https://mcp.example.com/tools\..\admin`, "canonical"},
		{`https://mcp.example.com/tools/x\..\..\admin`, "canonical"},
		{"https://mcp.example.com/tools/%5c..%5cadmin", "canonical"},
		{"https://mcp.example.com/tools/%5C..%5Cadmin", "canonical"},
		{`https://mcp.example.com/tools/.\x`, "canonical"},
		{`https://mcp.example.com/tools\\x`, "canonical"},
		{`https://mcp.example.com/tools/x\y`, ""},
		{"https://mcp.example.com/tools/x#frag", "fragment"},
		{"ws://mcp.example.com/tools/x", "only http and https"},
		{"https:/tools/x", "has no host"},
		{"https://mcp.example.com/tools/x y\x7f", "not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			_, err := l.check(tt.url)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNotAllowed)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// FuzzAllowList checks that a URL chosen by a model never gets past the
// allow-list to another host, scheme or path outside the entry.
func FuzzAllowList(f *testing.F) {
	for _, s := range []string{
		"https://mcp.example.com/tools/x", "https://mcp.example.com@evil/tools/x",
		"https://mcp.example.com/tools/../x", "https://mcp.example.com:443/tools/x",
		"https://mcp.example.com/tools/%2e%2e/x", "https://mcp.example.com\\@evil/tools/",
		"HTTPS://MCP.EXAMPLE.COM/tools/x", "https://mcp.example.com/tools/x?a=b#c", "",
		`https://mcp.example.com/tools/..\x`, "https://mcp.example.com/tools/%5c..%5cx",
	} {
		f.Add(s)
	}
	l := allowList{mustPattern(f, "https://mcp.example.com/tools/*")}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := l.check(raw)
		if err != nil {
			return
		}
		again, perr := url.Parse(raw)
		require.NoError(t, perr)
		assert.Equal(t, "https", again.Scheme)
		assert.Equal(t, "mcp.example.com", strings.ToLower(again.Host))
		assert.Nil(t, again.User)
		assert.True(t, strings.HasPrefix(again.Path, "/tools/"))
		slashed := "/" + strings.ReplaceAll(again.Path, `\`, "/") + "/"
		assert.NotContains(t, slashed, "/../")
		assert.NotContains(t, slashed, "/./")
		assert.Equal(t, u.String(), again.String())
	})
}
