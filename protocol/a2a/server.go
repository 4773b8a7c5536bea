package a2a

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/graph"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/runs"
)

// Defaults of the server.
const (
	// DefaultMaxRequestBytes is the largest request body the server reads
	// unless WithMaxRequestBytes says otherwise: 1 MiB.
	DefaultMaxRequestBytes = 1 << 20
	// DefaultMaxTasks is how many tasks the server remembers of each
	// owner unless WithMaxTasks says otherwise.
	DefaultMaxTasks = 1000
	// DefaultMaxTotalTasks is how many tasks the server remembers of all
	// owners together unless WithMaxTotalTasks says otherwise.
	DefaultMaxTotalTasks = 10 * DefaultMaxTasks
	// DefaultMaxContexts is how many conversations the server remembers
	// of each owner unless WithMaxContexts says otherwise.
	DefaultMaxContexts = 1000
	// DefaultMaxTotalContexts is how many conversations the server
	// remembers of all owners together unless WithMaxTotalContexts says
	// otherwise.
	DefaultMaxTotalContexts = 10 * DefaultMaxContexts
)

// MetaDelta is the key, in the metadata of the message of a "working"
// status update, that marks the message as a piece of the text the agent's
// model is writing (a token delta) rather than a note on its progress.
// The server sends such updates while a model streams; the value is true.
const MetaDelta = "trellis.delta"

// ServerOption configures a Server.
type ServerOption func(*serverConfig)

type serverConfig struct {
	version          string
	url              string
	skills           []Skill
	provider         *Provider
	editCard         func(*Card)
	maxBody          int
	maxTasks         int // of each owner
	maxTotalTasks    int // of all owners
	maxContexts      int // of each owner
	maxTotalContexts int // of all owners
	runOpts          []graph.RunOption
	errorText        func(error) string
	owner            func(*http.Request) (string, error)
	runs             *runs.Manager
	problems         []string
}

// WithAgentVersion sets the agent's version in its card ("1.0.0" unless
// set).
func WithAgentVersion(v string) ServerOption { return func(c *serverConfig) { c.version = v } }

// WithURL sets the address of the JSON-RPC endpoint the card gives, such as
// "https://agents.example.com/billing/". Without it the card gives the
// address its own request came to, minus CardPath, which is right unless
// the server sits behind a proxy that changes the scheme, host or path.
func WithURL(u string) ServerOption { return func(c *serverConfig) { c.url = u } }

// WithSkills sets the skills the card lists (by default one skill named
// after the agent, with its description).
func WithSkills(skills ...Skill) ServerOption {
	return func(c *serverConfig) { c.skills = append(c.skills, skills...) }
}

// WithProvider names the organization behind the agent in its card.
func WithProvider(organization, url string) ServerOption {
	return func(c *serverConfig) { c.provider = &Provider{Organization: organization, URL: url} }
}

// WithCard lets edit change the card the server builds, once, before it
// serves it: security schemes, an icon, input modes. Interfaces it sets are
// served as they are; left empty, they are filled per request (see WithURL).
func WithCard(edit func(*Card)) ServerOption { return func(c *serverConfig) { c.editCard = edit } }

// WithMaxRequestBytes caps the size of a request body
// (DefaultMaxRequestBytes unless set); n must be at least 1 KiB. A larger
// request is refused with HTTP 413 and a JSON-RPC error.
func WithMaxRequestBytes(n int) ServerOption {
	return func(c *serverConfig) {
		if n < 1<<10 {
			c.problems = append(c.problems, "WithMaxRequestBytes: n must be at least 1024")
		}
		c.maxBody = n
	}
}

