package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/runs"
	"github.com/trellis-go/trellis/store"
)

// Server serves a runs.Manager's graphs over the LangGraph Server API. It
// is an http.Handler: mount it in any mux, under any prefix (with
// http.StripPrefix). It keeps no state of its own beyond its
// configuration: threads, runs and their events live in the Manager's
// database, so any number of Servers on one database serve the same
// threads. Close it when done: it stops what it runs in the background
// (the clean-up of stateless runs).
type Server struct {
	m          *runs.Manager
	mux        *http.ServeMux
	auth       func(*http.Request) (string, error)
	maxBody    int64
	log        *slog.Logger
	assistants map[string]Assistant
	keepAlive  time.Duration
	devPath    string
	store      store.Store

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Assistant is a graph offered under an ID, with settings of its own. A
// Server offers each graph the Manager has registered as an assistant whose
// ID is the graph's name; WithAssistant adds others.
type Assistant struct {
	// ID identifies the assistant; clients name it as assistant_id.
	ID string
	// Graph is the registered graph it runs.
	Graph string
	// Name and Description describe it; Name is the ID when empty.
	Name, Description string
	// Config is the assistant's configuration as the API shows it. Of its
	// keys the runs use recursion_limit (the superstep limit); the others
	// are shown, not used.
	Config map[string]any
	// Context is shown as the assistant's context.
	Context any
	// Metadata is free-form, searchable metadata.
	Metadata map[string]any
	// CreatedAt is when it was configured (the Server's start when zero).
	CreatedAt time.Time
}

// Option configures a Server.
type Option func(*Server)

// WithAuth authenticates every request with fn, which returns the owner the
// request acts for: threads, runs and their events are created for that
// owner and only the owner's are found (runs.WithOwner); another owner's
// look as if they did not exist. A request fn refuses gets 401 with the
// message of fn's error, which must therefore say nothing secret. Without
// WithAuth, every request acts for the empty owner (a single-tenant
// service, behind its own authentication).
func WithAuth(fn func(*http.Request) (owner string, err error)) Option {
	return func(s *Server) { s.auth = fn }
}

// WithMaxBody bounds the size of a request's body (4 MiB by default); a
// larger one is refused with 413.
func WithMaxBody(n int64) Option { return func(s *Server) { s.maxBody = n } }

// WithLogger logs failures the clients are not told the details of (a
// database error is a 500 "internal error" to the client and a line in the
// log).
func WithLogger(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// WithAssistant offers a.Graph under a.ID with a's settings, besides the
// default assistant of each graph.
func WithAssistant(a Assistant) Option {
	return func(s *Server) { s.assistants[a.ID] = a }
}

// WithKeepAlive sets how often an open stream or wait sends a comment (a
// stream) or a blank line (a wait) while nothing else happens, so that
// proxies keep it open (every 10 seconds by default).
func WithKeepAlive(d time.Duration) Option { return func(s *Server) { s.keepAlive = d } }

// Errors of New.
var (
	// ErrUnknownGraph reports an assistant of a graph the Manager has not
	// registered.
	ErrUnknownGraph = errors.New("server: unknown graph")
)

// New returns a Server for m's registered graphs. Register the graphs
// before calling New; runs are executed by whichever Managers on m's
// database call Work (m itself, typically, in a single process).
func New(m *runs.Manager, opts ...Option) (*Server, error) {
	if m == nil {
		return nil, errors.New("server: no runs manager")
	}
	s := &Server{m: m, maxBody: 4 << 20, assistants: map[string]Assistant{}, keepAlive: 10 * time.Second}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.maxBody <= 0 {
		return nil, fmt.Errorf("server: body limit %d is not positive", s.maxBody)
	}
	if s.keepAlive <= 0 {
		return nil, fmt.Errorf("server: keep-alive interval %v is not positive", s.keepAlive)
	}
	now := time.Now().UTC()
	for _, g := range m.Graphs() {
		if _, taken := s.assistants[g]; !taken {
			s.assistants[g] = Assistant{ID: g, Graph: g}
		}
	}
	for id, a := range s.assistants {
		if id == "" {
			return nil, errors.New("server: an assistant without an ID")
		}
		if _, err := m.GraphInfo(a.Graph); err != nil {
			return nil, fmt.Errorf("%w %q (assistant %q): register it with the Manager first", ErrUnknownGraph, a.Graph, id)
		}
		if a.Name == "" {
			a.Name = id
		}
		if a.CreatedAt.IsZero() {
			a.CreatedAt = now
		}
		s.assistants[id] = a
	}
	s.routes()
	if s.devPath != "" {
		if err := s.devRoutes(); err != nil {
			return nil, err
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Close stops the Server's background work (deleting the threads of
// stateless runs once they end) and waits for it. Runs go on: they belong
// to the Manager.
func (s *Server) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// handler is an API handler: it returns an error to answer with, or nil
// when it answered.
type handler func(w http.ResponseWriter, r *http.Request) error

// route registers h under pattern, behind authentication.
func (s *Server) route(pattern string, h handler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if s.auth != nil {
			owner, err := s.auth(r)
			if err != nil {
				writeError(w, &apiError{status: http.StatusUnauthorized, msg: cut(err.Error(), 200)})
				return
			}
			r = r.WithContext(runs.WithOwner(r.Context(), owner))
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		}
		if err := h(w, r); err != nil {
			s.fail(w, r, err)
		}
	})
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	s.route("GET /ok", func(w http.ResponseWriter, r *http.Request) error {
		return writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	s.route("GET /info", func(w http.ResponseWriter, r *http.Request) error {
		return writeJSON(w, http.StatusOK, map[string]any{
			"version": "trellis",
			"flags":   map[string]bool{"assistants": true, "crons": true, "langsmith": false},
		})
	})
	s.assistantRoutes()
	s.threadRoutes()
	s.runRoutes()
	s.cronRoutes()
	s.storeRoutes()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no endpoint %s %s", r.Method, cut(r.URL.Path, 100))})
	})
}

// apiError is an error with the status and message a client gets.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func unprocessable(format string, args ...any) error {
	return &apiError{status: http.StatusUnprocessableEntity, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf(format, args...)}
}

// fail answers r with err: an apiError as it is, the runs layer's errors by
// their kind with their message (which names what was wrong, never an
// internal), anything else as a 500 whose details go to the log only.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &mbe):
		ae = &apiError{status: http.StatusRequestEntityTooLarge, msg: fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)}
	case errors.Is(err, runs.ErrNotFound):
		ae = &apiError{status: http.StatusNotFound, msg: clientMessage(err)}
	case errors.Is(err, runs.ErrExists):
		ae = &apiError{status: http.StatusConflict, msg: clientMessage(err)}
	case errors.Is(err, runs.ErrThreadBusy):
		ae = &apiError{status: http.StatusConflict, msg: clientMessage(err)}
	case errors.Is(err, runs.ErrInvalid), errors.Is(err, runs.ErrUnknownGraph):
		ae = &apiError{status: http.StatusUnprocessableEntity, msg: clientMessage(err)}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the client left
	default:
		s.log.Error("server: request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = &apiError{status: http.StatusInternalServerError, msg: "internal error"}
	}
	writeError(w, ae)
}

