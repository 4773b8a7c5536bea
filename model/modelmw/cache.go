package modelmw

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/trellis-go/trellis/model"
)

// CacheStore keeps replies by key for Cache. Implementations must be safe
// for concurrent use; a store shared by processes (a database, Redis)
// implements it over its own client.
type CacheStore interface {
	// Get returns the reply stored under key, and false when there is
	// none (or it expired).
	Get(ctx context.Context, key string) (*model.Response, bool, error)
	// Set stores resp under key.
	Set(ctx context.Context, key string, resp *model.Response) error
}

// Cache returns a Middleware that answers a call from store when an
// identical call was answered before, and stores the replies of the calls
// it lets through. There is no cache unless this middleware is added.
//
// Calls are identical when their keys are (see CacheKey): the model and
// the normalized request, in which IDs play no part. A reply from the
// cache reports no usage, since the provider was not called (and the run's
// Ledger records nothing for it). A stream that misses passes through
// unbuffered and is stored once it ended without error; a hit is streamed
// as chunks. Failed calls are not stored; a failing store is not an error
// of the call: the call goes to the model, and its reply is not stored.
func Cache(store CacheStore) Middleware {
	if store == nil {
		panic("modelmw: Cache with a nil store")
	}
	return func(next model.Model) model.Model {
		info := Describe(next)
		lookup := func(ctx context.Context, req *model.Request) (string, *model.Response) {
			key, err := CacheKey(info, req)
			if err != nil {
				return "", nil
			}
			resp, ok, err := store.Get(ctx, key)
			if err != nil || !ok || resp == nil {
				return key, nil
			}
			hit := *resp
			hit.Usage = model.Usage{}
			return key, &hit
		}
		return Funcs{
			GenerateFunc: func(ctx context.Context, req *model.Request) (*model.Response, error) {
				key, hit := lookup(ctx, req)
				if hit != nil {
					return hit, nil
				}
				resp, err := next.Generate(ctx, req)
				if err == nil && resp != nil && key != "" {
					_ = store.Set(ctx, key, resp) // see the doc: a failing store fails no call
				}
				return resp, err
			},
			StreamFunc: func(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
				return func(yield func(model.Chunk, error) bool) {
					key, hit := lookup(ctx, req)
					if hit != nil {
						for c := range model.ResponseChunks(hit) {
							if !yield(c, nil) {
								return
							}
						}
						return
					}
					var acc model.Accumulator
					n := 0
					for c, err := range next.Stream(ctx, req) {
						if err != nil {
							yield(c, err)
							return
						}
						acc.Add(c)
						n++
						if !yield(c, nil) {
							return
						}
					}
					if n > 0 && key != "" {
						_ = store.Set(ctx, key, acc.Response())
					}
				}
			},
		}
	}
}

// CacheKey returns the key Cache stores a call's reply under: a SHA-256
// digest of the model's provider and name and of the request normalized
// so that only what the model is asked counts. Message IDs and metadata
// play no part, and tool-call IDs are replaced by their order of first
// appearance, so that a conversation replayed with fresh IDs finds the
// reply its first run stored.
func CacheKey(info model.Info, req *model.Request) (string, error) {
	norm := *req
	norm.Messages = make([]model.Message, len(req.Messages))
	ids := map[string]string{}
	id := func(s string) string {
		if s == "" {
			return ""
		}
		if v, ok := ids[s]; ok {
			return v
		}
		v := "c" + strconv.Itoa(len(ids)+1)
		ids[s] = v
		return v
	}
	for i, m := range req.Messages {
		m.ID, m.Metadata = "", nil
		if len(m.ToolCalls) > 0 {
			calls := make([]model.ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				c.ID = id(c.ID)
				calls[j] = c
			}
			m.ToolCalls = calls
		}
		m.ToolCallID = id(m.ToolCallID)
		norm.Messages[i] = m
	}
	b, err := json.Marshal(struct {
		Provider string         `json:"provider"`
		Model    string         `json:"model"`
		Request  *model.Request `json:"request"`
	}{info.Provider, info.Name, &norm})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// MemoryCache is a CacheStore in memory that keeps up to a number of
// replies for up to a time, evicting the least recently used first.
type MemoryCache struct {
	max int
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	order *list.List // of *cacheEntry, most recently used first
	byKey map[string]*list.Element
}

type cacheEntry struct {
	key     string
	reply   []byte // the reply as JSON, so that no caller shares its slices
	expires time.Time
}

// NewMemoryCache returns a MemoryCache of up to maxEntries replies (1000
// when maxEntries <= 0), each kept for ttl (forever when ttl <= 0).
func NewMemoryCache(maxEntries int, ttl time.Duration) *MemoryCache {
	if maxEntries <= 0 {
		maxEntries = 1000
	}
	return &MemoryCache{max: maxEntries, ttl: ttl, now: time.Now, order: list.New(), byKey: map[string]*list.Element{}}
}

// Get returns the reply stored under key, unless it expired.
func (c *MemoryCache) Get(_ context.Context, key string) (*model.Response, bool, error) {
	c.mu.Lock()
	e, ok := c.byKey[key]
	if !ok {
		c.mu.Unlock()
		return nil, false, nil
	}
	ent := e.Value.(*cacheEntry)
	if !ent.expires.IsZero() && !c.now().Before(ent.expires) {
		c.order.Remove(e)
		delete(c.byKey, key)
		c.mu.Unlock()
		return nil, false, nil
	}
	c.order.MoveToFront(e)
	raw := ent.reply
	c.mu.Unlock()
	var resp model.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, false, err
	}
	return &resp, true, nil
}

// Set stores resp under key, evicting the least recently used reply when
// the cache is full.
func (c *MemoryCache) Set(_ context.Context, key string, resp *model.Response) error {
	raw, err := json.Marshal(resp)
	if err != nil {
		return err
	}
	ent := &cacheEntry{key: key, reply: raw}
	if c.ttl > 0 {
		ent.expires = c.now().Add(c.ttl)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		e.Value = ent
		c.order.MoveToFront(e)
		return nil
	}
	c.byKey[key] = c.order.PushFront(ent)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cacheEntry).key)
	}
	return nil
}

// Len returns how many replies the cache holds, expired ones included
// until they are looked up.
func (c *MemoryCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
