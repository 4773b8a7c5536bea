package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// jwtBearerAssertion is the client_assertion_type of a JWT client
// assertion (RFC 7523 §2.2).
const jwtBearerAssertion = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// assertionLifetime is how long a client assertion is valid.
const assertionLifetime = 5 * time.Minute

// jwtClientHandler obtains tokens with the client_credentials grant,
// authenticating the client with a JWT it signs (private_key_jwt). The
// go-sdk's client credentials handler takes only a client secret, hence
// this one; discovery reuses the go-sdk's metadata clients.
type jwtClientHandler struct {
	clientID string
	key      crypto.Signer
	method   jwt.SigningMethod
	client   *http.Client
	tokenHolder
}

// newJWTClientHandler checks key and returns the handler.
func newJWTClientHandler(clientID string, key crypto.Signer, client *http.Client) (*jwtClientHandler, error) {
	var method jwt.SigningMethod
	switch k := key.Public().(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, errors.New("OAuth.PrivateKey: only P-256 ECDSA keys (ES256) are supported")
		}
		method = jwt.SigningMethodES256
	case *rsa.PublicKey:
		method = jwt.SigningMethodRS256
	default:
		return nil, fmt.Errorf("OAuth.PrivateKey: unsupported key type %T", k)
	}
	return &jwtClientHandler{clientID: clientID, key: key, method: method, client: client}, nil
}

// Authorize discovers the authorization server from the server's refusal
// and gets a token from it.
func (h *jwtClientHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, prm, err := discoverResource(ctx, req, resp, h.client)
	if err != nil {
		return err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], h.client)
	if err != nil {
		return fmt.Errorf("%w: authorization server metadata: %w", ErrAuthorization, err)
	}
	if asm == nil || asm.TokenEndpoint == "" {
		return fmt.Errorf("%w: the authorization server %s publishes no token endpoint", ErrAuthorization, quoteN(prm.AuthorizationServers[0], maxShownURL))
	}
	scopes := challengeScopes(challenges)
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	src := oauth2.ReuseTokenSource(nil, &assertionSource{
		h: h, ctx: context.WithoutCancel(ctx), issuer: asm.Issuer, tokenURL: asm.TokenEndpoint,
		scopes: scopes, resource: prm.Resource,
	})
	if _, err := src.Token(); err != nil {
		return fmt.Errorf("%w: %w", ErrAuthorization, err)
	}
	h.set(src)
	return nil
}

// assertionSource gets a token with a newly signed assertion each time.
type assertionSource struct {
	h                *jwtClientHandler
	ctx              context.Context
	issuer, tokenURL string
	scopes           []string
	resource         string
}

// Token signs an assertion and exchanges it for a token.
func (s *assertionSource) Token() (*oauth2.Token, error) {
	now := time.Now()
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	claims := jwt.RegisteredClaims{
		Issuer:    s.h.clientID,
		Subject:   s.h.clientID,
		Audience:  jwt.ClaimStrings{s.issuer},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(assertionLifetime)),
		ID:        fmt.Sprintf("%x", id),
	}
	assertion, err := jwt.NewWithClaims(s.h.method, claims).SignedString(s.h.key)
	if err != nil {
		return nil, fmt.Errorf("signing the client assertion: %w", err)
	}
	params := url.Values{
		"client_assertion_type": {jwtBearerAssertion},
		"client_assertion":      {assertion},
	}
	if s.resource != "" {
		params.Set("resource", s.resource)
	}
	cfg := clientcredentials.Config{
		ClientID:       s.h.clientID,
		TokenURL:       s.tokenURL,
		Scopes:         s.scopes,
		EndpointParams: params,
		AuthStyle:      oauth2.AuthStyleInParams,
	}
	return cfg.Token(context.WithValue(s.ctx, oauth2.HTTPClient, s.h.client))
}

// tokenHolder keeps the token source of a handler's last authorization.
type tokenHolder struct {
	mu  sync.Mutex
	src oauth2.TokenSource
}

// TokenSource returns the token source of the last authorization, or nil.
func (h *tokenHolder) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.src, nil
}

// set keeps src.
func (h *tokenHolder) set(src oauth2.TokenSource) {
	h.mu.Lock()
	h.src = src
	h.mu.Unlock()
}

// discoverResource reads the challenges of the server's refusal resp to
// req, closing its body, and fetches the server's protected resource
// metadata.
func discoverResource(ctx context.Context, req *http.Request, resp *http.Response, client *http.Client) ([]oauthex.Challenge, *oauthex.ProtectedResourceMetadata, error) {
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil, nil, fmt.Errorf("the server's WWW-Authenticate header: %w", err)
	}
	prm, err := protectedResource(ctx, challenges, req.URL.String(), client)
	if err != nil {
		return nil, nil, err
	}
	return challenges, prm, nil
}

// protectedResource fetches the protected resource metadata of resource:
// from the challenge's resource_metadata, else from the well-known paths
// (at the endpoint's path, then at the root), as the MCP spec orders them.
func protectedResource(ctx context.Context, challenges []oauthex.Challenge, resource string, client *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	ru, err := url.Parse(resource)
	if err != nil {
		return nil, err
	}
	type candidate struct{ meta, resource string }
	var cands []candidate
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["resource_metadata"] != "" {
			cands = append(cands, candidate{c.Params["resource_metadata"], resource})
		}
	}
	at := url.URL{Scheme: ru.Scheme, Host: ru.Host}
	if p := strings.Trim(ru.Path, "/"); p != "" {
		at.Path = "/.well-known/oauth-protected-resource/" + p
		cands = append(cands, candidate{at.String(), resource})
	}
	at.Path = "/.well-known/oauth-protected-resource"
	cands = append(cands, candidate{at.String(), (&url.URL{Scheme: ru.Scheme, Host: ru.Host}).String()})
	var errs []error
	for _, c := range cands {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.meta, c.resource, client)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prm == nil {
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("%w: the protected resource metadata names no authorization server", ErrAuthorization)
		}
		return prm, nil
	}
	return nil, fmt.Errorf("%w: no protected resource metadata for %s: %w", ErrAuthorization, showURL(ru), errors.Join(errs...))
}

// challengeScopes returns the scopes a Bearer challenge asks for.
func challengeScopes(challenges []oauthex.Challenge) []string {
	for _, c := range challenges {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}
