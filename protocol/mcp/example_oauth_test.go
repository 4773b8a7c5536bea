package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"

	"golang.org/x/oauth2"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/protocol/mcp"
)

// A toolset that authorizes itself with OAuth 2.1: the user's browser
// opens the authorization page, and a loopback listener receives the
// redirect.
func ExampleWithOAuth() {
	redirects := make(chan *url.URL, 1)
	callback := &http.Server{Addr: "127.0.0.1:8976", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "Signed in: you may close this window.")
		select {
		case redirects <- r.URL:
		default:
		}
	})}
	go func() { _ = callback.ListenAndServe() }()
	defer callback.Close()

	browser := mcp.AuthorizerFunc(func(ctx context.Context, authURL string) (*url.URL, error) {
		if err := exec.CommandContext(ctx, "xdg-open", authURL).Run(); err != nil {
			return nil, err
		}
		select {
		case u := <-redirects:
			return u, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	ts, err := mcp.New(mcp.Config{Name: "tracker", URL: "https://mcp.example.com/mcp"},
		mcp.WithOAuth(mcp.OAuth{
			RedirectURL:   "http://127.0.0.1:8976/callback",
			Authorizer:    browser,
			ClientName:    "my-agent",
			OfflineAccess: true,
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ts.Close()
	// The first request that the server refuses with 401 runs the flow.
	_, _ = ts.Tools(context.Background())
}

// A web application signs its users in to an MCP server: each user has a
// toolset of their own (a toolset has one identity), the sign-in link goes
// to the page the user watches as a custom event of their run (AG-UI
// forwards it as a CUSTOM event), and the application's callback route
// hands the redirect back to the waiting sign-in.
func ExampleRedirects() {
	var redirects mcp.Redirects
	mux := http.NewServeMux()
	mux.Handle("GET /oauth/callback", &redirects) // or call redirects.Deliver from a page of your own

	show := func(ctx context.Context, authURL string) error {
		graph.EmitCustom(ctx, "sign_in", authURL) // the page opens it in a new tab
		return nil
	}
	toolsetFor := func(user string) (*mcp.Toolset, error) {
		return mcp.New(mcp.Config{Name: "tracker", URL: "https://mcp.example.com/mcp"},
			mcp.WithOAuth(mcp.OAuth{
				RedirectURL: "https://app.example.com/oauth/callback",
				Authorizer:  redirects.Authorizer(show),
				Store:       userTokens{user}, // tokens kept per user
			}))
	}
	ts, err := toolsetFor("ann")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ts.Close()
	_ = mux // served by the application's HTTP server
}

// userTokens keeps one user's tokens; a real store would use a database.
type userTokens struct{ user string }

func (userTokens) LoadToken(context.Context, string) (*oauth2.Token, error) { return nil, nil }
func (userTokens) SaveToken(context.Context, string, *oauth2.Token) error   { return nil }

// HeadlessAuthorizer follows an authorization server that grants at once.
func ExampleHeadlessAuthorizer() {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		back, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
		back.RawQuery = url.Values{"code": {"c-42"}, "state": {r.URL.Query().Get("state")}}.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}))
	defer as.Close()

	authURL := as.URL + "/authorize?" + url.Values{
		"redirect_uri": {"http://127.0.0.1:8976/callback"},
		"state":        {"s-1"},
	}.Encode()
	redirect, err := mcp.HeadlessAuthorizer{}.Authorize(context.Background(), authURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(redirect.Path, redirect.Query().Get("code"), redirect.Query().Get("state"))
	// Output: /callback c-42 s-1
}

// MemoryTokenStore keeps a token per server URL.
func ExampleMemoryTokenStore() {
	var store mcp.MemoryTokenStore
	ctx := context.Background()
	_ = store.SaveToken(ctx, "https://mcp.example.com/mcp", &oauth2.Token{AccessToken: "t-1", TokenType: "Bearer"})
	tok, _ := store.LoadToken(ctx, "https://mcp.example.com/mcp")
	none, _ := store.LoadToken(ctx, "https://other.example.com/mcp")
	fmt.Println(tok.AccessToken, none == nil)
	// Output: t-1 true
}
