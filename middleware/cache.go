package middleware

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/trellis-go/trellis/executor"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// The defaults of Cache.
const (
	DefaultCacheTTL        = 5 * time.Minute
	DefaultCacheMaxEntries = 1024
)

type cacheConfig struct {
	ttl        time.Duration
	maxEntries int
	cacheable  func(*executor.Request) bool
	clock      Clock
	onWait     func() // told when a call joins a flight (tests)
}

// CacheOption configures Cache. WithClock is one too.
type CacheOption interface{ applyCache(*cacheConfig) }

type cacheOption func(*cacheConfig)

func (o cacheOption) applyCache(c *cacheConfig) { o(c) }

// WithTTL sets how long a cached result is served (default
// DefaultCacheTTL). Zero or less means results never expire; they are
// only evicted for room.
func WithTTL(d time.Duration) CacheOption {
	return cacheOption(func(c *cacheConfig) { c.ttl = d })
}

// WithMaxEntries bounds how many results the cache holds (default
// DefaultCacheMaxEntries); when it is full, the least recently used result
// is evicted. n <= 0 keeps the default.
func WithMaxEntries(n int) CacheOption {
	return cacheOption(func(c *cacheConfig) {
		if n > 0 {
			c.maxEntries = n
		}
	})
}

// WithCacheable sets which calls the cache serves, instead of the default:
// calls of tools whose metadata says ReadOnly. Use it to opt other tools
// in (or to leave read-only tools out). Calls of unknown tools are never
// cached.
func WithCacheable(f func(req *executor.Request) bool) CacheOption {
	return cacheOption(func(c *cacheConfig) {
		if f != nil {
			c.cacheable = f
		}
	})
}

// ReadOnly is the default cacheable predicate: it selects calls of tools
// whose metadata says ReadOnly.
func ReadOnly(req *executor.Request) bool {
	return req.Tool != nil && tool.MetadataOf(req.Tool).ReadOnly
}

// Cache serves repeated calls from memory. A call is keyed by its tool's
// name and its arguments in canonical form (the JSON re-encoded with
// sorted keys and without insignificant space), never by its call ID: two
// calls that ask the same thing share one entry, and a cached result
// answers whichever call asks.
//
// Only successful results are cached (not errors, not pending results),
// each for the TTL (WithTTL), in a cache bounded by WithMaxEntries with
// least-recently-used eviction. Identical calls that arrive while the
// first is running share its execution: one runs, and the others wait for
// its result (each may stop waiting when its own context ends). If the
// shared execution fails after the context of the call that started it
// ended, a waiting call whose context is still live runs the tool itself;
// a failure of the tool (a timeout of its own, say) answers every waiting
// call. A pending result is never shared: it is completed later under the
// ID of the call that got it, so each waiting call runs the tool itself.
//
// Every call gets a copy of the result with content and metadata of its own
// (its own parts and their bytes, its own Metadata map); Details and
// Actions are shared, and must be treated as read-only.
//
// By default only calls of tools whose metadata says ReadOnly are cached;
// WithCacheable opts others in. Calls whose arguments are not valid JSON
// are not cached. The returned Middleware holds the cache: every chain
// built with it shares one cache, which is safe for concurrent use.
func Cache(opts ...CacheOption) executor.Middleware {
	c := cacheConfig{ttl: DefaultCacheTTL, maxEntries: DefaultCacheMaxEntries, cacheable: ReadOnly, clock: SystemClock()}
	for _, o := range opts {
		if o != nil {
			o.applyCache(&c)
		}
	}
	st := &cacheStore{cfg: c, entries: map[string]*list.Element{}, order: list.New(), flights: map[string]*flight{}}
	return func(next executor.Handler) executor.Handler {
		safe := executor.Recover(next)
		return executor.HandlerFunc(func(ctx context.Context, req *executor.Request) tool.Result {
			if req.Tool == nil || !c.cacheable(req) {
				return next.Handle(ctx, req)
			}
			key, ok := cacheKey(req.Call.Name, req.Call.Arguments)
			if !ok {
				return next.Handle(ctx, req)
			}
			return st.serve(ctx, key, safe, req)
		})
	}
}

// cacheStore is the state of one Cache middleware.
type cacheStore struct {
	cfg cacheConfig

	mu      sync.Mutex
	entries map[string]*list.Element // of *cacheEntry
	order   *list.List               // most recently used first
	flights map[string]*flight       // executions in flight, by key
}

type cacheEntry struct {
	key     string
	res     tool.Result
	expires time.Time // zero: never
}

// flight is one execution of a call that identical calls wait for.
type flight struct {
	done chan struct{} // closed when res is set
	res  tool.Result
	// abandoned is true when the context of the call that started the
	// execution had ended by the time it returned: its result may say
	// more about that call than about the tool.
	abandoned bool
}