// WithMaxTasks caps the tasks the server remembers of each owner (see
// WithOwner; DefaultMaxTasks unless set); n must be positive. Past it, the
// owner's oldest tasks that are not running are forgotten: GetTask answers
// "task not found" for them. When all n of an owner's tasks are running (or
// queued behind another task of their context), a message of that owner
// that would start a task is refused with HTTP 503 and JSON-RPC error
// -32603, which bounds the runs, and their memory, that one owner can
// start; other owners' messages are taken as before. WithMaxTotalTasks
// bounds all owners' tasks together.
func WithMaxTasks(n int) ServerOption {
	return func(c *serverConfig) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxTasks: n must be at least 1")
		}
		c.maxTasks = n
	}
}

// WithMaxTotalTasks caps the tasks the server remembers of all owners
// together (DefaultMaxTotalTasks unless set); n must be positive. Past it,
// the oldest tasks that are not running, whoever's, are forgotten; when all
// n are running, a message that would start a task is refused as past
// WithMaxTasks. Set it at least a few times WithMaxTasks: it is the bound
// that several owners, together, can reach.
func WithMaxTotalTasks(n int) ServerOption {
	return func(c *serverConfig) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxTotalTasks: n must be at least 1")
		}
		c.maxTotalTasks = n
	}
}

// WithMaxContexts caps the conversations the server remembers of each
// owner (see WithOwner; DefaultMaxContexts unless set); n must be positive.
// Past it, the owner's least recently used idle conversation is forgotten,
// never another owner's; for an agent without a checkpointer, that loses
// its history (an agent with one keeps it in its thread). A conversation
// whose task runs or waits is not forgotten (WithMaxTasks bounds those).
// WithMaxTotalContexts bounds all owners' conversations together.
func WithMaxContexts(n int) ServerOption {
	return func(c *serverConfig) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxContexts: n must be at least 1")
		}
		c.maxContexts = n
	}
}

// WithMaxTotalContexts caps the conversations the server remembers of all
// owners together (DefaultMaxTotalContexts unless set); n must be positive.
// Past it, the least recently used idle conversation, whoever's, is
// forgotten, as past WithMaxContexts. Set it at least a few times
// WithMaxContexts: it is the bound that several owners, together, can
// reach, and past it one owner's new conversations can push out another's.
func WithMaxTotalContexts(n int) ServerOption {
	return func(c *serverConfig) {
		if n < 1 {
			c.problems = append(c.problems, "WithMaxTotalContexts: n must be at least 1")
		}
		c.maxTotalContexts = n
	}
}

// WithRunOptions adds options to every run of the agent: a logger, a step
// limit, a durability mode.
func WithRunOptions(opts ...graph.RunOption) ServerOption {
	return func(c *serverConfig) { c.runOpts = append(c.runOpts, opts...) }
}

// WithErrorText sets how a failed run's error is told to the client, in
// the failed task's status message (by default its Error text, which may
// name internals: tools, models, files).
func WithErrorText(fn func(err error) string) ServerOption {
	return func(c *serverConfig) { c.errorText = fn }
}

// WithOwner sets how the server tells whose a request is: fn returns the
// owner of the request (a user or tenant ID), normally one that
// authentication middleware put in the request's context (RequestOwner
// reads what ContextWithOwner put there). Every task and conversation
// belongs to the owner of the request that started it: GetTask,
// CancelTask, SubscribeToTask (0.3: tasks/resubscribe), ListTasks and a
// message that continues a task see only the requesting owner's tasks,
// and answer "task not found" (-32001) for another's, as for a task that
// does not exist; a contextId continues only its owner's conversation,
// and a checkpointed agent keeps each owner's conversations in threads of
// their own (ThreadID). fn is called for every JSON-RPC request, not for
// the card. When it fails, the request is refused with HTTP 401 and
// JSON-RPC error -32600 saying only that the request is not
// authenticated: the error's text is not sent to the client.
//
// Without WithOwner the server is single-tenant: every request has the
// same owner, so every client that can reach the server can list, read,
// follow and cancel every task, and continue every conversation whose
// contextId it knows. Use the default only behind authentication that
// admits callers who may see each other's work.
func WithOwner(fn func(r *http.Request) (owner string, err error)) ServerOption {
	return func(c *serverConfig) {
		if fn == nil {
			c.problems = append(c.problems, "WithOwner: the owner function is nil")
		}
		c.owner = fn
	}
}

