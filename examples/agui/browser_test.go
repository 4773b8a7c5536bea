package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/internal/browsertest"
)

// The page works in a real browser: headless Chromium opens it with a
// request in its address (?ask=), the page streams the run, runs
// add_to_cart when the agent calls it, sends the result back, and shows the
// agent's answer and the cart. The test waits until the page shows the
// agent's confirmation or an error (with a deadline), then reads the page.
func TestPageInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	mux, _, err := newServer(env(nil))
	require.NoError(t, err)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, b.Open(ctx, srv.URL+"/?ask=I+need+a+lamp"))
	require.NoError(t, b.WaitUntil(ctx, `document.querySelector("#log .error") !== null ||
		(document.querySelector("#cart li") !== null &&
		 [...document.querySelectorAll("#log .agent")].some(d => d.textContent.startsWith("Done:")))`))

	log, err := b.HTML(ctx, "#log")
	require.NoError(t, err)
	cart, err := b.HTML(ctx, "#cart")
	require.NoError(t, err)
	for _, want := range []string{
		`<div class="user">I need a lamp</div>`,
		`<div class="agent">Let me look that up.</div>`,
		`→ find_product {"query":"lamp"}`,
		`← L-42: Brass desk lamp, 39.90 EUR`,
		`→ add_to_cart {"sku":"L-42","quantity":1}`,
		`<div class="agent">Done: added L-42 to the cart (Your cart now holds: L-42.)</div>`,
	} {
		assert.Contains(t, log, want)
	}
	assert.Equal(t, `<ul id="cart"><li>L-42</li></ul>`, cart)
	assert.NotContains(t, log, `class="error"`, "the page reported an error")
	if t.Failed() {
		t.Logf("log: %s", log)
	}
}
