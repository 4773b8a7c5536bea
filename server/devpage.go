package server

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
)

// devFiles are the dev page: plain HTML, JavaScript and CSS, no build step.
//
//go:embed devpage
var devFiles embed.FS

// WithDevPage serves the dev page at path (for example "/dev/"): the
// assistants' graphs drawn, threads and their runs, a run's supersteps,
// tokens and tool calls (with their durations) live, the state at every
// checkpoint, interrupts answered from a form, and checkpoints forked and
// run again. The page uses the API like any client, with the bearer token
// typed into it when WithAuth asks for one; it holds no data of its own.
// It is off unless this option is given: it is meant for development, not
// for a service's users.
func WithDevPage(path string) Option {
	return func(s *Server) { s.devPath = path }
}

// devRoutes serves the dev page under s.devPath.
func (s *Server) devRoutes() error {
	p := s.devPath
	if !strings.HasPrefix(p, "/") || !strings.HasSuffix(p, "/") || strings.ContainsAny(p, "{}") || p == "/" {
		return fmt.Errorf("server: dev page path %q must start and end with \"/\", and not be \"/\"", p)
	}
	sub, err := fs.Sub(devFiles, "devpage")
	if err != nil {
		return err
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		return err
	}
	// The API is at the page's path with as many levels up as the path
	// has, so that the page works wherever the server is mounted.
	base := strings.Repeat("../", strings.Count(strings.Trim(p, "/"), "/")+1)
	index = bytes.ReplaceAll(index, []byte("{{API_BASE}}"), []byte(base))
	files := http.StripPrefix(p, http.FileServerFS(sub))
	s.mux.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.URL.Path == p || r.URL.Path == p+"index.html" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(index)
			return
		}
		files.ServeHTTP(w, r)
	})
	return nil
}
