package toolsearch

import (
	"container/list"
	"slices"
	"sync"
)

// lru is a bounded map from cache keys to the names a model picked, which
// forgets the least recently used entry first. It is safe for concurrent
// use.
type lru struct {
	mu    sync.Mutex
	size  int
	order *list.List // of *entry, most recently used first
	byKey map[string]*list.Element
}

type entry struct {
	key   string
	names []string
}

func newLRU(size int) *lru {
	return &lru{size: size, order: list.New(), byKey: make(map[string]*list.Element, size)}
}

// get returns the names remembered under key.
func (c *lru) get(key string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry).names, true
}

// put remembers names under key, forgetting the least recently used entry
// when the cache is full.
func (c *lru) put(key string, names []string) {
	names = slices.Clip(slices.Clone(names))
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		el.Value.(*entry).names = names
		c.order.MoveToFront(el)
		return
	}
	c.byKey[key] = c.order.PushFront(&entry{key: key, names: names})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*entry).key)
	}
}

// len returns the number of entries.
func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