// clientMessage is the message of one of the runs layer's errors, without
// its package prefix. Those messages name what was missing or wrong (by a
// bounded quote) and nothing internal.
func clientMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "runs: ")
	return cut(msg, 300)
}

func writeError(w http.ResponseWriter, e *apiError) {
	_ = writeJSON(w, e.status, map[string]string{"detail": e.msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("server: encoding the response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return nil
}

// decode reads r's JSON body into v; an empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return badRequest("reading the request body: %v", err)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return unprocessable("the request body's %q is not a %s", te.Field, te.Type)
		}
		return badRequest("the request body is not the JSON expected: %v", cut(err.Error(), 200))
	}
	return nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// assistant returns the assistant id names: an assistant's ID or, as the
// reference server allows, a graph's name.
func (s *Server) assistant(id string) (Assistant, error) {
	if a, ok := s.assistants[id]; ok {
		return a, nil
	}
	for _, a := range s.sortedAssistants() {
		if a.Graph == id {
			return a, nil
		}
	}
	return Assistant{}, notFound("assistant %q not found", cut(id, 64))
}

func (s *Server) sortedAssistants() []Assistant {
	out := make([]Assistant, 0, len(s.assistants))
	for _, a := range s.assistants {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// timeJSON formats t as the API does (RFC 3339 with fractions).
func timeJSON(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
