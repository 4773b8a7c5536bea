package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/trellis-go/trellis/internal/snapio"
	"github.com/trellis-go/trellis/store"
)

// SnapshotVersion is the version of the format Save writes; Load reads it
// alone.
const SnapshotVersion = 1

// snapshot is what Save writes: every entry of every scope, scope by scope
// (in the order of their names) and oldest first within each.
type snapshot struct {
	Version int      `json:"version"`
	Entries []*Entry `json:"entries"`
}

// Save writes every entry of the store, of all scopes, to w as JSON, for
// Load to read back. Embedding vectors are not written.
func (s *Store) Save(w io.Writer) error {
	if s.local == nil || s.cfg.fromRun {
		return ErrDurable
	}
	// Save takes no context (its signature predates the store); the
	// in-process store it reads does no I/O.
	ctx := context.Background()
	scopes, err := s.scopes(ctx)
	if err != nil {
		return err
	}
	snap := snapshot{Version: SnapshotVersion, Entries: []*Entry{}}
	for _, name := range scopes {
		items, err := s.entries(ctx, s.local, name)
		if err != nil {
			return err
		}
		for _, it := range items {
			e := it.entry
			snap.Entries = append(snap.Entries, &e)
		}
	}
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

// scopes returns the names of the scopes of the in-process store, in
// order.
func (s *Store) scopes(ctx context.Context) ([]string, error) {
	depth := len(s.namespace()) + 1
	var out []string
	for offset := 0; ; offset += 1000 {
		nss, err := s.local.ListNamespaces(ctx, store.NamespaceQuery{Prefix: s.namespace(), MaxDepth: depth, Limit: 1000, Offset: offset})
		if err != nil {
			return nil, fmt.Errorf("memory: %w", err)
		}
		for _, ns := range nss {
			if name, ok := strings.CutPrefix(ns[len(ns)-1], "scope:"); ok && len(ns) == depth {
				out = append(out, name)
			}
		}
		if len(nss) < 1000 {
			return out, nil
		}
	}
}

// Load replaces the store's entries, of all scopes, with those of a
// snapshot Save wrote, read from r. It checks the whole snapshot before it
// changes anything: a snapshot that is not valid JSON, is cut short, has
// another version, or holds an entry the store would refuse (no ID or
// text, a duplicate ID in its scope, larger than WithMaxEntrySize) is an
// error that says what is wrong, matches ErrCorrupt and leaves the store
// as it was. A scope with more entries than WithMaxEntries keeps the
// newest. A store with an Embedder embeds the loaded entries; when that
// fails the store keeps what it had too.
func (s *Store) Load(ctx context.Context, r io.Reader) error {
	if s.local == nil || s.cfg.fromRun {
		return ErrDurable
	}
	var snap snapshot
	if err := snapio.DecodeJSON(r, &snap); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if snap.Version != SnapshotVersion {
		return fmt.Errorf("%w: the snapshot has version %d; this store reads version %d", ErrCorrupt, snap.Version, SnapshotVersion)
	}
	byScope := map[string][]*item{}
	ids := map[[2]string]bool{}
	for i, e := range snap.Entries {
		if e == nil {
			return fmt.Errorf("%w: entry %d is null", ErrCorrupt, i)
		}
		if err := s.check(e, true); err != nil {
			return fmt.Errorf("%w: entry %d: %w", ErrCorrupt, i, err)
		}
		if ids[[2]string{e.Scope, e.ID}] {
			return fmt.Errorf("%w: entry %d: %w: scope %q has an entry with id %q already", ErrCorrupt, i, ErrInvalidEntry, e.Scope, e.ID)
		}
		ids[[2]string{e.Scope, e.ID}] = true
		byScope[e.Scope] = append(byScope[e.Scope], newItem(*e, int64(i)))
	}
	s.load.Lock()
	defer s.load.Unlock()
	// One batch deletes what the store holds and puts the snapshot's
	// entries: all of it happens, or none.
	var ops []store.Op
	old, err := s.scopes(ctx)
	if err != nil {
		return err
	}
	for _, name := range old {
		items, err := s.entries(ctx, s.local, name)
		if err != nil {
			return err
		}
		for _, it := range items {
			ops = append(ops, store.DeleteOp(s.namespaceOf(name), it.entry.ID))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byScope)) {
		items := byScope[name]
		slices.SortStableFunc(items, older)
		for _, it := range items[max(0, len(items)-s.cfg.maxEntries):] {
			value, err := json.Marshal(stored{Entry: it.entry, Added: addedNow()})
			if err != nil {
				return fmt.Errorf("memory: %w", err)
			}
			ops = append(ops, store.PutOp(s.namespaceOf(name), it.entry.ID, value, store.WithIndexFields("text")))
		}
	}
	if _, err := s.local.Apply(ctx, ops); err != nil {
		if errors.Is(err, ErrEmbedding) {
			return err
		}
		return fmt.Errorf("memory: %w", err)
	}
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
