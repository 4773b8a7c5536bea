package webfetch_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/tool/webfetch"
)

// URLs and host names are quoted in errors by a bounded prefix, never in
// full, whether the model gave them or a page redirected to them.
func TestErrorsQuoteABoundedPrefix(t *testing.T) {
	huge := strings.Repeat("x", 100_000)
	s := newSite(t, map[string]http.HandlerFunc{
		"/missing/": http.NotFound,
		"/away":     redirect("http://blocked.example/" + huge[:30_000]),
	})
	long := s.URL + "/missing/" + huge
	blocked := newTool(t, webfetch.WithBlockedDomains("blocked.example"), webfetch.WithAllowPrivateAddresses())
	open := newTool(t, webfetch.WithAllowPrivateAddresses())
	guarded := newTool(t)
	tests := []struct {
		name string
		r    func() string
		want string
	}{
		{"status", func() string { return fetch(t, open, long).Text() }, "… answered 404 Not Found"},
		{"blocked", func() string { return fetch(t, blocked, "http://blocked.example/"+huge).Text() }, "refusing to fetch http://blocked.example/xxx"},
		{"redirect", func() string { return fetch(t, blocked, s.URL+"/away").Text() }, "refusing to fetch http://blocked.example/xxx"},
		{"invalid", func() string { return fetch(t, open, "http://h/"+huge+"\x7f").Text() }, "…\": it is not a valid URL"},
		{"private", func() string { return fetch(t, guarded, "http://127.0.0.1:1/"+huge).Text() }, "its address 127.0.0.1 is a loopback address"},
		{"host", func() string { return fetch(t, open, "http://"+strings.Repeat("a.", 5000)+"invalid/").Text() }, "webfetch: fetching http://a.a.a."},
		{"scheme", func() string { return fetch(t, open, huge+"://h/").Text() }, "only http and https URLs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.r()
			require.NotEmpty(t, text)
			assert.Contains(t, text, tt.want)
			assert.Less(t, len(text), 1500, "the error repeats the input: %.600s", text)
		})
	}
}