// ownerKey is the key of the owner ContextWithOwner sets.
type ownerKey struct{}

// ContextWithOwner returns a copy of ctx that names the owner of a
// request, for authentication middleware in front of a Server configured
// with WithOwner(RequestOwner):
//
//	next.ServeHTTP(w, r.WithContext(a2a.ContextWithOwner(r.Context(), userID)))
func ContextWithOwner(ctx context.Context, owner string) context.Context {
	return context.WithValue(ctx, ownerKey{}, owner)
}

// RequestOwner is an owner function for WithOwner: the owner that
// ContextWithOwner put in the request's context. A request without one
// (one the authentication middleware let through without naming its
// owner) fails with ErrNoOwner, and the server refuses it.
func RequestOwner(r *http.Request) (string, error) {
	owner, ok := r.Context().Value(ownerKey{}).(string)
	if !ok {
		return "", ErrNoOwner
	}
	return owner, nil
}

// Server exposes a Trellis agent over A2A: it is an http.Handler that
// serves the agent's card (GET .../.well-known/agent-card.json) and its
// JSON-RPC endpoint (POST to any other path). Create it with NewServer and
// Close it when done.
type Server struct {
	name  string
	card  Card // the template; interfaces are filled per request
	cfg   serverConfig
	agent agentRunner

	ctx    context.Context // parent of every run; canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{} // closed by Close

	mu        sync.Mutex
	closed    bool
	tasks     map[string]*taskRec
	taskSeq   uint64                 // the seq of the latest task
	owned     map[string]int         // how many of tasks each owner has
	idle      idleQueue              // the tasks that do not run, oldest first
	ownerIdle map[string]*idleQueue  // each owner's, the same way
	waiting   map[convKey][]*taskRec // the tasks of each context that wait for input
	contexts  map[convKey]*conversation
	lru       *list.List            // of *conversation, most recently used first
	ownerLRU  map[string]*list.List // each owner's, the same way

	runs *runsMode // WithRuns: tasks are runs, and the fields above unused
}

// NewServer returns a server that runs agent, a compiled graph, for A2A
// clients. name and description introduce the agent in its card, as they
// introduce the agent of a handoff tool to a calling model.
//
// Each message a client sends starts a task (or continues one that waits
// for input), which runs the agent on the conversation of the message's
// context: the same contextId continues the same conversation. When agent
// has a checkpointer, each context is a thread of it (ThreadID), so the conversation outlives the server, and a run that
// pauses to ask the user (nodes.AskUser, graph.Interrupt) leaves its task
// waiting for input: the next message of the context answers it, unless
// the task was canceled (CancelTask), which drops the question. Without a
// checkpointer the server keeps each conversation in memory (see
// WithMaxContexts), and a run that pauses fails its task, as it cannot be
// resumed.
func NewServer[S any, PS State[S]](name, description string, agent *graph.Graph[S], opts ...ServerOption) (*Server, error) {
	cfg := serverConfig{version: "1.0.0", maxBody: DefaultMaxRequestBytes, maxTasks: DefaultMaxTasks, maxTotalTasks: DefaultMaxTotalTasks,
		maxContexts: DefaultMaxContexts, maxTotalContexts: DefaultMaxTotalContexts}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if strings.TrimSpace(name) == "" {
		cfg.problems = append(cfg.problems, "the agent's name is empty")
	}
	if agent == nil {
		cfg.problems = append(cfg.problems, "the agent's graph is nil")
	}
	var rm *runsMode
	if cfg.runs != nil && agent != nil {
		rm = &runsMode{m: cfg.runs, graph: agent.Name()}
		if _, err := cfg.runs.GraphInfo(agent.Name()); err != nil {
			cfg.problems = append(cfg.problems, fmt.Sprintf("WithRuns: graph %q is not registered with the runs manager (runs.Graph)", agent.Name()))
		}
		f, err := conversationField[S, PS]()
		if err != nil {
			cfg.problems = append(cfg.problems, "WithRuns: "+err.Error())
		}
		rm.field = f
	}
	if len(cfg.problems) > 0 {
		return nil, fmt.Errorf("a2a: NewServer %q: %s", name, strings.Join(cfg.problems, "; "))
	}
	if cfg.errorText == nil {
		cfg.errorText = func(err error) string { return err.Error() }
	}
	// Whether tasks keep threads is the graph's configuration: asked of the
	// graph, not of its checkpointer, so that building a server does no I/O.
	saver := agent.Checkpointer() != nil

	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		name:     name,
		cfg:      cfg,
		agent:    &graphRunner[S, PS]{g: agent, saver: saver, opts: cfg.runOpts},
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		tasks:    map[string]*taskRec{},
		contexts: map[convKey]*conversation{},
		lru:      list.New(),
		ownerLRU: map[string]*list.List{},
		runs:     rm,
	}
	s.card = s.buildCard(description)
	return s, nil
}

