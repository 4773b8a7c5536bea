package main

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/trellis-go/trellis/protocol/mcp"
)

// Values the suite's authorization scenarios expect of a client: the
// redirect URL its fake authorization server redirects to, and the client
// ID metadata document URL it looks for.
const (
	redirectURL       = "http://localhost:3000/callback"
	clientMetadataURL = "https://conformance-test.local/client-metadata.json"
)

// scenarioContext is what the suite passes in MCP_CONFORMANCE_CONTEXT for
// the scenarios that need credentials.
type scenarioContext struct {
	ClientID      string `json:"client_id"`
	ClientSecret  string `json:"client_secret"`
	PrivateKeyPEM string `json:"private_key_pem"`
	IdPClientID   string `json:"idp_client_id"`
	IdPIDToken    string `json:"idp_id_token"`
	IdPIssuer     string `json:"idp_issuer"`
}

// oauth returns the OAuth configuration of an auth/ scenario: cross-app
// access with the scenario's ID token, or the client_credentials grant, for
// the scenarios that name them, else the
// authorization code grant completed without a browser (the suite's
// authorization server redirects at once), with the pre-registered
// credentials the scenario gives, if any.
func oauth(scenario string) (mcp.OAuth, error) {
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return mcp.OAuth{}, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	if strings.HasPrefix(scenario, "auth/cross-app-access") {
		return mcp.OAuth{
			ClientID:     sc.ClientID,
			ClientSecret: sc.ClientSecret,
			CrossApp: &mcp.CrossAppAccess{
				IdPIssuer:   sc.IdPIssuer,
				IdPClientID: sc.IdPClientID,
				IDToken:     func(context.Context) (string, error) { return sc.IdPIDToken, nil },
			},
		}, nil
	}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		cfg := mcp.OAuth{ClientCredentials: true, ClientID: sc.ClientID, ClientSecret: sc.ClientSecret}
		if sc.PrivateKeyPEM != "" {
			key, err := parseKey(sc.PrivateKeyPEM)
			if err != nil {
				return mcp.OAuth{}, err
			}
			cfg.PrivateKey = key
		}
		return cfg, nil
	}
	return mcp.OAuth{
		RedirectURL:       redirectURL,
		Authorizer:        mcp.HeadlessAuthorizer{},
		ClientID:          sc.ClientID,
		ClientSecret:      sc.ClientSecret,
		ClientMetadataURL: clientMetadataURL,
		ClientName:        "trellis-conformance-client",
		OfflineAccess:     true,
	}, nil
}

// parseKey reads a PKCS #8 private key in PEM.
func parseKey(s string) (crypto.Signer, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("private_key_pem: no PEM block")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("private_key_pem: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("private_key_pem: %T is not a signing key", key)
	}
	return signer, nil
}
