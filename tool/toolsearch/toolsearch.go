package toolsearch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Defaults of the options.
const (
	// DefaultMaxTools is how many tools the model may pick unless
	// WithMaxTools says otherwise.
	DefaultMaxTools = 8
	// DefaultHistory is how many messages before the request the model is
	// shown, for context, unless WithHistory says otherwise.
	DefaultHistory = 2
	// DefaultCacheSize is how many selections a Selector remembers unless
	// WithCacheSize says otherwise.
	DefaultCacheSize = 64
)

// ErrUnusableAnswer is wrapped by the error Select returns, with fail-open
// off, when the model's reply lists no tool names it could read: it is not
// JSON (after repair), holds no list of names, or names only tools it was
// not offered.
var ErrUnusableAnswer = errors.New("toolsearch: unusable answer")

// Selector is a tool.Selector that asks a model which tools are relevant to
// the run's current request. Make one with New; it is safe for concurrent
// use.
type Selector struct {
	m   model.Model
	cfg config
	// cache remembers the selections made, by request and candidates;
	// nil when caching is off.
	cache *lru
}

var _ tool.Selector = (*Selector)(nil)

type config struct {
	maxTools      int
	always        []string
	minCandidates int // 0: maxTools+1
	failClosed    bool
	system        string
	usage         func(model.Usage)
	history       int
	cacheSize     int
	structured    *bool // nil: what the model's Info says
	timeout       time.Duration
	modelName     string
}

// Option configures a Selector.
type Option func(*config)

// WithMaxTools sets how many tools the model may pick, DefaultMaxTools
// unless set; a value below 1 restores the default. The always-included
// tools (WithAlwaysInclude) are kept on top and do not count. Picks beyond
// the limit are dropped, the least relevant first.
func WithMaxTools(n int) Option {
	return func(c *config) {
		if n < 1 {
			n = DefaultMaxTools
		}
		c.maxTools = n
	}
}

// WithAlwaysInclude names tools that are kept whenever they are among the
// candidates, whatever the model answers and whatever the selector's mode:
// they are not shown to the model, do not count against WithMaxTools, and
// are the only tools kept when the model finds none relevant. Several
// calls add up.
func WithAlwaysInclude(names ...string) Option {
	return func(c *config) { c.always = append(c.always, names...) }
}

// WithMinCandidates sets how many candidates it takes to ask the model:
// with fewer (not counting the always-included tools), Select keeps every
// tool it is given without calling the model. The default is one more than
// the maximum (WithMaxTools), so that the model is asked only when the
// candidates do not all fit; a lower value makes it prune short lists too.
// A value below 1 restores the default.
func WithMinCandidates(n int) Option {
	return func(c *config) { c.minCandidates = max(n, 0) }
}

// WithFailOpen sets what Select does when the model fails or its reply
// cannot be read. Open (the default) keeps every tool, so that the agent
// carries on with all of them; closed returns the error, which fails the
// LLM node's resolve and so the run. A cancelled or expired run context is
// returned as an error either way.
func WithFailOpen(open bool) Option {
	return func(c *config) { c.failClosed = !open }
}

// WithSystemPrompt replaces the system message sent to the model, which
// describes its task; "" restores the default (DefaultSystemPrompt). The
// user message, which holds the request, the tools and the form of the
// answer, is the same either way.
func WithSystemPrompt(prompt string) Option {
	return func(c *config) { c.system = prompt }
}

// WithUsage calls fn with the token usage of every reply the selector's
// model gives, so that an application can account for it: the selector's
// calls are not part of the run's model events. It is called from Select,
// on the caller's goroutine, so concurrently when the Selector serves
// concurrent runs; a selection found in the cache costs nothing and is not
// reported.
func WithUsage(fn func(model.Usage)) Option {
	return func(c *config) { c.usage = fn }
}

// WithHistory sets how many messages before the request (user and
// assistant messages with text; tool messages and tool calls are left out)
// the model is shown for context, so that a follow-up such as "and
// tomorrow?" is understood: DefaultHistory unless set, 0 for none.
func WithHistory(n int) Option {
	return func(c *config) { c.history = max(n, 0) }
}

// WithCacheSize sets how many selections the Selector remembers,
// DefaultCacheSize unless set; 0 turns the cache off. A selection is
// remembered by the text sent to the model (the request, its history and
// the candidates' names and descriptions), so that the repeated resolves of
// one user turn (one per model call of an agent's tool loop) ask the model
// once, and the least recently used is forgotten first. Only readable
// answers are remembered: a failure is asked again.
func WithCacheSize(n int) Option {
	return func(c *config) { c.cacheSize = max(n, 0) }
}

// WithStructuredOutput sets whether the request asks for the answer's JSON
// schema as a response format (model.Request.ResponseFormat). By default it
// does when the model says it supports native structured output
// (model.Describer); otherwise the prompt alone asks for JSON. The reply is
// read leniently either way.
func WithStructuredOutput(on bool) Option {
	return func(c *config) { c.structured = &on }
}

// WithTimeout limits each call of the model to d; 0 (the default) sets no
// limit of its own. A call that runs out of time is a model failure (see
// WithFailOpen); the run's own deadline is not.
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.timeout = max(d, 0) }
}

// WithModelName sets model.Request.Model, which overrides the provider's
// configured model name: a cheaper model of the same client, say.
func WithModelName(name string) Option {
	return func(c *config) { c.modelName = name }
}