func (s *Server) buildCard(description string) Card {
	skills := s.cfg.skills
	if len(skills) == 0 {
		skills = []Skill{{ID: toolName(s.name), Name: s.name, Description: description, Tags: []string{"agent"}}}
	}
	card := Card{
		Name:               s.name,
		Description:        description,
		Version:            s.cfg.version,
		Provider:           s.cfg.provider,
		Capabilities:       Capabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills:             skills,
	}
	if s.cfg.editCard != nil {
		s.cfg.editCard(&card)
	}
	return card
}

// Checkpointed reports whether the agent keeps its conversations in the
// threads of its checkpointer (and so can wait for input), rather than in
// the server's memory.
func (s *Server) Checkpointed() bool { return s.agent.checkpointed() }

// Card returns the card the server serves at the address base (the
// JSON-RPC endpoint, as WithURL would give it); base is ignored when
// WithURL or WithCard set the interfaces.
func (s *Server) Card(base string) Card {
	card := s.card
	if len(card.SupportedInterfaces) > 0 {
		return card
	}
	u := base
	if s.cfg.url != "" {
		u = s.cfg.url
	}
	card.SupportedInterfaces = []Interface{
		{URL: u, ProtocolBinding: BindingJSONRPC, ProtocolVersion: Version},
		{URL: u, ProtocolBinding: BindingJSONRPC, ProtocolVersion: LegacyVersion},
	}
	// The fields a 0.3 client reads; a 1.0 client ignores them.
	card.URL, card.ProtocolVersion, card.PreferredTransport = u, LegacyVersion+".0", BindingJSONRPC
	return card
}

// ServeHTTP serves the card (GET or HEAD on a path ending in CardPath, or
// in the older /.well-known/agent.json) and JSON-RPC requests (POST).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		(strings.HasSuffix(r.URL.Path, CardPath) || strings.HasSuffix(r.URL.Path, "/.well-known/agent.json")):
		s.serveCard(w, r)
	case r.Method == http.MethodPost:
		s.serveRPC(w, r)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "use GET for the agent card ("+CardPath+"), POST for JSON-RPC", http.StatusMethodNotAllowed)
	}
}

func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	path := r.URL.Path
	path = strings.TrimSuffix(path, CardPath)
	path = strings.TrimSuffix(path, "/.well-known/agent.json")
	base := scheme + "://" + r.Host + path + "/"
	writeJSON(w, http.StatusOK, s.Card(base))
}

