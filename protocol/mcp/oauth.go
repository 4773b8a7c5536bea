package mcp

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultOAuthTimeout bounds each HTTP request the OAuth flow sends to the
// server's metadata and to the authorization server when OAuth.HTTPClient
// is nil.
const DefaultOAuthTimeout = 30 * time.Second

// DefaultSignInTimeout bounds the Authorizer's step of the authorization
// code grant (the person signing in) when OAuth.SignInTimeout is zero.
const DefaultSignInTimeout = 10 * time.Minute

// ErrAuthorization: the OAuth flow did not give the toolset a token: the
// authorization server or the user refused, the redirect carried no code,
// or the Authorizer failed. A server's 401 or 403 then fails the request.
var ErrAuthorization = errors.New("mcp: OAuth authorization failed")

// OAuth configures OAuth 2.1 authorization of a streamable HTTP server, as
// the MCP authorization spec describes it (see WithOAuth).
//
// The toolset discovers the rest from the server's 401 answer: the
// protected resource metadata (RFC 9728, from the WWW-Authenticate
// header's resource_metadata or the well-known paths), the authorization
// server's metadata (RFC 8414 or OpenID Connect discovery), and the scopes
// to ask for (the challenge's scope, else the resource's scopes_supported).
// It names the server in every authorization and token request (RFC 8707
// resource indicators) and uses PKCE (S256).
//
// The client is identified, in this order of preference, by its client ID
// metadata document (ClientMetadataURL) when the authorization server
// supports them, by the pre-registered ClientID, or by dynamic client
// registration (RFC 7591) under ClientName.
type OAuth struct {
	// RedirectURL is where the authorization server sends the user's
	// browser back with the code, for example a loopback URL the
	// application listens on. Required for the authorization code grant.
	RedirectURL string
	// Authorizer takes the user through the authorization server's page
	// and returns the redirect to RedirectURL. Required for the
	// authorization code grant.
	Authorizer Authorizer
	// SignInTimeout bounds the Authorizer's step, the person's time at
	// the authorization server. Zero means DefaultSignInTimeout. The
	// connection timeout (Config.ConnectTimeout) stands still meanwhile.
	SignInTimeout time.Duration

	// ClientID and ClientSecret name a client registered with the
	// authorization server beforehand; without a secret the client is
	// public.
	ClientID, ClientSecret string
	// ClientMetadataURL is the https URL of the client's ID metadata
	// document, used as its client ID where the authorization server
	// advertises client_id_metadata_document_supported.
	ClientMetadataURL string
	// ClientName is the client_name dynamic registration sends (default
	// "trellis").
	ClientName string

	// OfflineAccess asks for refresh tokens: dynamic registration declares
	// the refresh_token grant, and the offline_access scope is requested
	// where the authorization server lists it. Access tokens are refreshed
	// either way when the authorization server issues a refresh token.
	OfflineAccess bool

	// ClientCredentials uses the client_credentials grant (no user, no
	// browser) with ClientID and either ClientSecret or PrivateKey, instead
	// of the authorization code grant.
	ClientCredentials bool
	// PrivateKey signs a JWT client assertion (RFC 7523, private_key_jwt)
	// for the client_credentials grant: an ECDSA P-256 key signs with
	// ES256, an RSA key with RS256.
	PrivateKey crypto.Signer

	// CrossApp uses cross-app access (SEP-990, an extension) with ClientID
	// and ClientSecret as the client's credentials at the server's
	// authorization server, instead of the authorization code grant.
	CrossApp *CrossAppAccess

	// Store keeps the tokens, keyed by the Config's URL; a token found there
	// is sent until it expires or the server refuses it, and then the flow
	// runs again (refreshing needs the client registration and endpoints of
	// the flow that got the token, which only this toolset holds). The
	// default keeps them in memory for the toolset's life. A toolset has one
	// identity: for tokens per user, use a toolset per user.
	Store TokenStore

	// HTTPClient sends the requests for metadata, registration and tokens.
	// The default has a timeout of DefaultOAuthTimeout. The toolset's URL
	// checks (WithURLCheck) apply to these requests too.
	HTTPClient *http.Client
}

