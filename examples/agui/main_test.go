package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The Gemini SDK's dependencies bring in OpenCensus, whose package init
// starts a worker that runs for the life of the process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// The demo plays a page against the server: the agent searches with its
// own tool, asks the page to add the product, and confirms once the page
// answered, having seen the page's cart in its context.
func TestDemoRunsOffline(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, start(context.Background(), &out, env(nil), []string{"-demo"}))
	s := out.String()
	assert.Contains(t, s, "model: scripted (offline")
	want := []string{
		"user: " + request,
		"agent: Let me look that up.",
		`call:  find_product {"query":"lamp"}`,
		"result: L-42: Brass desk lamp, 39.90 EUR; L-07: Paper floor lamp, 54.00 EUR",
		`call:  add_to_cart {"sku":"L-42","quantity":1}`,
		"page: ran add_to_cart → added L-42 to the cart",
		"agent: Done: added L-42 to the cart (Your cart now holds: L-42.)",
		"cart: L-42",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(s[at:], w)
		require.GreaterOrEqual(t, i, 0, "%q missing after offset %d in:\n%s", w, at, s)
		at += i + len(w)
	}
}

// Another request on the offline script takes its own path: nothing
// matches, nothing is added.
func TestDemoWithNoMatch(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, start(context.Background(), &out, env(nil), []string{"-demo", "a", "cushion", "please"}))
	s := out.String()
	assert.Contains(t, s, `call:  find_product {"query":"cushion"}`)
	assert.Contains(t, s, "call:  add_to_cart {\"sku\":\"C-03\",\"quantity\":1}")
	assert.Contains(t, s, "cart: C-03")
}

// The server serves the page at / and the agent at POST /agent only.
func TestServerRoutes(t *testing.T) {
	mux, _, err := newServer(env(nil))
	require.NoError(t, err)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()

	resp, err := srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/html")
	assert.Contains(t, string(body), `fetch("/agent"`)

	resp, err = srv.Client().Get(srv.URL + "/agent")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// The page's script is valid JavaScript (checked with node when it is
// installed; CI has it).
func TestPageScriptParses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node (skipped with -short)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed; CI needs it to check the page's script")
		}
		t.Skip("node is not installed: the page's script is not checked")
	}
	html := string(page)
	i := strings.Index(html, "<script>")
	j := strings.LastIndex(html, "</script>")
	require.True(t, i >= 0 && j > i)
	file := filepath.Join(t.TempDir(), "page.js")
	require.NoError(t, os.WriteFile(file, []byte(html[i+len("<script>"):j]), 0o600))
	out, err := exec.Command(node, "--check", file).CombinedOutput()
	assert.NoError(t, err, "%s", out)
}
