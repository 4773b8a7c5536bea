//go:build unix

package main

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page works in a real browser: headless Chromium opens it with a
// request in its address (?ask=), the page streams the run, runs
// add_to_cart when the agent calls it, sends the result back, and shows the
// agent's answer and the cart. The test reads the page as Chromium leaves
// it once its network is quiet.
func TestPageInBrowser(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium: CI installs the Debian package chromium")
		}
		t.Skip("no Chromium (chromium, chromium-browser or google-chrome) in PATH: the page is not tried in a browser")
	}
	mux, _, err := newServer(env(nil))
	require.NoError(t, err)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless=new", "--no-sandbox", "--disable-gpu",
		"--no-first-run", "--user-data-dir="+t.TempDir(), "--virtual-time-budget=20000",
		"--dump-dom", srv.URL+"/?ask=I+need+a+lamp")
	// Chromium starts helper processes: a timeout ends them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", out)
	dom := string(out)
	for _, want := range []string{
		`<div class="user">I need a lamp</div>`,
		`<div class="agent">Let me look that up.</div>`,
		`→ find_product {"query":"lamp"}`,
		`← L-42: Brass desk lamp, 39.90 EUR`,
		`→ add_to_cart {"sku":"L-42","quantity":1}`,
		`<div class="agent">Done: added L-42 to the cart (Your cart now holds: L-42.)</div>`,
		`<ul id="cart"><li>L-42</li></ul>`,
	} {
		assert.Contains(t, dom, want)
	}
	assert.NotContains(t, dom, `class="error"`, "the page reported an error")
	if t.Failed() {
		i := strings.Index(dom, `<main>`)
		t.Logf("page: %s", dom[max(i, 0):])
	}
}