// WithOAuth makes the toolset authorize itself with OAuth 2.1 to a
// streamable HTTP server (the MCP authorization spec): when the server
// answers 401, or 403 with error="insufficient_scope" (scope step-up), the
// toolset runs the flow cfg describes and sends the request again once with
// the new token. Tokens are refreshed with the refresh token when they
// expire.
//
// The access token goes only to the server's origin: like every
// credential of the toolset it is dropped from a redirect to another origin
// (see WithCrossOriginRedirects), and the authorization server never sees
// it. New fails with ErrInvalidConfig when cfg is incomplete or the
// transport is not streamable HTTP.
func WithOAuth(cfg OAuth) Option {
	return func(o *options) {
		c := cfg
		o.oauth = &c
	}
}

// Authorizer takes the user through the authorization step of the
// authorization code grant: it shows them authURL (opens a browser) and
// returns the URL the authorization server redirected the browser to, which
// is the OAuth.RedirectURL with the code, state and iss query parameters
// (or error and error_description).
type Authorizer interface {
	Authorize(ctx context.Context, authURL string) (redirect *url.URL, err error)
}

// AuthorizerFunc adapts a function to an Authorizer.
type AuthorizerFunc func(ctx context.Context, authURL string) (*url.URL, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, authURL string) (*url.URL, error) {
	return f(ctx, authURL)
}

// HeadlessAuthorizer is an Authorizer without a user: it sends a GET to the
// authorization URL and takes the redirect the authorization server answers
// with. It suits authorization servers that grant at once (a test server,
// a consent given before), not ones that show a login page.
type HeadlessAuthorizer struct {
	// Client sends the request; its redirects are not followed. The
	// default has a timeout of DefaultOAuthTimeout.
	Client *http.Client
}

// Authorize gets authURL and returns the URL of its redirect.
func (a HeadlessAuthorizer) Authorize(ctx context.Context, authURL string) (*url.URL, error) {
	c := http.Client{Timeout: DefaultOAuthTimeout}
	if a.Client != nil {
		c = *a.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	loc, err := resp.Location()
	if err != nil {
		return nil, fmt.Errorf("the authorization endpoint answered %s without a redirect: %w", resp.Status, err)
	}
	return loc, nil
}

// TokenStore keeps a toolset's OAuth tokens, for example in the user's
// keychain or an encrypted table. server is the Config's URL. Implementations
// must be safe for concurrent use.
type TokenStore interface {
	// LoadToken returns the token kept for server, or nil and no error when
	// there is none.
	LoadToken(ctx context.Context, server string) (*oauth2.Token, error)
	// SaveToken keeps tok for server, replacing the one kept before.
	SaveToken(ctx context.Context, server string, tok *oauth2.Token) error
}

// MemoryTokenStore is a TokenStore in memory, the default. The zero value is
// ready to use.
type MemoryTokenStore struct {
	mu     sync.Mutex
	tokens map[string]oauth2.Token
}

// LoadToken returns a copy of the token kept for server, or nil.
func (m *MemoryTokenStore) LoadToken(_ context.Context, server string) (*oauth2.Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tok, ok := m.tokens[server]
	if !ok {
		return nil, nil
	}
	return &tok, nil
}

// SaveToken keeps a copy of tok for server.
func (m *MemoryTokenStore) SaveToken(_ context.Context, server string, tok *oauth2.Token) error {
	if tok == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string]oauth2.Token{}
	}
	m.tokens[server] = *tok
	return nil
}

// defaultClientName is the client_name of dynamic registration.
const defaultClientName = "trellis"

// oauthFor builds the OAuth handler of WithOAuth for the server cfg
// describes.
func oauthFor(cfg Config, o *options) (auth.OAuthHandler, error) {
	if o.transportFunc != nil || cfg.transport() != TransportStreamableHTTP {
		return nil, errors.New("OAuth needs the streamable HTTP transport")
	}
	return newOAuthHandler(*o.oauth, cfg.URL, o.urlChecks)
}

