package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// maxMetadata bounds the metadata documents the legacy flow reads.
const maxMetadata = 1 << 20

// legacyFlow is the authorization code grant of the 2025-03-26 MCP spec,
// for a server that publishes no protected resource metadata: the
// authorization server is the server's origin, its metadata is at the
// origin's /.well-known/oauth-authorization-server, and without metadata
// its endpoints are /authorize, /token and /register there.
//
// The go-sdk's flow handles such servers too, but it holds their metadata
// to RFC 8414's rule that the issuer be the URL the metadata was found
// for, the origin; 2025-03-26 servers may name another issuer (the origin
// with a path). This flow runs when the go-sdk's failed and the server has
// no resource metadata, and accepts any issuer on the server's own origin:
// the origin is the authorization server by the 2025-03-26 rule whatever
// the document says.
type legacyFlow struct {
	c      OAuth
	client *http.Client

	mu  sync.Mutex
	src oauth2.TokenSource
}

// source returns the token source of the last authorization, or nil.
func (l *legacyFlow) source() oauth2.TokenSource {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src
}

// applies reports whether server publishes no resource metadata at any
// place the spec lists, so that the 2025-03-26 rules apply.
func (l *legacyFlow) applies(ctx context.Context, challenges []oauthex.Challenge, server *url.URL) bool {
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["resource_metadata"] != "" {
			return false
		}
	}
	at := url.URL{Scheme: server.Scheme, Host: server.Host, Path: "/.well-known/oauth-protected-resource"}
	places := []string{at.String()}
	if p := strings.Trim(server.Path, "/"); p != "" {
		places = append([]string{at.String() + "/" + p}, places...)
	}
	for _, u := range places {
		status, _, err := l.get(ctx, u)
		if err != nil || status != http.StatusNotFound {
			return false
		}
	}
	return true
}

// get sends a GET to u and returns the status and at most maxMetadata
// bytes of the body.
func (l *legacyFlow) get(ctx context.Context, u string) (int, []byte, error) {
	return getMetadata(ctx, l.client, u)
}

// getMetadata sends a GET for a JSON document to u and returns the status
// and at most maxMetadata bytes of the body.
func getMetadata(ctx context.Context, client *http.Client, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	return resp.StatusCode, body, err
}

// metadata returns the authorization server metadata at origin, or the
// default endpoints when there is none.
func (l *legacyFlow) metadata(ctx context.Context, origin *url.URL) (*oauthex.AuthServerMeta, error) {
	base := origin.String()
	status, body, err := l.get(ctx, base+"/.well-known/oauth-authorization-server")
	if err != nil {
		return nil, err
	}
	switch {
	case status == http.StatusNotFound:
		return &oauthex.AuthServerMeta{
			Issuer:                base,
			AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint:         base + "/token",
			RegistrationEndpoint:  base + "/register",
		}, nil
	case status != http.StatusOK:
		return nil, fmt.Errorf("authorization server metadata: status %d", status)
	}
	return legacyMetadata(body, origin)
}

// legacyMetadata reads the authorization server metadata body found at
// origin: its issuer must be on origin, its endpoints http(s) URLs.
func legacyMetadata(body []byte, origin *url.URL) (*oauthex.AuthServerMeta, error) {
	var meta oauthex.AuthServerMeta
	if err := json.Unmarshal(body, &meta); err != nil {
		return nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	iss, err := url.Parse(meta.Issuer)
	if err != nil || originOf(iss) != originOf(origin) {
		return nil, fmt.Errorf("authorization server metadata: the issuer %s is not on the server's origin", quoteN(meta.Issuer, maxShownURL))
	}
	for _, e := range []string{meta.AuthorizationEndpoint, meta.TokenEndpoint, meta.RegistrationEndpoint} {
		if u, err := url.Parse(e); e != "" && (err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "") {
			return nil, fmt.Errorf("authorization server metadata: endpoint %s is not an http(s) URL", quoteN(e, maxShownURL))
		}
	}
	if meta.AuthorizationEndpoint == "" || meta.TokenEndpoint == "" {
		return nil, errors.New("authorization server metadata: no authorization or token endpoint")
	}
	return &meta, nil
}

// authorize runs the flow for server, whose refusal carried challenges.
func (l *legacyFlow) authorize(ctx context.Context, challenges []oauthex.Challenge, server *url.URL) error {
	origin := &url.URL{Scheme: server.Scheme, Host: server.Host}
	meta, err := l.metadata(ctx, origin)
	if err != nil {
		return err
	}
	cfg := &oauth2.Config{
		ClientID:     l.c.ClientID,
		ClientSecret: l.c.ClientSecret,
		RedirectURL:  l.c.RedirectURL,
		Scopes:       challengeScopes(challenges),
		Endpoint: oauth2.Endpoint{
			AuthURL:   meta.AuthorizationEndpoint,
			TokenURL:  meta.TokenEndpoint,
			AuthStyle: authStyle(meta.TokenEndpointAuthMethodsSupported),
		},
	}
	if cfg.ClientID == "" {
		if meta.RegistrationEndpoint == "" {
			return errors.New("the authorization server offers no dynamic registration and no OAuth.ClientID is set")
		}
		name := l.c.ClientName
		if name == "" {
			name = defaultClientName
		}
		grants := []string{"authorization_code"}
		if l.c.OfflineAccess {
			grants = append(grants, "refresh_token")
		}
		reg, err := oauthex.RegisterClient(ctx, meta.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
			ClientName: name, RedirectURIs: []string{l.c.RedirectURL}, GrantTypes: grants, ResponseTypes: []string{"code"},
		}, l.client)
		if err != nil {
			return fmt.Errorf("dynamic client registration: %w", err)
		}
		cfg.ClientID, cfg.ClientSecret = reg.ClientID, reg.ClientSecret
	}
	resource := oauth2.SetAuthURLParam("resource", server.String())
	verifier := oauth2.GenerateVerifier()
	state := rand.Text()
	redirect, err := l.c.Authorizer.Authorize(ctx, cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), resource))
	if err != nil {
		return err
	}
	res, err := authorizationResult(redirect)
	if err != nil {
		return err
	}
	if res.State != state {
		return fmt.Errorf("%w: the redirect's state is not the one sent", ErrAuthorization)
	}
	hctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, l.client)
	tok, err := cfg.Exchange(hctx, res.Code, oauth2.VerifierOption(verifier), resource)
	if err != nil {
		return fmt.Errorf("token request: %w", err)
	}
	l.mu.Lock()
	l.src = cfg.TokenSource(hctx, tok)
	l.mu.Unlock()
	return nil
}

// authStyle picks how the client authenticates at the token endpoint from
// the methods the authorization server lists (client_secret_basic when it
// lists none, as RFC 8414 defaults).
func authStyle(methods []string) oauth2.AuthStyle {
	switch {
	case len(methods) == 0, slices.Contains(methods, "client_secret_basic"):
		return oauth2.AuthStyleInHeader
	case slices.Contains(methods, "client_secret_post"), slices.Contains(methods, "none"):
		return oauth2.AuthStyleInParams
	}
	return oauth2.AuthStyleAutoDetect
}
