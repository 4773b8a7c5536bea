package server_test

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/trellis-go/trellis/server"
)

// bearerAuth authenticates requests by a bearer token: each token names its
// owner. A real service would look tokens up in its own store, or verify a
// signed token (a JWT) and take its subject as the owner.
func bearerAuth(tokens map[string]string) server.Option {
	return server.WithAuth(func(r *http.Request) (string, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return "", errors.New("missing bearer token")
		}
		for t, owner := range tokens {
			if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
				return owner, nil
			}
		}
		return "", errors.New("unknown token")
	})
}

func withMaxBody(n int64) server.Option { return server.WithMaxBody(n) }

// A bearer token names the owner of each request: its threads and runs are
// the owner's only.
func ExampleWithAuth_bearer() {
	tokens := map[string]string{"secret-token-of-ann": "ann"}
	_ = server.WithAuth(func(r *http.Request) (string, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return "", errors.New("missing bearer token")
		}
		for t, owner := range tokens {
			if subtle.ConstantTimeCompare([]byte(t), []byte(tok)) == 1 {
				return owner, nil
			}
		}
		return "", errors.New("unknown token")
	})
	// Output:
}

// With mutual TLS (an http.Server whose TLSConfig has ClientAuth:
// tls.RequireAndVerifyClientCert), the verified client certificate names
// the owner.
func ExampleWithAuth_mTLS() {
	_ = server.WithAuth(func(r *http.Request) (string, error) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			return "", errors.New("a verified client certificate is required")
		}
		return r.TLS.VerifiedChains[0][0].Subject.CommonName, nil
	})
	// Output:
}
