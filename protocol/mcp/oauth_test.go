package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// fakeAS is an authorization server speaking RFC 8414 metadata, RFC 7591
// registration, the authorization code grant with PKCE and the refresh
// token grant. It grants at once: /authorize redirects with a code.
type fakeAS struct {
	url         string
	issuerPath  string
	expiresIn   int      // of the access tokens it issues
	authMethods []string // token_endpoint_auth_methods_supported; default none
	// grants is called for the grant types the server knows no rule
	// of: it returns the scopes to grant, or an OAuth error code.
	grants func(r *http.Request) (scopes []string, oauthErr string)

	mu         sync.Mutex
	n          int
	codes      map[string]grant    // code -> what it grants
	refresh    map[string][]string // refresh token -> scopes
	tokens     map[string][]string // access token -> scopes
	authorized []url.Values        // the queries of /authorize
	tokenForms []url.Values        // the forms of /token
	authHeader []string            // the Authorization headers it received
}

// grant is what an authorization code stands for.
type grant struct {
	challenge string
	scopes    []string
}

func newFakeAS(t *testing.T) *fakeAS {
	a := &fakeAS{expiresIn: 3600, codes: map[string]grant{}, refresh: map[string][]string{}, tokens: map[string][]string{}}
	a.url = serveHTTP(t, a.routes())
	return a
}

// routes returns the server's handler; its URLs start with a.url, its
// issuer is a.url followed by a.issuerPath.
func (a *fakeAS) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		methods := a.authMethods
		if methods == nil {
			methods = []string{"none"}
		}
		writeJSON(w, http.StatusOK, oauthex.AuthServerMeta{
			Issuer:                            a.url + a.issuerPath,
			AuthorizationEndpoint:             a.url + "/authorize",
			TokenEndpoint:                     a.url + "/token",
			RegistrationEndpoint:              a.url + "/register",
			ResponseTypesSupported:            []string{"code"},
			GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
			CodeChallengeMethodsSupported:     []string{"S256"},
			TokenEndpointAuthMethodsSupported: methods,
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var meta oauthex.ClientRegistrationMetadata
		_ = json.NewDecoder(r.Body).Decode(&meta)
		writeJSON(w, http.StatusCreated, map[string]any{"client_id": "registered", "redirect_uris": meta.RedirectURIs})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		a.authorized = append(a.authorized, q)
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		if q.Get("code_challenge_method") == "S256" && q.Get("code_challenge") != "" {
			a.codes[code] = grant{challenge: q.Get("code_challenge"), scopes: strings.Fields(q.Get("scope"))}
		}
		a.mu.Unlock()
		back, err := url.Parse(q.Get("redirect_uri"))
		if err != nil {
			http.Error(w, "bad redirect_uri", http.StatusBadRequest)
			return
		}
		bq := back.Query()
		bq.Set("code", code)
		bq.Set("state", q.Get("state"))
		back.RawQuery = bq.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		a.tokenForms = append(a.tokenForms, r.PostForm)
		var scopes []string
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			g, ok := a.codes[r.PostForm.Get("code")]
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
			delete(a.codes, r.PostForm.Get("code"))
			scopes = g.scopes
		case "refresh_token":
			s, ok := a.refresh[r.PostForm.Get("refresh_token")]
			if !ok {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
				return
			}
			scopes = s
		default:
			e := "unsupported_grant_type"
			if a.grants != nil {
				scopes, e = a.grants(r)
			}
			if e != "" {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": e})
				return
			}
		}
		a.n++
		access, refresh := fmt.Sprintf("access-%d", a.n), fmt.Sprintf("refresh-%d", a.n)
		a.tokens[access] = scopes
		a.refresh[refresh] = scopes
		writeJSON(w, http.StatusOK, map[string]any{
			"access_token": access, "token_type": "Bearer", "expires_in": a.expiresIn,
			"refresh_token": refresh, "scope": strings.Join(scopes, " "),
		})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.authHeader = append(a.authHeader, r.Header.Get("Authorization"))
		a.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// issue makes an access token the server accepts.
func (a *fakeAS) issue(scopes ...string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	tok := fmt.Sprintf("access-%d", a.n)
	a.tokens[tok] = scopes
	return tok
}

// scopesOf returns the scopes of an access token, or false for an unknown
// one.
func (a *fakeAS) scopesOf(tok string) ([]string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.tokens[tok]
	return s, ok
}

// seen returns copies of what the server received.
func (a *fakeAS) seen() (authorized, tokenForms []url.Values, headers []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.authorized), slices.Clone(a.tokenForms), slices.Clone(a.authHeader)
}

