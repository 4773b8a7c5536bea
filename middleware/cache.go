package middleware

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/trellis-go/trellis/executor"
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
// shared execution is cancelled because the call that started it was,
// a waiting call whose context is still live runs the tool itself.
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
	st := &cacheStore{cfg: c, entries: map[string]*list.Element{}, order: list.New()}
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
	cfg     cacheConfig
	flights singleflight.Group

	mu      sync.Mutex
	entries map[string]*list.Element // of *cacheEntry
	order   *list.List               // most recently used first
}

type cacheEntry struct {
	key     string
	res     tool.Result
	expires time.Time // zero: never
}

func (s *cacheStore) serve(ctx context.Context, key string, next executor.Handler, req *executor.Request) tool.Result {
	for {
		if r, ok := s.get(key); ok {
			return r
		}
		ch := s.flights.DoChan(key, func() (any, error) {
			// Another flight may have filled the entry while this one
			// was being set up.
			if r, ok := s.get(key); ok {
				return r, nil
			}
			r := next.Handle(ctx, req)
			if r.Status == tool.StatusSuccess && !r.IsError && !r.Pending {
				s.put(key, r)
			}
			return r, nil
		})
		select {
		case out := <-ch:
			r := out.Val.(tool.Result)
			if out.Shared && (r.Status == tool.StatusCancelled || r.Status == tool.StatusTimeout) && ctx.Err() == nil {
				// The call that ran the tool gave up, not this one: try
				// again (another flight, or the tool itself).
				continue
			}
			return copyResult(r)
		case <-ctx.Done():
			return callerGone(ctx, req.Call.Name)
		}
	}
}

func (s *cacheStore) get(key string) (tool.Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
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

func (s *cacheStore) put(key string, r tool.Result) {
	var expires time.Time
	if s.cfg.ttl > 0 {
		expires = s.cfg.clock.Now().Add(s.cfg.ttl)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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

// copyResult returns r with its own content slice, so that no caller can
// change what the cache holds.
func copyResult(r tool.Result) tool.Result {
	r.Content = slices.Clone(r.Content)
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
