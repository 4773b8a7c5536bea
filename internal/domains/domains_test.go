package domains

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCovers(t *testing.T) {
	tests := []struct {
		host, domain string
		in           bool
	}{
		{"example.org", "example.org", true},
		{"docs.example.org", "example.org", true},
		{"a.b.example.org", "example.org", true},
		{"evil-example.org", "example.org", false},
		{"example.org.evil.test", "example.org", false},
		{"org", "example.org", false},
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.10", "127.0.0.1", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.in, Covers(tt.domain, tt.host), "%s in %s", tt.host, tt.domain)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"Example.ORG":      "example.org",
		"*.example.org":    "example.org",
		".example.org.":    "example.org",
		" bücher.example ": "xn--bcher-kva.example",
	} {
		got, ok := Normalize(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "  ", "*.", "https://example.org", "example.org/path", "user@example.org",
		"example.org:443", "*.*.example.org", "[::1]", "a..example.org", "..example.org"} {
		_, ok := Normalize(bad)
		assert.False(t, ok, "%q", bad)
	}
}

func TestHost(t *testing.T) {
	assert.Equal(t, "xn--bcher-kva.example", Host("BÜCHER.example."))
	assert.Equal(t, "example.org", Host(" Example.Org "))
	// A name with no ASCII form is kept as it was, lower-cased.
	assert.Equal(t, "a\u00a0b.example", Host("a\u00a0B.example"))
}
