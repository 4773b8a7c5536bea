package mcp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/graph"
)

// A browser: it opens the authorization page, which redirects at once, and
// follows the redirect to the application's callback.
func browse(ctx context.Context, authURL string) error {
	c := http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		return c.Do(req)
	}
	resp, err := get(authURL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	back, err := resp.Location()
	if err != nil {
		return err
	}
	resp, err = get(back.String())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status + ": " + string(body))
	}
	return nil
}

// The application serves Redirects at its redirect URL; the sign-in
// shows the page (here a browser that follows it on its own goroutine)
// and gets the code from the redirect the callback received.
func TestRedirectsCarryTheBrowserStepToTheSignIn(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), []string{"tools"}, always("tools"))
	var redirects Redirects
	callback := serveHTTP(t, &redirects) + "/oauth/callback"
	browsed := make(chan error, 1)
	show := func(ctx context.Context, authURL string) error {
		go func() { browsed <- browse(context.WithoutCancel(ctx), authURL) }()
		return nil
	}
	ctx := ctxT(t, 20*time.Second)
	listAndCall(ctx, t, endpoint, WithReconnect(0), WithOAuth(OAuth{RedirectURL: callback, Authorizer: redirects.Authorizer(show)}))
	require.NoError(t, <-browsed)
	authorized, _, _ := as.seen()
	require.Len(t, authorized, 1)
	assert.Equal(t, callback, authorized[0].Get("redirect_uri"))
}

// Sign-ins waiting at once each get the redirect of their own state,
// whatever the order the redirects come in.
func TestRedirectsMatchEachSignInByState(t *testing.T) {
	var redirects Redirects
	shown := make(chan string, 2)
	a := redirects.Authorizer(func(_ context.Context, authURL string) error {
		shown <- authURL
		return nil
	})
	ctx := ctxT(t, 10*time.Second)
	type got struct {
		state string
		u     *url.URL
		err   error
	}
	results := make(chan got, 2)
	for _, state := range []string{"s-1", "s-2"} {
		go func() {
			u, err := a.Authorize(ctx, "https://as.example/authorize?state="+state)
			results <- got{state, u, err}
		}()
	}
	var urls []string
	for range 2 {
		urls = append(urls, <-shown)
	}
	// Deliver in the reverse order of showing.
	for i := len(urls) - 1; i >= 0; i-- {
		u, err := url.Parse(urls[i])
		require.NoError(t, err)
		back, err := url.Parse("http://127.0.0.1:1/cb?code=c-" + u.Query().Get("state") + "&state=" + u.Query().Get("state"))
		require.NoError(t, err)
		require.True(t, redirects.Deliver(back))
	}
	for range 2 {
		r := <-results
		require.NoError(t, r.err)
		assert.Equal(t, "c-"+r.state, r.u.Query().Get("code"))
	}
	again, err := url.Parse("http://127.0.0.1:1/cb?code=c&state=s-1")
	require.NoError(t, err)
	assert.False(t, redirects.Deliver(again), "a state is delivered once")
}

// A redirect no sign-in waits for gets 400 and reaches no one; a sign-in
// whose context ends stops waiting and says why.
func TestRedirectsRefuseWhatNoSignInWaitsFor(t *testing.T) {
	var redirects Redirects
	base := serveHTTP(t, &redirects)
	resp, err := http.Get(base + "/cb?code=c&state=unknown")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(body), "No sign-in is waiting")

	a := redirects.Authorizer(func(context.Context, string) error { return nil })
	_, err = a.Authorize(t.Context(), "https://as.example/authorize?client_id=c")
	require.ErrorContains(t, err, "carries no state")

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = a.Authorize(ctx, "https://as.example/authorize?state=s")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "waiting for the person to sign in")
	late, _ := url.Parse("http://127.0.0.1:1/cb?code=c&state=s")
	assert.False(t, redirects.Deliver(late), "a sign-in that gave up no longer waits")

	failing := redirects.Authorizer(func(context.Context, string) error { return errors.New("no browser") })
	_, err = failing.Authorize(t.Context(), "https://as.example/authorize?state=s")
	require.ErrorContains(t, err, "no browser")
}

// In a web application the sign-in link reaches the person's page through
// the run they are watching: the toolset's first use in the run meets the
// server's 401, and show emits the link into the run's stream (which
// AG-UI forwards as a CUSTOM event); the page opens it, and the callback
// route hands the redirect back to the waiting sign-in.
func TestRedirectsShowTheLinkInTheRunsStream(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), []string{"tools"}, always("tools"))
	var redirects Redirects
	callback := serveHTTP(t, &redirects) + "/oauth/callback"
	show := func(ctx context.Context, authURL string) error {
		graph.EmitCustom(ctx, "sign_in", authURL)
		return nil
	}
	ts, err := New(Config{Name: "p", URL: endpoint}, WithReconnect(0),
		WithOAuth(OAuth{RedirectURL: callback, Authorizer: redirects.Authorizer(show)}))
	require.NoError(t, err)
	defer ts.Close()
	g, err := graph.New[callState]().
		AddNode("list", func(ctx context.Context, s callState) (callState, error) {
			tools, err := ts.Tools(ctx)
			if err != nil {
				return s, err
			}
			s.Out = tools[0].Definition().Name
			return s, nil
		}).
		AddEdge(graph.START, "list").
		Compile()
	require.NoError(t, err)

	ctx := ctxT(t, 20*time.Second)
	browsed := make(chan error, 1)
	links := 0
	for ev, err := range g.Stream(ctx, callState{}, graph.WithModes(graph.ModeCustom)) {
		require.NoError(t, err)
		if ev.Name == "sign_in" {
			links++
			go func() { browsed <- browse(ctx, ev.Payload.(string)) }()
		}
	}
	assert.Equal(t, 1, links, "one link shown")
	require.NoError(t, <-browsed)
}