// Close cancels the runs of the tasks that are running (they end canceled),
// ends the streams the server serves, and waits for the runs to return.
// Requests that come after are refused. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for _, t := range s.tasks {
		if t.running && t.cancelReason == "" {
			t.cancelReason = "the server shut down"
		}
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// ThreadID returns the checkpointer thread that holds the conversation
// of a context of owner, for an agent with a checkpointer. Without
// WithOwner it is ThreadPrefix + contextID (owner is ignored); with it,
// ThreadPrefix, a digest of the owner and contextID, so that two owners'
// contexts of the same ID are two conversations.
func (s *Server) ThreadID(owner, contextID string) string {
	if s.cfg.owner == nil {
		return ThreadPrefix + contextID
	}
	sum := sha256.Sum256([]byte(owner))
	return ThreadPrefix + hex.EncodeToString(sum[:16]) + ":" + contextID
}

// convKey identifies a conversation: an owner's context.
type convKey struct{ owner, id string }

// conversation is the server's side of a context.
type conversation struct {
	key     convKey
	thread  string          // the checkpointer's thread of the conversation
	lock    chan struct{}   // held by the task that runs the agent
	history []model.Message // the conversation, for an agent without a checkpointer
	refs    int             // tasks that use it; guarded by Server.mu
	elem    *list.Element   // in Server.lru
	oelem   *list.Element   // in Server.ownerLRU[key.owner]
	// dropQuestion says that a task of the context was canceled while its
	// question was pending in the context's thread (a checkpointed agent):
	// the holder of lock drops the question before the agent runs again,
	// so that the next message starts a new turn instead of answering it.
	// Guarded by Server.mu; a conversation with it set is not forgotten.
	dropQuestion bool
}

// conversation returns the conversation of owner's context id, made when
// new, and marks it used by one more task. The caller holds s.mu.
func (s *Server) conversation(owner, id string) *conversation {
	key := convKey{owner, id}
	c, ok := s.contexts[key]
	if ok {
		s.lru.MoveToFront(c.elem)
		s.ownerLRU[owner].MoveToFront(c.oelem)
	} else {
		c = &conversation{key: key, thread: s.ThreadID(owner, id), lock: make(chan struct{}, 1)}
		c.elem = s.lru.PushFront(c)
		ol := s.ownerLRU[owner]
		if ol == nil {
			ol = list.New()
			s.ownerLRU[owner] = ol
		}
		c.oelem = ol.PushFront(c)
		s.contexts[key] = c
	}
	c.refs++
	// Each owner's conversations are bounded on their own, so that one
	// owner's new contexts push out only that owner's idle ones; all
	// owners' together, too.
	s.evictContexts(s.ownerLRU[owner], s.cfg.maxContexts)
	s.evictContexts(s.lru, s.cfg.maxTotalContexts)
	return c
}

// evictContexts forgets the least recently used idle conversations of l
// (the server's LRU list or an owner's) while l holds more than n. A
// conversation in use, or with a question to drop, is kept, so l may stay
// above n. The caller holds s.mu.
func (s *Server) evictContexts(l *list.List, n int) {
	for e := l.Back(); e != nil && l.Len() > n; {
		prev := e.Prev()
		if old := e.Value.(*conversation); old.refs == 0 && !old.dropQuestion {
			s.forgetContext(old)
		}
		e = prev
	}
}

// forgetContext removes c from the server's conversations. The caller
// holds s.mu.
func (s *Server) forgetContext(c *conversation) {
	s.lru.Remove(c.elem)
	if ol := s.ownerLRU[c.key.owner]; ol != nil {
		ol.Remove(c.oelem)
		if ol.Len() == 0 {
			delete(s.ownerLRU, c.key.owner)
		}
	}
	delete(s.contexts, c.key)
}

// release marks the conversation used by one task less.
func (s *Server) release(c *conversation) {
	s.mu.Lock()
	c.refs--
	s.mu.Unlock()
}

// nowUTC is the time of statuses.
func nowUTC() time.Time { return time.Now().UTC() }
