package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
)

// Redirects hands the redirects an authorization server sends a person's
// browser to (OAuth.RedirectURL) to the sign-ins waiting for them, matched
// by their state parameter. It is the browser step of the authorization
// code grant for a command-line program (served on a loopback listener)
// and for a web application (a route of its own server), for any number of
// sign-ins at once, of one person or many. The zero value is ready to use.
type Redirects struct {
	mu      sync.Mutex
	waiting map[string]chan *url.URL // by state
}

// Authorizer returns an Authorizer that shows the person the
// authorization URL with show (a CLI opens a browser or prints the link; a
// web application sends the link to the person's page) and waits for the
// redirect that carries the URL's state, until ctx ends (the sign-in's
// timeout, OAuth.SignInTimeout, included).
func (r *Redirects) Authorizer(show func(ctx context.Context, authURL string) error) Authorizer {
	return AuthorizerFunc(func(ctx context.Context, authURL string) (*url.URL, error) {
		u, err := url.Parse(authURL)
		if err != nil {
			return nil, fmt.Errorf("the authorization URL: %w", err)
		}
		state := u.Query().Get("state")
		if state == "" {
			return nil, errors.New("the authorization URL carries no state to match its redirect by")
		}
		ch := make(chan *url.URL, 1)
		r.mu.Lock()
		if r.waiting == nil {
			r.waiting = map[string]chan *url.URL{}
		}
		if _, dup := r.waiting[state]; dup {
			r.mu.Unlock()
			return nil, errors.New("another sign-in waits for a redirect with the same state")
		}
		r.waiting[state] = ch
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			if r.waiting[state] == ch {
				delete(r.waiting, state)
			}
			r.mu.Unlock()
		}()
		if err := show(ctx, authURL); err != nil {
			return nil, fmt.Errorf("showing the authorization page: %w", err)
		}
		select {
		case redirect := <-ch:
			return redirect, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the person to sign in: %w", ctx.Err())
		}
	})
}

// Deliver hands u, a URL the authorization server redirected a browser to,
// to the sign-in waiting for its state, and reports whether one was: false
// for a state no sign-in waits for (unknown, already used, or of a sign-in
// that gave up).
func (r *Redirects) Deliver(u *url.URL) bool {
	if u == nil {
		return false
	}
	state := u.Query().Get("state")
	r.mu.Lock()
	ch, ok := r.waiting[state]
	if ok {
		delete(r.waiting, state)
	}
	r.mu.Unlock()
	if !ok {
		return false
	}
	ch <- u
	return true
}

// ServeHTTP serves the route of OAuth.RedirectURL: it delivers the
// request's URL (see Deliver) and tells the person they may close the
// page, or answers 400 Bad Request when no sign-in waits for it. An
// application that wants a page of its own calls Deliver from its handler.
func (r *Redirects) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !r.Deliver(req.URL) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintln(w, "No sign-in is waiting for this page: it may have timed out. Try again from the application.")
		return
	}
	fmt.Fprintln(w, "Signed in: you may close this window.")
}