// newOAuthHandler builds the handler the streamable transport consults for
// cfg's server. checks are the toolset's URL checks.
func newOAuthHandler(c OAuth, server string, checks []func(*url.URL) error) (auth.OAuthHandler, error) {
	if c.SignInTimeout < 0 {
		return nil, errors.New("OAuth.SignInTimeout must not be negative")
	}
	httpClient := &http.Client{Timeout: DefaultOAuthTimeout}
	if c.HTTPClient != nil {
		*httpClient = *c.HTTPClient
	}
	if len(checks) > 0 {
		base := httpClient.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		httpClient.Transport = checkedTransport{base: base, checks: slices.Clone(checks)}
	}
	store := c.Store
	if store == nil {
		store = &MemoryTokenStore{}
	}
	if c.CrossApp != nil {
		if c.ClientCredentials {
			return nil, errors.New("OAuth takes ClientCredentials or CrossApp, not both")
		}
		inner, err := newCrossAppHandler(c, httpClient)
		if err != nil {
			return nil, err
		}
		return &oauthHandler{inner: inner, store: store, server: server}, nil
	}
	if c.ClientCredentials {
		inner, err := newClientCredentialsHandler(c, httpClient)
		if err != nil {
			return nil, err
		}
		return &oauthHandler{inner: inner, store: store, server: server}, nil
	}
	if c.Authorizer != nil {
		c.Authorizer = signIn{inner: c.Authorizer, timeout: c.SignInTimeout}
	}
	inner, err := newAuthorizationCodeHandler(c, httpClient)
	if err != nil {
		return nil, err
	}
	return &oauthHandler{inner: inner, legacy: &legacyFlow{c: c, client: httpClient}, store: store, server: server}, nil
}

// signIn runs an application's Authorizer: for at most its timeout
// (DefaultSignInTimeout when zero), with the clock of the connection
// attempt it belongs to, if any, stopped meanwhile, so that a person who
// takes longer to sign in than a server may take to answer still can.
type signIn struct {
	inner   Authorizer
	timeout time.Duration
}

// Authorize calls the inner Authorizer.
func (s signIn) Authorize(ctx context.Context, authURL string) (*url.URL, error) {
	d := s.timeout
	if d <= 0 {
		d = DefaultSignInTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	resume := pauseConnectClock(ctx)
	defer resume()
	return s.inner.Authorize(ctx, authURL)
}

// newAuthorizationCodeHandler builds the go-sdk's handler of the
// authorization code grant from c.
func newAuthorizationCodeHandler(c OAuth, httpClient *http.Client) (auth.OAuthHandler, error) {
	if c.RedirectURL == "" || c.Authorizer == nil {
		return nil, errors.New("OAuth needs a RedirectURL and an Authorizer (or ClientCredentials)")
	}
	if c.PrivateKey != nil {
		return nil, errors.New("OAuth.PrivateKey is for the client_credentials grant")
	}
	name := c.ClientName
	if name == "" {
		name = defaultClientName
	}
	grants := []string{"authorization_code"}
	if c.OfflineAccess {
		grants = append(grants, "refresh_token")
	}
	authorizer := c.Authorizer
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: c.RedirectURL,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:    name,
				RedirectURIs:  []string{c.RedirectURL},
				GrantTypes:    grants,
				ResponseTypes: []string{"code"},
			},
		},
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			redirect, err := authorizer.Authorize(ctx, args.URL)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrAuthorization, err)
			}
			return authorizationResult(redirect)
		},
		RequestRefreshToken: c.OfflineAccess,
		Client:              httpClient,
	}
	if c.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: c.ClientMetadataURL}
	}
	if c.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: c.ClientID}
		if c.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.ClientSecret}
		}
	}
	return auth.NewAuthorizationCodeHandler(cfg)
}

// authorizationResult reads the code, state and issuer of the redirect to
// the client's redirect URL, or the error it carries (RFC 6749 §4.1.2.1).
func authorizationResult(redirect *url.URL) (*auth.AuthorizationResult, error) {
	if redirect == nil {
		return nil, fmt.Errorf("%w: no redirect", ErrAuthorization)
	}
	q := redirect.Query()
	if e := q.Get("error"); e != "" {
		msg := quoteN(e, maxQuoted)
		if d := q.Get("error_description"); d != "" {
			msg += ": " + quoteN(d, maxShownURL)
		}
		return nil, fmt.Errorf("%w: the authorization server answered %s", ErrAuthorization, msg)
	}
	if q.Get("code") == "" {
		return nil, fmt.Errorf("%w: the redirect carries no code", ErrAuthorization)
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}

// newClientCredentialsHandler builds the handler of the client_credentials
// grant: the go-sdk's for a client secret, this package's for a private
// key JWT.
func newClientCredentialsHandler(c OAuth, httpClient *http.Client) (auth.OAuthHandler, error) {
	if c.ClientID == "" {
		return nil, errors.New("OAuth.ClientCredentials needs a ClientID")
	}
	switch {
	case c.PrivateKey != nil && c.ClientSecret != "":
		return nil, errors.New("OAuth.ClientCredentials takes a ClientSecret or a PrivateKey, not both")
	case c.PrivateKey != nil:
		return newJWTClientHandler(c.ClientID, c.PrivateKey, httpClient)
	case c.ClientSecret != "":
		return extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{
				ClientID:         c.ClientID,
				ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: c.ClientSecret},
			},
			HTTPClient: httpClient,
		})
	}
	return nil, errors.New("OAuth.ClientCredentials needs a ClientSecret or a PrivateKey")
}

