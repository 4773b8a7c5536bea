package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/trellis-go/trellis/internal/snapio"
)

// SnapshotVersion is the version of the format Save writes; Load reads it
// alone.
const SnapshotVersion = 1

// embedBatch is how many texts Load gives the Embedder at a time.
const embedBatch = 256

// snapshot is what Save writes: every entry of every scope, scope by scope
// (in the order of their names) and oldest first within each.
type snapshot struct {
	Version int      `json:"version"`
	Entries []*Entry `json:"entries"`
}

// Save writes every entry of the store, of all scopes, to w as JSON, for
// Load to read back. Embedding vectors are not written.
func (s *Store) Save(w io.Writer) error {
	if s.cfg.backend != nil || s.cfg.fromRun {
		return ErrDurable
	}
	s.mu.RLock()
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range s.scopes {
			if !yield(name) {
				return
			}
		}
	})
	snap := snapshot{Version: SnapshotVersion, Entries: []*Entry{}}
	for _, name := range names {
		for _, it := range s.scopes[name].items {
			e := it.entry.clone()
			snap.Entries = append(snap.Entries, &e)
		}
	}
	s.mu.RUnlock()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(snap); err != nil {
		return fmt.Errorf("memory: writing the snapshot: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("memory: writing the snapshot: %w", err)
	}
	return nil
}

// Load replaces the store's entries, of all scopes, with those of a
// snapshot Save wrote, read from r. It checks the whole snapshot before it
// changes anything: a snapshot that is not valid JSON, is cut short, has
// another version, or holds an entry the store would refuse (no ID or
// text, a duplicate ID in its scope, larger than WithMaxEntrySize) is an
// error that says what is wrong, matches ErrCorrupt and leaves the store
// as it was. A scope with more entries than WithMaxEntries keeps the
// newest. A store with an Embedder embeds the loaded entries.
func (s *Store) Load(ctx context.Context, r io.Reader) error {
	if s.cfg.backend != nil || s.cfg.fromRun {
		return ErrDurable
	}
	var snap snapshot
	if err := snapio.DecodeJSON(r, &snap); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("%w: the snapshot has version %d; this store reads version %d", ErrCorrupt, snap.Version, SnapshotVersion)
	}
	items := make([]*item, 0, len(snap.Entries))
	for i, e := range snap.Entries {
		if e == nil {
			return fmt.Errorf("%w: entry %d is null", ErrCorrupt, i)
		}
		if err := s.check(e, true); err != nil {
			return fmt.Errorf("%w: entry %d: %w", ErrCorrupt, i, err)
		}
		items = append(items, newItem(*e))
	}
	if s.cfg.embed != nil {
		for start := 0; start < len(items); start += embedBatch {
			batch := items[start:min(start+embedBatch, len(items))]
			texts := make([]string, len(batch))
			for i, it := range batch {
				texts[i] = it.entry.Text
			}
			vecs, err := s.embed(ctx, texts)
			if err != nil {
				return err
			}
			for i, it := range batch {
				it.vec = vecs[i]
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fresh := &Store{cfg: s.cfg, scopes: map[string]*scope{}}
	for i, it := range items {
		if err := fresh.insert(it, false); err != nil {
			if errors.Is(err, ErrInvalidEntry) {
				return fmt.Errorf("%w: entry %d: %w", ErrCorrupt, i, err)
			}
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes = fresh.scopes
	s.seq = max(s.seq, fresh.seq)
	return nil
}

// SaveFile writes the store's snapshot (see Save) to the file at path,
// atomically: to a temporary file in the same directory, synced to the
// disk, then renamed over path, so that path holds the old snapshot or the
// new one whole, never a part. The file is readable by its owner alone
// (mode 0600) unless it existed before, when it keeps its mode.
func (s *Store) SaveFile(path string) error {
	if err := snapio.WriteFile(path, s.Save); err != nil {
		return fmt.Errorf("memory: saving %s: %w", path, err)
	}
	return nil
}

// LoadFile replaces the store's entries with the snapshot in the file at
// path (see Load). A missing file is an error that matches fs.ErrNotExist:
// a program's first run can test for it with errors.Is and start empty.
func (s *Store) LoadFile(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	defer f.Close()
	if err := s.Load(ctx, f); err != nil {
		return fmt.Errorf("%w (file %s)", err, path)
	}
	return nil
}
