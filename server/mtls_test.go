package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trellis-go/trellis/server"
)

// certificate makes a certificate for cn signed by parent (self-signed
// when parent is nil), with its key.
func certificate(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, ca bool) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent, parentKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return cert, key, der
}

// With mutual TLS, the verified client certificate names the owner: a
// client whose certificate the server's CA signed acts for its common
// name, and sees only that owner's threads.
func TestClientCertificateNamesTheOwner(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server (-short)")
	}
	ca, caKey, _ := certificate(t, "test CA", nil, nil, true)
	e := newEnv(t, server.WithAuth(func(r *http.Request) (string, error) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			return "", errors.New("a verified client certificate is required")
		}
		return r.TLS.VerifiedChains[0][0].Subject.CommonName, nil
	}))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv := httptest.NewUnstartedServer(e.srv)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	defer srv.Close()
	client := func(cn string) *http.Client {
		_, key, der := certificate(t, cn, ca, caKey, false)
		c := srv.Client()
		tr := c.Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}
		return &http.Client{Transport: tr, Timeout: 30 * time.Second}
	}
	post := func(c *http.Client, path, body string) int {
		req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL+path, stringsReader(body))
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	ann, bob := client("ann"), client("bob")
	assert.Equal(t, 200, post(ann, "/threads", `{"thread_id":"t"}`))
	assert.Equal(t, 404, post(bob, "/threads/t/copy", ``), "bob does not see ann's thread")
	assert.Equal(t, 200, post(ann, "/threads/t/copy", ``))

	// Without a certificate the TLS handshake itself fails.
	_, err := srv.Client().Post(srv.URL+"/threads", "application/json", stringsReader(`{}`))
	assert.Error(t, err)
}