// checkedTransport sends a request only to a URL every check passes.
type checkedTransport struct {
	base   http.RoundTripper
	checks []func(*url.URL) error
}

// RoundTrip runs the checks on req's URL, then sends it.
func (t checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for _, check := range t.checks {
		if err := check(req.URL); err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, fmt.Errorf("%w: %s: %w", ErrURLRefused, showURL(req.URL), err)
		}
	}
	return t.base.RoundTrip(req)
}

// oauthHandler wraps the flow's handler with the token store: before the
// flow has run it offers the stored token, and it saves every new token the
// flow or a refresh gives.
type oauthHandler struct {
	inner  auth.OAuthHandler
	legacy *legacyFlow // for 2025-03-26 servers; nil for client credentials
	store  TokenStore
	server string

	mu        sync.Mutex
	saved     string // the access token last saved
	useLegacy bool   // the legacy flow gave the current token
}

// TokenSource returns the flow's token source, which saves what it gives,
// or, before the flow ran, the stored token.
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	useLegacy := h.useLegacy
	h.mu.Unlock()
	var src oauth2.TokenSource
	var err error
	if useLegacy {
		src = h.legacy.source()
	} else if src, err = h.inner.TokenSource(ctx); err != nil {
		return nil, err
	}
	if src != nil {
		return savingSource{h: h, ctx: context.WithoutCancel(ctx), src: src}, nil
	}
	tok, err := h.store.LoadToken(ctx, h.server)
	if err != nil {
		return nil, fmt.Errorf("mcp: loading the OAuth token: %w", err)
	}
	if tok == nil || tok.AccessToken == "" || !tok.Valid() {
		return nil, nil
	}
	return oauth2.StaticTokenSource(tok), nil
}

// Authorize runs the flow; when the go-sdk's fails on a server without
// resource metadata, it runs the 2025-03-26 flow. Its errors match
// ErrAuthorization.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	err := h.inner.Authorize(ctx, req, resp)
	if err == nil {
		h.setLegacy(false)
	} else if h.legacy != nil && ctx.Err() == nil {
		challenges, perr := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		if perr == nil && h.legacy.applies(ctx, challenges, req.URL) {
			if lerr := h.legacy.authorize(ctx, challenges, req.URL); lerr != nil {
				err = fmt.Errorf("%w (2025-03-26 flow: %w)", err, lerr)
			} else {
				h.setLegacy(true)
				err = nil
			}
		}
	}
	if err != nil && !errors.Is(err, ErrAuthorization) {
		err = fmt.Errorf("%w: %w", ErrAuthorization, err)
	}
	return err
}

// setLegacy records which flow gave the current token.
func (h *oauthHandler) setLegacy(v bool) {
	h.mu.Lock()
	h.useLegacy = v
	h.mu.Unlock()
}

// save keeps tok in the store when it is new.
func (h *oauthHandler) save(ctx context.Context, tok *oauth2.Token) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if tok.AccessToken == h.saved {
		return nil
	}
	if err := h.store.SaveToken(ctx, h.server, tok); err != nil {
		return fmt.Errorf("mcp: saving the OAuth token: %w", err)
	}
	h.saved = tok.AccessToken
	return nil
}

// savingSource saves the tokens its source gives.
type savingSource struct {
	h   *oauthHandler
	ctx context.Context
	src oauth2.TokenSource
}

// Token returns the source's token after saving it.
func (s savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.src.Token()
	if err != nil || tok == nil {
		return tok, err
	}
	if err := s.h.save(s.ctx, tok); err != nil {
		return nil, err
	}
	return tok, nil
}
