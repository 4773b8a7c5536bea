package knowledge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/trellis-go/trellis/store"
)

// SyncInterval is how long a knowledge base on a store.Store (WithStore)
// searches what it holds before it reads the store again for the documents
// other processes added, changed or deleted.
const SyncInterval = 5 * time.Second

// defaultNamespace is where a knowledge base keeps its documents unless
// WithStore names another namespace.
var defaultNamespace = []string{"trellis", "knowledge"}

// WithStore keeps the documents in st, under namespace ("trellis",
// "knowledge" when none is given), as well as in the process: they outlive
// the process, and every process on the same store (store/sqlite,
// store/postgres) searches the same corpus. AddDocument and Remove write
// through to st; New reads nothing, Sync (called by Search at most every
// SyncInterval, or by the program) brings in what other processes wrote.
// Chunking, embedding (WithEmbedder; each process embeds the chunks it
// loads) and ranking stay in the process.
func WithStore(st store.Store, namespace ...string) Option {
	return func(c *config) {
		if st == nil {
			c.problems = append(c.problems, "WithStore: the store is nil")
		}
		if len(namespace) == 0 {
			namespace = defaultNamespace
		}
		if err := store.ValidateNamespace(namespace); err != nil {
			c.problems = append(c.problems, fmt.Sprintf("WithStore: %v", err))
		}
		c.store, c.namespace = st, slices.Clone(namespace)
	}
}

// durableState is what a knowledge base on a store knows of it.
type durableState struct {
	versions map[string]int64 // the version of each document read or written
	synced   time.Time        // when Sync last ran
}

// storeDocument writes doc to the store; kb.mu is not held.
func (kb *KB) storeDocument(ctx context.Context, doc *document) (int64, error) {
	value, err := json.Marshal(doc.doc)
	if err != nil {
		return 0, fmt.Errorf("knowledge: %w", err)
	}
	it, err := kb.cfg.store.Put(ctx, kb.cfg.namespace, doc.doc.ID, value, store.WithIndexFields())
	if err != nil {
		return 0, fmt.Errorf("knowledge: storing document %q: %w", doc.doc.ID, err)
	}
	return it.Version, nil
}

// Remove deletes the document with the given ID from the knowledge base
// and its store. An ID the store has no document with is an error that
// matches ErrNotFound.
func (kb *KB) Remove(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := kb.cfg.store.Get(ctx, kb.cfg.namespace, id)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrInvalid):
		return fmt.Errorf("%w: no document has the id %q", ErrNotFound, id)
	case err != nil:
		return fmt.Errorf("knowledge: %w", err)
	}
	if err := kb.cfg.store.Delete(ctx, kb.cfg.namespace, id); err != nil {
		return fmt.Errorf("knowledge: %w", err)
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	if doc := kb.docs[id]; doc != nil {
		kb.remove(doc)
	}
	delete(kb.durable.versions, id)
	return nil
}

// Sync brings the knowledge base up to date with its store (WithStore):
// documents other processes added or changed are chunked, embedded and
// indexed, and those deleted are dropped. A knowledge base without
// WithStore has nothing to read: only it writes to its own store.
func (kb *KB) Sync(ctx context.Context) error {
	if kb.cfg.ownStore {
		return nil // only this knowledge base writes to its own store
	}
	items, err := kb.cfg.store.Search(ctx, kb.cfg.namespace, store.Query{Limit: 1 << 30})
	if err != nil {
		return fmt.Errorf("knowledge: sync: %w", err)
	}
	kb.mu.RLock()
	known := kb.durable.versions
	var changed []*document
	versions := make(map[string]int64, len(items))
	for _, it := range items {
		versions[it.Key] = it.Version
		if known[it.Key] == it.Version {
			continue
		}
		var d Doc
		if err := it.Decode(&d); err != nil {
			kb.mu.RUnlock()
			return fmt.Errorf("%w: stored document %q: %w", ErrCorrupt, it.Key, err)
		}
		doc, err := kb.prepare(d)
		if err != nil {
			kb.mu.RUnlock()
			return fmt.Errorf("%w: stored document %q: %w", ErrCorrupt, it.Key, err)
		}
		changed = append(changed, doc)
	}
	kb.mu.RUnlock()
	var all []*chunk
	for _, doc := range changed {
		all = append(all, doc.chunks...)
	}
	if err := kb.embedChunks(ctx, all); err != nil {
		return err
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	for _, doc := range changed {
		if err := kb.checkDim(doc.chunks, kb.docs[doc.doc.ID]); err != nil {
			return err
		}
		kb.insert(doc)
	}
	for id := range kb.durable.versions {
		if _, ok := versions[id]; !ok {
			if doc := kb.docs[id]; doc != nil {
				kb.remove(doc)
			}
		}
	}
	kb.durable.versions = versions
	kb.durable.synced = time.Now()
	return nil
}

// syncIfDue runs Sync when SyncInterval has passed since the last one.
func (kb *KB) syncIfDue(ctx context.Context) error {
	if kb.cfg.ownStore {
		return nil
	}
	kb.mu.RLock()
	due := time.Since(kb.durable.synced) >= SyncInterval
	kb.mu.RUnlock()
	if !due {
		return nil
	}
	return kb.Sync(ctx)
}