// New returns a Selector that asks m which tools fit the run's current
// request. Nil options are ignored. A nil m makes every Select that would
// call it fail, fail-open or not.
func New(m model.Model, opts ...Option) *Selector {
	cfg := config{maxTools: DefaultMaxTools, history: DefaultHistory, cacheSize: DefaultCacheSize}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	s := &Selector{m: m, cfg: cfg}
	if cfg.cacheSize > 0 {
		s.cache = newLRU(cfg.cacheSize)
	}
	return s
}

// Select returns the tools of tools that the model judges relevant to the
// run's current request, the always-included ones first and the picks in
// the model's order (tool.Resolve keeps the toolsets' order in the list it
// builds). The request is the text of the latest user message of the
// conversation in ctx (tool.Conversation); the LLM node puts its
// conversation there. Select keeps every tool, without calling the model,
// when there is no such message or it has no text, and when the candidates
// are fewer than the minimum (WithMinCandidates). A reply that names no
// tool (an empty list) keeps only the always-included tools; names that are
// not candidates are ignored, and duplicates count once.
func (s *Selector) Select(ctx context.Context, tools []tool.Tool) ([]tool.Tool, error) {
	always := make(map[string]bool, len(s.cfg.always))
	for _, n := range s.cfg.always {
		always[n] = true
	}
	var kept, candidates []tool.Tool
	var defs []model.ToolDefinition
	for _, t := range tools {
		if t == nil {
			continue
		}
		def := t.Definition()
		if always[def.Name] {
			kept = append(kept, t)
			continue
		}
		candidates = append(candidates, t)
		defs = append(defs, def)
	}
	minimum := s.cfg.minCandidates
	if minimum == 0 {
		minimum = s.cfg.maxTools + 1
	}
	if len(candidates) < minimum {
		return tools, nil
	}
	req, ok := requestOf(tool.Conversation(ctx), s.cfg.history)
	if !ok {
		return tools, nil
	}
	prompt := userPrompt(req, defs, s.cfg.maxTools)
	var key string
	if s.cache != nil {
		key = cacheKey(s.cfg.system, s.cfg.modelName, prompt)
		if names, hit := s.cache.get(key); hit {
			return append(kept, pick(candidates, defs, names, s.cfg.maxTools)...), nil
		}
	}
	names, err := s.ask(ctx, prompt, defs)
	if err == nil {
		picked := pick(candidates, defs, names, s.cfg.maxTools)
		if len(picked) > 0 || len(names) == 0 || namesAny(names, always) {
			if s.cache != nil {
				s.cache.put(key, names)
			}
			return append(kept, picked...), nil
		}
		err = fmt.Errorf("%w: it names none of the %d candidate tools (%s)", ErrUnusableAnswer, len(candidates), clipList(names))
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, fmt.Errorf("toolsearch: %w", context.Cause(ctx))
	}
	if s.cfg.failClosed || s.m == nil {
		return nil, err
	}
	return tools, nil
}

// ask sends the request to the model and reads the names of its reply.
func (s *Selector) ask(ctx context.Context, prompt string, defs []model.ToolDefinition) ([]string, error) {
	if s.m == nil {
		return nil, errors.New("toolsearch: the selector has no model")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.cfg.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.timeout)
		defer cancel()
	}
	system := s.cfg.system
	if strings.TrimSpace(system) == "" {
		system = DefaultSystemPrompt
	}
	req := &model.Request{
		Model:    s.cfg.modelName,
		Messages: []model.Message{model.System(system), model.User(prompt)},
	}
	structured := false
	if s.cfg.structured != nil {
		structured = *s.cfg.structured
	} else if d, ok := s.m.(model.Describer); ok {
		structured = d.Info().StructuredOutput
	}
	if structured {
		req.ResponseFormat = responseFormat(defs)
	}
	resp, err := s.m.Generate(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: model: %w", err)
	}
	if resp == nil {
		return nil, fmt.Errorf("%w: the model returned no response", ErrUnusableAnswer)
	}
	if s.cfg.usage != nil {
		s.cfg.usage(resp.Usage)
	}
	return parseSelection(resp.Message.Text())
}

// pick returns the candidates that names name, in the order of names,
// without duplicates and at most limit of them. A name matches a
// candidate's exactly or, failing that, one candidate's alone when case is
// ignored.
func pick(candidates []tool.Tool, defs []model.ToolDefinition, names []string, limit int) []tool.Tool {
	exact := make(map[string]int, len(defs))
	folded := make(map[string]int, len(defs))
	for i, d := range defs {
		if _, dup := exact[d.Name]; !dup {
			exact[d.Name] = i
		}
		low := strings.ToLower(d.Name)
		if _, dup := folded[low]; dup {
			folded[low] = -1 // ambiguous
		} else {
			folded[low] = i
		}
	}
	var out []tool.Tool
	taken := make(map[int]bool, len(names))
	for _, n := range names {
		if len(out) >= limit {
			break
		}
		i, ok := exact[n]
		if !ok {
			i, ok = folded[strings.ToLower(n)]
			ok = ok && i >= 0
		}
		if !ok || taken[i] {
			continue
		}
		taken[i] = true
		out = append(out, candidates[i])
	}
	return out
}

// namesAny reports whether names holds a name of set.
func namesAny(names []string, set map[string]bool) bool {
	for _, n := range names {
		if set[n] {
			return true
		}
	}
	return false
}

// clipList is names joined for an error message, at most a few of them.
func clipList(names []string) string {
	const most = 5
	if len(names) <= most {
		return quoteAll(names)
	}
	return quoteAll(names[:most]) + fmt.Sprintf(" and %d more", len(names)-most)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