// protectedServer serves the MCP handler h at /mcp behind bearer tokens of
// as, and its protected resource metadata (RFC 9728) at the well-known
// path. need gives the scopes a JSON-RPC method needs; a 401 challenge asks
// for base, a 403 for what the method needs. It returns the /mcp URL.
func protectedServer(t *testing.T, as *fakeAS, h http.Handler, base []string, need func(method string) []string) string {
	var endpoint string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:             endpoint,
			AuthorizationServers: []string{as.url},
			ScopesSupported:      base,
		}).ServeHTTP(w, r)
	})
	mux.Handle("/mcp", as.protect(h, func() string {
		return strings.TrimSuffix(endpoint, "/mcp") + "/.well-known/oauth-protected-resource/mcp"
	}, base, need))
	endpoint = serveHTTP(t, mux) + "/mcp"
	return endpoint
}

// protect serves h to requests with a token of as that has the scopes need
// gives for the request's method. metadata gives the challenge's
// resource_metadata, if any.
func (as *fakeAS) protect(h http.Handler, metadata func() string, base []string, need func(method string) []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		have, known := as.scopesOf(tok)
		if !ok || !known {
			params := []string{}
			if m := metadata(); m != "" {
				params = append(params, fmt.Sprintf(`resource_metadata=%q`, m))
			}
			if len(base) > 0 {
				params = append(params, fmt.Sprintf(`scope=%q`, strings.Join(base, " ")))
			}
			challenge := strings.TrimSpace("Bearer " + strings.Join(params, ", "))
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		want := need(msg.Method)
		for _, s := range want {
			if !slices.Contains(have, s) {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`, strings.Join(want, " "), metadata()))
				http.Error(w, "forbidden", http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// listAndCall lists the tools of the server at endpoint through a toolset
// with opts and calls one, which must succeed.
func listAndCall(ctx context.Context, t *testing.T, endpoint string, opts ...Option) {
	t.Helper()
	ts, err := New(Config{Name: "p", URL: endpoint}, opts...)
	require.NoError(t, err)
	defer ts.Close()
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	r := call(ctx, find(t, tools, "add"), `{"a":1,"b":2}`)
	require.False(t, r.IsError, r.Text())
}

// always needs the same scopes for every method.
func always(scopes ...string) func(string) []string {
	return func(string) []string { return scopes }
}

// oauthOptions returns the options of a toolset that authorizes itself
// without a browser, keeping its tokens in store.
func oauthOptions(store TokenStore) []Option {
	return []Option{WithReconnect(0), WithOAuth(OAuth{
		RedirectURL: "http://127.0.0.1:1/callback",
		Authorizer:  HeadlessAuthorizer{},
		Store:       store,
	})}
}

// The toolset finds the authorization server through the resource
// metadata, registers, sends the user through /authorize with an S256 PKCE
// challenge and the server as resource, redeems the code with the verifier,
// and calls with the token, which it keeps in the store.
func TestOAuthAuthorizesWithPKCEAndResourceIndicator(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), []string{"tools"}, always("tools"))
	store := &MemoryTokenStore{}

	ctx := ctxT(t, 10*time.Second)
	listAndCall(ctx, t, endpoint, oauthOptions(store)...)

	authorized, forms, _ := as.seen()
	require.Len(t, authorized, 1, "one authorization")
	q := authorized[0]
	assert.Equal(t, "S256", q.Get("code_challenge_method"))
	assert.Equal(t, endpoint, q.Get("resource"), "RFC 8707 resource indicator")
	assert.Equal(t, "registered", q.Get("client_id"), "the dynamically registered client")
	assert.Equal(t, "tools", q.Get("scope"), "the challenge's scope")
	require.NotEmpty(t, forms)
	assert.Equal(t, "authorization_code", forms[0].Get("grant_type"))
	assert.NotEmpty(t, forms[0].Get("code_verifier"))
	assert.Equal(t, endpoint, forms[0].Get("resource"))

	tok, err := store.LoadToken(ctx, endpoint)
	require.NoError(t, err)
	require.NotNil(t, tok)
	_, known := as.scopesOf(tok.AccessToken)
	assert.True(t, known, "the stored token is one the server issued")
}

// A token that expired is refreshed with the refresh token, without a new
// authorization.
func TestOAuthRefreshesExpiredToken(t *testing.T) {
	as := newFakeAS(t)
	// oauth2 counts a token as expired 10 s before its expiry: these
	// expire as soon as they are issued.
	as.expiresIn = 1
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), nil, always())

	ctx := ctxT(t, 10*time.Second)
	listAndCall(ctx, t, endpoint, oauthOptions(nil)...)

	authorized, forms, _ := as.seen()
	assert.Len(t, authorized, 1, "no new authorization")
	var refreshes int
	for _, f := range forms {
		if f.Get("grant_type") == "refresh_token" {
			refreshes++
			assert.NotEmpty(t, f.Get("refresh_token"))
		}
	}
	assert.Positive(t, refreshes, "the token was refreshed")
}

// A 403 insufficient_scope answer to a call makes the toolset authorize
// again for the scopes it had and those the challenge asks, then call.
func TestOAuthStepsUpScopeOnInsufficientScope(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), []string{"read"}, func(method string) []string {
		if method == "tools/call" {
			return []string{"read", "write"}
		}
		return []string{"read"}
	})

	ctx := ctxT(t, 10*time.Second)
	listAndCall(ctx, t, endpoint, oauthOptions(nil)...)

	authorized, _, _ := as.seen()
	require.Len(t, authorized, 2, "a first authorization, then the step-up")
	assert.Equal(t, []string{"read"}, strings.Fields(authorized[0].Get("scope")))
	assert.ElementsMatch(t, []string{"read", "write"}, strings.Fields(authorized[1].Get("scope")))
}

// A 2025-03-26 server without resource metadata is its own authorization
// server: its metadata at the root is used even when it names an issuer
// with a path, and the grant uses PKCE.
func TestOAuthAuthorizesAtLegacyServerWithoutResourceMetadata(t *testing.T) {
	as := &fakeAS{issuerPath: "/oauth", expiresIn: 3600, codes: map[string]grant{}, refresh: map[string][]string{}, tokens: map[string][]string{}}
	srv, _ := newFixtureServer(t, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", as.protect(srv.Handler(nil), func() string { return "" }, nil, always()))
	mux.Handle("/", as.routes())
	as.url = serveHTTP(t, mux)
	endpoint := as.url + "/mcp"

	ctx := ctxT(t, 10*time.Second)
	listAndCall(ctx, t, endpoint, oauthOptions(nil)...)

	authorized, forms, _ := as.seen()
	require.Len(t, authorized, 1)
	assert.Equal(t, "S256", authorized[0].Get("code_challenge_method"))
	assert.Equal(t, "registered", authorized[0].Get("client_id"))
	require.NotEmpty(t, forms)
	assert.NotEmpty(t, forms[0].Get("code_verifier"))
}

// A token in the store is sent at once: no authorization is needed.
func TestOAuthSendsStoredToken(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), nil, always())
	store := &MemoryTokenStore{}
	ctx := ctxT(t, 10*time.Second)
	require.NoError(t, store.SaveToken(ctx, endpoint, &oauth2.Token{AccessToken: as.issue(), TokenType: "Bearer"}))

	ts, err := New(Config{Name: "p", URL: endpoint}, oauthOptions(store)...)
	require.NoError(t, err)
	defer ts.Close()
	require.NoError(t, ts.Init(ctx))
	authorized, forms, _ := as.seen()
	assert.Empty(t, authorized)
	assert.Empty(t, forms)
}

// The access token goes to the server's origin only: not to the
// authorization server, nor to another origin the server redirects to.
func TestOAuthTokenNeverLeavesServerOrigin(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	var other recorder
	otherURL := serveHTTP(t, other.wrap(srv.Handler(nil))) + "/mcp"
	var mine recorder
	endpoint := protectedServer(t, as, mine.wrap(redirectTo(http.StatusTemporaryRedirect, otherURL)), nil, always())

	ctx := ctxT(t, 10*time.Second)
	listAndCall(ctx, t, endpoint, append(oauthOptions(nil), WithCrossOriginRedirects())...)

	require.NotEmpty(t, mine.requests())
	for _, s := range mine.requests() {
		assert.True(t, strings.HasPrefix(s.auth, "Bearer access-"), "the server gets the token: %+v", s)
	}
	require.NotEmpty(t, other.requests(), "the redirect was followed")
	for i, s := range other.requests() {
		assert.Empty(t, s.auth, "request %d to the other origin carries the token", i)
	}
	_, _, headers := as.seen()
	for _, h := range headers {
		assert.False(t, strings.HasPrefix(h, "Bearer"), "the authorization server got a bearer token: %q", h)
	}
}

// A redirect carrying an OAuth error fails the connection with
// ErrAuthorization.
func TestOAuthDeniedAuthorizationFailsWithErrAuthorization(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), nil, always())
	deny := AuthorizerFunc(func(context.Context, string) (*url.URL, error) {
		return url.Parse("http://127.0.0.1:1/callback?error=access_denied&error_description=no")
	})
	ts, err := New(Config{Name: "p", URL: endpoint}, WithReconnect(0), WithOAuth(OAuth{
		RedirectURL: "http://127.0.0.1:1/callback", Authorizer: deny,
	}))
	require.NoError(t, err)
	defer ts.Close()
	err = ts.Init(ctxT(t, 10*time.Second))
	require.ErrorIs(t, err, ErrAuthorization)
	assert.Contains(t, err.Error(), "access_denied")
}

// WithOAuth needs the streamable HTTP transport and a complete
// configuration.
func TestWithOAuthRejectsIncompleteConfig(t *testing.T) {
	full := OAuth{RedirectURL: "http://127.0.0.1:1/cb", Authorizer: HeadlessAuthorizer{}}
	for name, c := range map[string]struct {
		cfg   Config
		oauth OAuth
	}{
		"sse":                 {Config{URL: "http://127.0.0.1:1/sse", Transport: TransportSSE}, full},
		"stdio":               {Config{Command: "true"}, full},
		"no authorizer":       {Config{URL: "http://127.0.0.1:1/mcp"}, OAuth{RedirectURL: "http://127.0.0.1:1/cb"}},
		"credentials no id":   {Config{URL: "http://127.0.0.1:1/mcp"}, OAuth{ClientCredentials: true, ClientSecret: "s"}},
		"credentials nothing": {Config{URL: "http://127.0.0.1:1/mcp"}, OAuth{ClientCredentials: true, ClientID: "c"}},
		"negative sign-in":    {Config{URL: "http://127.0.0.1:1/mcp"}, OAuth{RedirectURL: "http://127.0.0.1:1/cb", Authorizer: HeadlessAuthorizer{}, SignInTimeout: -time.Second}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := New(c.cfg, WithOAuth(c.oauth))
			require.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
}

// The redirect's code, state and issuer are read; an error or a missing
// code fails with ErrAuthorization.
func TestAuthorizationResultReadsRedirect(t *testing.T) {
	u, _ := url.Parse("http://localhost/cb?code=c1&state=s1&iss=https%3A%2F%2Fas")
	res, err := authorizationResult(u)
	require.NoError(t, err)
	assert.Equal(t, "c1", res.Code)
	assert.Equal(t, "s1", res.State)
	assert.Equal(t, "https://as", res.Iss)
	for _, raw := range []string{"http://localhost/cb?state=s", "http://localhost/cb?error=invalid_scope&code=c"} {
		u, _ := url.Parse(raw)
		_, err := authorizationResult(u)
		require.ErrorIs(t, err, ErrAuthorization, raw)
	}
	_, err = authorizationResult(nil)
	require.ErrorIs(t, err, ErrAuthorization)
}

// FuzzAuthorizationResult feeds redirects the authorization server (or
// whoever reaches the redirect URL) controls: the result is a code or an
// ErrAuthorization, and the error stays short.
func FuzzAuthorizationResult(f *testing.F) {
	f.Add("http://localhost/cb?code=c&state=s")
	f.Add("http://localhost/cb?error=access_denied&error_description=" + strings.Repeat("x", 500))
	f.Add("http://localhost/cb?code=&iss=%zz")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		res, err := authorizationResult(u)
		if err != nil {
			require.ErrorIs(t, err, ErrAuthorization)
			require.Less(t, len(err.Error()), 600)
			return
		}
		require.NotEmpty(t, res.Code)
	})
}

// FuzzLegacyMetadata feeds the metadata document a 2025-03-26 server
// serves: what is accepted names an issuer on the server's origin and
// http(s) endpoints.
func FuzzLegacyMetadata(f *testing.F) {
	f.Add(`{"issuer":"http://127.0.0.1:8080/oauth","authorization_endpoint":"http://127.0.0.1:8080/authorize","token_endpoint":"http://127.0.0.1:8080/token"}`)
	f.Add(`{"issuer":"http://evil.example","authorization_endpoint":"javascript:alert(1)","token_endpoint":"x"}`)
	f.Add(`{"issuer":"http://127.0.0.1:8080","authorization_endpoint":"http://127.0.0.1:8080/a","token_endpoint":"http://h/t","registration_endpoint":"ftp://h/r"}`)
	origin := &url.URL{Scheme: "http", Host: "127.0.0.1:8080"}
	f.Fuzz(func(t *testing.T, body string) {
		meta, err := legacyMetadata([]byte(body), origin)
		if err != nil {
			return
		}
		iss, err := url.Parse(meta.Issuer)
		require.NoError(t, err)
		require.Equal(t, originOf(origin), originOf(iss))
		for _, e := range []string{meta.AuthorizationEndpoint, meta.TokenEndpoint} {
			u, err := url.Parse(e)
			require.NoError(t, err)
			require.Contains(t, []string{"http", "https"}, u.Scheme)
			require.NotEmpty(t, u.Host)
		}
	})
}

// A person may take longer to sign in than the connection timeout lets a
// server take to answer: the connection attempt's clock stands still
// while the Authorizer runs.
func TestOAuthSignInOutlastsTheConnectTimeout(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), []string{"tools"}, always("tools"))
	const connectTimeout = time.Second
	slow := AuthorizerFunc(func(ctx context.Context, authURL string) (*url.URL, error) {
		select { // the person reads the page for longer than connectTimeout
		case <-time.After(2 * connectTimeout):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return HeadlessAuthorizer{}.Authorize(ctx, authURL)
	})
	ctx := ctxT(t, 30*time.Second)
	ts, err := New(Config{Name: "p", URL: endpoint, ConnectTimeout: connectTimeout}, WithReconnect(0),
		WithOAuth(OAuth{RedirectURL: "http://127.0.0.1:1/callback", Authorizer: slow}))
	require.NoError(t, err)
	defer ts.Close()
	tools, err := ts.Tools(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, tools)
}

// SignInTimeout bounds the Authorizer's step: a person who never comes
// back fails the request with ErrAuthorization.
func TestOAuthSignInTimeoutEndsAnAbandonedSignIn(t *testing.T) {
	as := newFakeAS(t)
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), []string{"tools"}, always("tools"))
	never := AuthorizerFunc(func(ctx context.Context, _ string) (*url.URL, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx := ctxT(t, 30*time.Second)
	ts, err := New(Config{Name: "p", URL: endpoint, ConnectTimeout: 20 * time.Second}, WithReconnect(0),
		WithOAuth(OAuth{RedirectURL: "http://127.0.0.1:1/callback", Authorizer: never, SignInTimeout: 100 * time.Millisecond}))
	require.NoError(t, err)
	defer ts.Close()
	_, err = ts.Tools(ctx)
	require.ErrorIs(t, err, ErrAuthorization)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, ctx.Err(), "the sign-in ended before the test's own deadline")
}
