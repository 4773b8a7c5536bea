package mcp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With ClientCredentials and a secret the toolset gets its token with the
// client_credentials grant, authenticated as the metadata asks (here HTTP
// Basic), and no user step.
func TestOAuthClientCredentialsWithSecret(t *testing.T) {
	as := newFakeAS(t)
	as.authMethods = []string{"client_secret_basic"}
	as.grants = func(r *http.Request) ([]string, string) {
		id, secret, ok := r.BasicAuth()
		if r.PostForm.Get("grant_type") != "client_credentials" || !ok || id != "svc" || secret != "s3cret" {
			return nil, "invalid_client"
		}
		return strings.Fields(r.PostForm.Get("scope")), ""
	}
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), []string{"tools"}, always("tools"))

	ts, err := New(Config{Name: "p", URL: endpoint}, WithReconnect(0),
		WithOAuth(OAuth{ClientCredentials: true, ClientID: "svc", ClientSecret: "s3cret"}))
	require.NoError(t, err)
	defer ts.Close()
	require.NoError(t, ts.Init(ctxT(t, 10*time.Second)))
	authorized, forms, _ := as.seen()
	assert.Empty(t, authorized, "no user step")
	require.NotEmpty(t, forms)
	assert.Equal(t, "client_credentials", forms[0].Get("grant_type"))
	assert.Empty(t, forms[0].Get("client_secret"), "the secret went in the header")
}

// With a private key the client authenticates with a signed JWT assertion
// (private_key_jwt) naming itself and the authorization server.
func TestOAuthClientCredentialsWithSignedAssertion(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	as := newFakeAS(t)
	as.authMethods = []string{"private_key_jwt"}
	as.grants = func(r *http.Request) ([]string, string) {
		if r.PostForm.Get("grant_type") != "client_credentials" ||
			r.PostForm.Get("client_assertion_type") != jwtBearerAssertion {
			return nil, "invalid_request"
		}
		var claims jwt.RegisteredClaims
		_, err := jwt.ParseWithClaims(r.PostForm.Get("client_assertion"), &claims,
			func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(as.url), jwt.WithExpirationRequired())
		if err != nil || claims.Issuer != "svc" || claims.Subject != "svc" || claims.ID == "" {
			return nil, "invalid_client"
		}
		return nil, ""
	}
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), nil, always())

	ts, err := New(Config{Name: "p", URL: endpoint}, WithReconnect(0),
		WithOAuth(OAuth{ClientCredentials: true, ClientID: "svc", PrivateKey: key}))
	require.NoError(t, err)
	defer ts.Close()
	require.NoError(t, ts.Init(ctxT(t, 10*time.Second)))
	_, forms, _ := as.seen()
	require.NotEmpty(t, forms)
	assert.Equal(t, endpoint, forms[0].Get("resource"), "RFC 8707 resource indicator")
}

// Cross-app access exchanges the user's ID token at the identity provider
// for an ID-JAG naming the authorization server and the server, then the
// ID-JAG for an access token.
func TestOAuthCrossAppAccessExchangesIDToken(t *testing.T) {
	as := newFakeAS(t)
	as.authMethods = []string{"client_secret_basic"}
	srv, _ := newFixtureServer(t, nil)
	endpoint := protectedServer(t, as, srv.Handler(nil), nil, always())

	var idpURL string
	var exchanged []string
	idp := http.NewServeMux()
	idp.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"issuer": idpURL, "token_endpoint": idpURL + "/token"})
	})
	idp.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f := r.PostForm
		exchanged = append(exchanged, f.Get("subject_token"))
		if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange" ||
			f.Get("subject_token") != "id-token-1" || f.Get("audience") != as.url || f.Get("resource") != endpoint ||
			f.Get("requested_token_type") != "urn:ietf:params:oauth:token-type:id-jag" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{
			"access_token": "jag-1", "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A",
		})
	})
	idpURL = serveHTTP(t, idp)
	as.grants = func(r *http.Request) ([]string, string) {
		id, secret, ok := r.BasicAuth()
		if r.PostForm.Get("grant_type") != jwtBearerGrant || !ok || id != "app" || secret != "app-secret" ||
			r.PostForm.Get("assertion") != "jag-1" {
			return nil, "invalid_grant"
		}
		return nil, ""
	}

	ts, err := New(Config{Name: "p", URL: endpoint}, WithReconnect(0), WithOAuth(OAuth{
		ClientID: "app", ClientSecret: "app-secret",
		CrossApp: &CrossAppAccess{IdPIssuer: idpURL, IdPClientID: "idp-app",
			IDToken: func(context.Context) (string, error) { return "id-token-1", nil }},
	}))
	require.NoError(t, err)
	defer ts.Close()
	require.NoError(t, ts.Init(ctxT(t, 10*time.Second)))
	assert.Equal(t, []string{"id-token-1"}, exchanged)
	_, forms, _ := as.seen()
	assert.True(t, slices.ContainsFunc(forms, func(f url.Values) bool { return f.Get("grant_type") == jwtBearerGrant }))
}
