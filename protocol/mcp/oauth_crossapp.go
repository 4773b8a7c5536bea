package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// jwtBearerGrant is the grant type of RFC 7523 §2.1.
const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// CrossAppAccess configures cross-app access (Enterprise-Managed
// Authorization, SEP-990, an MCP extension): the user's ID token from the
// enterprise identity provider is exchanged there (RFC 8693) for an
// identity assertion grant (ID-JAG) naming the server's authorization
// server and the server, which the authorization server exchanges
// (RFC 7523 JWT bearer grant) for an access token. No browser is involved.
type CrossAppAccess struct {
	// IdPIssuer is the issuer URL of the identity provider; its token
	// endpoint is discovered from its metadata.
	IdPIssuer string
	// IdPClientID and IdPClientSecret identify the client at the identity
	// provider; without a secret the client is public there.
	IdPClientID, IdPClientSecret string
	// IDToken returns the user's OpenID Connect ID token from the identity
	// provider, for example one kept from the user's single sign-on.
	IDToken func(ctx context.Context) (string, error)
}

// crossAppHandler runs cross-app access. The go-sdk's EnterpriseHandler
// needs the authorization server before the first request and always sends
// the client's credentials in the form; this one discovers the server from
// the 401, as the other flows do, and authenticates as the authorization
// server's metadata asks (client_secret_basic by default).
type crossAppHandler struct {
	x                      CrossAppAccess
	clientID, clientSecret string
	client                 *http.Client
	tokenHolder
}

// newCrossAppHandler checks c and returns its handler.
func newCrossAppHandler(c OAuth, client *http.Client) (*crossAppHandler, error) {
	x := c.CrossApp
	switch {
	case x.IdPIssuer == "" || x.IdPClientID == "" || x.IDToken == nil:
		return nil, errors.New("OAuth.CrossApp needs IdPIssuer, IdPClientID and IDToken")
	case c.ClientID == "":
		return nil, errors.New("OAuth.CrossApp needs the ClientID registered with the server's authorization server")
	}
	return &crossAppHandler{x: *x, clientID: c.ClientID, clientSecret: c.ClientSecret, client: client}, nil
}

// Authorize discovers the server's authorization server, exchanges the ID
// token for an ID-JAG at the identity provider, and the ID-JAG for an
// access token at the authorization server.
func (h *crossAppHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, prm, err := discoverResource(ctx, req, resp, h.client)
	if err != nil {
		return err
	}
	issuer := prm.AuthorizationServers[0]
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, h.client)
	if err == nil && asm == nil {
		err = errNoMetadata
	}
	if err != nil {
		return fmt.Errorf("authorization server metadata of %s: %w", quoteN(issuer, maxShownURL), err)
	}
	idpToken, err := tokenEndpoint(ctx, h.client, h.x.IdPIssuer)
	if err != nil {
		return fmt.Errorf("identity provider metadata of %s: %w", quoteN(h.x.IdPIssuer, maxShownURL), err)
	}
	idToken, err := h.x.IDToken(ctx)
	if err != nil {
		return fmt.Errorf("the user's ID token: %w", err)
	}
	scopes := challengeScopes(challenges)
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	idpCreds := &oauthex.ClientCredentials{ClientID: h.x.IdPClientID}
	if h.x.IdPClientSecret != "" {
		idpCreds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.x.IdPClientSecret}
	}
	jag, err := oauthex.ExchangeToken(ctx, idpToken, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG,
		Audience:           asm.Issuer,
		Resource:           prm.Resource,
		Scope:              scopes,
		SubjectToken:       idToken,
		SubjectTokenType:   oauthex.TokenTypeIDToken,
	}, idpCreds, h.client)
	if err != nil {
		return fmt.Errorf("token exchange at the identity provider: %w", err)
	}
	cfg := &oauth2.Config{
		ClientID:     h.clientID,
		ClientSecret: h.clientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: asm.TokenEndpoint, AuthStyle: authStyle(asm.TokenEndpointAuthMethodsSupported)},
		Scopes:       scopes,
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, h.client), "",
		oauth2.SetAuthURLParam("grant_type", jwtBearerGrant),
		oauth2.SetAuthURLParam("assertion", jag.AccessToken))
	if err != nil {
		return fmt.Errorf("JWT bearer grant at the authorization server: %w", err)
	}
	h.set(oauth2.StaticTokenSource(tok))
	return nil
}

// errNoMetadata: an authorization server publishes no metadata.
var errNoMetadata = errors.New("none published")

// tokenEndpoint discovers the token endpoint of the identity provider
// issuer from its RFC 8414 or OpenID Connect metadata, at the well-known
// places the MCP spec lists. The go-sdk's discovery also demands PKCE
// support, which an identity provider used only for token exchange need
// not list, hence this one.
func tokenEndpoint(ctx context.Context, client *http.Client, issuer string) (string, error) {
	iu, err := url.Parse(issuer)
	if err != nil || (iu.Scheme != "https" && iu.Scheme != "http") || iu.Host == "" {
		return "", fmt.Errorf("the issuer is not an http(s) URL")
	}
	path := strings.Trim(iu.Path, "/")
	at := func(p string) string { return (&url.URL{Scheme: iu.Scheme, Host: iu.Host, Path: p}).String() }
	places := []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	if path != "" {
		places = []string{
			at("/.well-known/oauth-authorization-server/" + path),
			at("/.well-known/openid-configuration/" + path),
			at("/" + path + "/.well-known/openid-configuration"),
		}
	}
	for _, place := range places {
		status, body, err := getMetadata(ctx, client, place)
		if err != nil {
			return "", err
		}
		if status >= 400 && status < 500 {
			continue
		}
		pu, _ := url.Parse(place)
		if status != http.StatusOK {
			return "", fmt.Errorf("%s: status %d", showURL(pu), status)
		}
		var meta struct {
			Issuer        string `json:"issuer"`
			TokenEndpoint string `json:"token_endpoint"`
		}
		if err := json.Unmarshal(body, &meta); err != nil {
			return "", fmt.Errorf("%s: %w", showURL(pu), err)
		}
		if strings.TrimSuffix(meta.Issuer, "/") != strings.TrimSuffix(issuer, "/") {
			return "", fmt.Errorf("the metadata names the issuer %s", quoteN(meta.Issuer, maxShownURL))
		}
		if tu, err := url.Parse(meta.TokenEndpoint); err != nil || (tu.Scheme != "https" && tu.Scheme != "http") || tu.Host == "" {
			return "", fmt.Errorf("the token endpoint %s is not an http(s) URL", quoteN(meta.TokenEndpoint, maxShownURL))
		}
		return meta.TokenEndpoint, nil
	}
	return "", errNoMetadata
}
