package websearch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// service is a test server on 127.0.0.1 that answers every request with
// the status, headers and body set for it, and records the requests.
type service struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	header http.Header
	body   []byte
	reqs   []*http.Request
}

func newService(t *testing.T, status int, body []byte) *service {
	t.Helper()
	s := &service{status: status, body: body, header: http.Header{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		status, body := s.status, s.body
		for k, v := range s.header {
			w.Header()[k] = v
		}
		s.mu.Unlock()
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

// answer sets what the service answers from now on.
func (s *service) answer(status int, body []byte, header ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body, s.header = status, body, http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		s.header.Set(header[i], header[i+1])
	}
}

func (s *service) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}