func (s *cacheStore) serve(ctx context.Context, key string, next executor.Handler, req *executor.Request) tool.Result {
	for {
		s.mu.Lock()
		if r, ok := s.lookup(key); ok {
			s.mu.Unlock()
			return r
		}
		f, joined := s.flights[key]
		if !joined {
			f = &flight{done: make(chan struct{})}
			s.flights[key] = f
		}
		s.mu.Unlock()
		if !joined {
			// The execution runs on a goroutine of its own, so that this
			// call, too, stops waiting when its context ends.
			go s.run(ctx, key, f, next, req)
		} else if s.cfg.onWait != nil {
			s.cfg.onWait()
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return callerGone(ctx, req.Call.Name)
		}
		r := f.res
		if !joined {
			if f.abandoned && !succeeded(r) {
				// This call's context ended while the tool ran: that says
				// more than the failure it brought about, whichever of the
				// two this call saw first.
				return callerGone(ctx, req.Call.Name)
			}
			return copyResult(r)
		}
		switch {
		case r.Pending || r.Status == tool.StatusPending:
			// A pending result is completed later under the ID of the
			// call that got it: this call starts its own work.
			return next.Handle(ctx, req)
		case f.abandoned && !succeeded(r) && ctx.Err() == nil:
			// The call that ran the tool gave up, not this one: try
			// again (another flight, or the tool itself).
			continue
		}
		return copyResult(r)
	}
}

// run executes the call of flight f and hands its result to the calls
// waiting for it, caching it first if it succeeded.
func (s *cacheStore) run(ctx context.Context, key string, f *flight, next executor.Handler, req *executor.Request) {
	r := next.Handle(ctx, req)
	s.mu.Lock()
	if succeeded(r) {
		s.store(key, r)
	}
	f.res, f.abandoned = r, ctx.Err() != nil
	delete(s.flights, key)
	s.mu.Unlock()
	close(f.done)
}

// succeeded reports whether r may be cached: a success, not an error and
// not pending.
func succeeded(r tool.Result) bool {
	return r.Status == tool.StatusSuccess && !r.IsError && !r.Pending
}

// lookup returns a copy of the live entry of key. s.mu must be held.
func (s *cacheStore) lookup(key string) (tool.Result, bool) {
	el, ok := s.entries[key]
	if !ok {
		return tool.Result{}, false
	}
	e := el.Value.(*cacheEntry)
	if !e.expires.IsZero() && !s.cfg.clock.Now().Before(e.expires) {
		s.order.Remove(el)
		delete(s.entries, key)
		return tool.Result{}, false
	}
	s.order.MoveToFront(el)
	return copyResult(e.res), true
}

// store caches r under key. s.mu must be held.
func (s *cacheStore) store(key string, r tool.Result) {
	var expires time.Time
	if s.cfg.ttl > 0 {
		expires = s.cfg.clock.Now().Add(s.cfg.ttl)
	}
	if el, ok := s.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		e.res, e.expires = copyResult(r), expires
		s.order.MoveToFront(el)
		return
	}
	s.entries[key] = s.order.PushFront(&cacheEntry{key: key, res: copyResult(r), expires: expires})
	for s.order.Len() > s.cfg.maxEntries {
		last := s.order.Back()
		s.order.Remove(last)
		delete(s.entries, last.Value.(*cacheEntry).key)
	}
}

// copyResult returns r with content and metadata of its own: its own parts,
// its own copy of their JSON and image bytes, and its own Metadata map, so
// that no caller can change what the cache holds or what another caller
// got. Details and Actions are not copied.
func copyResult(r tool.Result) tool.Result {
	r.Metadata = maps.Clone(r.Metadata)
	if r.Content == nil {
		return r
	}
	parts := make([]model.Part, len(r.Content))
	for i, p := range r.Content {
		p.Data = bytes.Clone(p.Data)
		p.JSON = bytes.Clone(p.JSON)
		parts[i] = p
	}
	r.Content = parts
	return r
}

// cacheKey is the tool's name and the arguments in canonical form: object
// members sorted by name, no insignificant space, strings quoted one way.
// It reports false for arguments that are not valid JSON.
func cacheKey(name string, args json.RawMessage) (string, bool) {
	if len(bytes.TrimSpace(args)) == 0 {
		return name + "\x00{}", true
	}
	v, err := tool.Parse(args)
	if err != nil {
		return "", false
	}
	b := make([]byte, 0, len(name)+1+len(args))
	b = append(b, name...)
	b = append(b, 0)
	return string(appendCanonical(b, v)), true
}

// appendCanonical appends the canonical form of a value decoded by
// tool.Parse.
func appendCanonical(b []byte, v any) []byte {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			b = appendCanonical(b, x[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case string:
		return strconv.AppendQuote(b, x)
	case json.Number:
		return append(b, x...)
	case bool:
		return strconv.AppendBool(b, x)
	case nil:
		return append(b, "null"...)
	default: // not produced by tool.Parse; keep the key unique anyway
		return fmt.Appendf(b, "%T:%v", x, x)
	}
}
