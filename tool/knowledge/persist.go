package knowledge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/internal/snapio"
	"github.com/trellis-go/trellis/store"
)

// SnapshotVersion is the version of the format Save writes; Load reads it
// alone.
const SnapshotVersion = 1

// snapshot is what Save writes: every document, by ID. Chunks are not
// written: Load cuts the documents again, with its own options.
type snapshot struct {
	Version   int    `json:"version"`
	Documents []*Doc `json:"documents"`
}

// Save writes every document of the knowledge base to w as JSON, for Load
// to read back: as the knowledge base holds them (text normalized, title
// found), by ID. Chunks and embedding vectors are not written.
func (kb *KB) Save(w io.Writer) error {
	kb.mu.RLock()
	snap := snapshot{Version: SnapshotVersion, Documents: make([]*Doc, 0, len(kb.docs))}
	for _, doc := range kb.docs {
		d := doc.doc.clone()
		snap.Documents = append(snap.Documents, &d)
	}
	kb.mu.RUnlock()
	slices.SortFunc(snap.Documents, func(a, b *Doc) int { return strings.Compare(a.ID, b.ID) })
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(snap); err != nil {
		return fmt.Errorf("knowledge: writing the snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("knowledge: writing the snapshot: %w", err)
	}
	return nil
}

// Load replaces the knowledge base's documents with those of a snapshot
// Save wrote, read from r, cut into chunks with the knowledge base's
// options (which may differ from those of the one that saved it). It checks
// the whole snapshot before it changes anything: a snapshot that is not
// valid JSON, is cut short, has another version, or holds a document the
// knowledge base would refuse (no ID, text that is not UTF-8, larger than
// WithMaxDocumentSize, an ID twice) is an error that says what is wrong,
// matches ErrCorrupt and leaves the knowledge base as it was. A knowledge
// base with an Embedder embeds the loaded chunks. The loaded documents
// replace those of the knowledge base's store (its own, or the one given
// with WithStore, which other replicas then read with Sync) in one batch.
func (kb *KB) Load(ctx context.Context, r io.Reader) error {
	var snap snapshot
	if err := snapio.DecodeJSON(r, &snap); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("%w: the snapshot has version %d; this knowledge base reads version %d", ErrCorrupt, snap.Version, SnapshotVersion)
	}
	docs := make([]*document, 0, len(snap.Documents))
	seen := make(map[string]bool, len(snap.Documents))
	var all []*chunk
	for i, d := range snap.Documents {
		if d == nil {
			return fmt.Errorf("%w: document %d is null", ErrCorrupt, i)
		}
		if d.ID == "" {
			return fmt.Errorf("%w: document %d has no id", ErrCorrupt, i)
		}
		if seen[d.ID] {
			return fmt.Errorf("%w: document %d: the id %q is taken by an earlier document", ErrCorrupt, i, d.ID)
		}
		seen[d.ID] = true
		doc, err := kb.prepare(*d)
		if err != nil {
			return fmt.Errorf("%w: document %d: %w", ErrCorrupt, i, err)
		}
		docs = append(docs, doc)
		all = append(all, doc.chunks...)
	}
	if err := kb.embedChunks(ctx, all); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	versions, err := kb.replaceStored(ctx, docs)
	if err != nil {
		return err
	}
	fresh := &KB{cfg: kb.cfg, docs: map[string]*document{}, postings: map[string]map[*chunk]struct{}{}}
	for _, doc := range docs {
		fresh.insert(doc)
	}
	kb.mu.Lock()
	defer kb.mu.Unlock()
	kb.docs, kb.postings = fresh.docs, fresh.postings
	kb.chunks, kb.terms, kb.dim = fresh.chunks, fresh.terms, fresh.dim
	kb.durable.versions = versions
	kb.version++
	return nil
}

// replaceStored makes docs the store's documents, in one batch that
// deletes the others, and returns the versions written.
func (kb *KB) replaceStored(ctx context.Context, docs []*document) (map[string]int64, error) {
	items, err := kb.cfg.store.Search(ctx, kb.cfg.namespace, store.Query{Limit: 1 << 30})
	if err != nil {
		return nil, fmt.Errorf("knowledge: %w", err)
	}
	keep := make(map[string]bool, len(docs))
	ops := make([]store.Op, 0, len(docs)+len(items))
	for _, doc := range docs {
		value, err := json.Marshal(doc.doc)
		if err != nil {
			return nil, fmt.Errorf("knowledge: %w", err)
		}
		keep[doc.doc.ID] = true
		ops = append(ops, store.PutOp(kb.cfg.namespace, doc.doc.ID, value, store.WithIndexFields()))
	}
	for _, it := range items {
		if len(it.Namespace) == len(kb.cfg.namespace) && !keep[it.Key] {
			ops = append(ops, store.DeleteOp(kb.cfg.namespace, it.Key))
		}
	}
	written, err := kb.cfg.store.Apply(ctx, ops)
	if err != nil {
		return nil, fmt.Errorf("knowledge: storing the snapshot: %w", err)
	}
	versions := make(map[string]int64, len(docs))
	for i, doc := range docs {
		versions[doc.doc.ID] = written[i].Version
	}
	return versions, nil
}

// SaveFile writes the knowledge base's snapshot (see Save) to the file at
// path, atomically: to a temporary file in the same directory, synced to
// the disk, then renamed over path, so that path holds the old snapshot or
// the new one whole, never a part. The file is readable by its owner alone
// (mode 0600) unless it existed before, when it keeps its mode.
func (kb *KB) SaveFile(path string) error {
	if err := snapio.WriteFile(path, kb.Save); err != nil {
		return fmt.Errorf("knowledge: saving %s: %w", path, err)
	}
	return nil
}

// LoadFile replaces the knowledge base's documents with the snapshot in
// the file at path (see Load). A missing file is an error that matches
// fs.ErrNotExist: a program's first run can test for it with errors.Is and
// build the knowledge base from its sources.
func (kb *KB) LoadFile(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("knowledge: %w", err)
	}
	defer f.Close()
	if err := kb.Load(ctx, f); err != nil {
		return fmt.Errorf("%w (file %s)", err, path)
	}
	return nil
}
