package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trellis-go/trellis/state"
)

// Saver is an in-memory state.Saver. The zero value is an empty store ready
// to use. A Saver is safe for concurrent use and must not be copied after
// first use.
type Saver struct {
	mu      sync.RWMutex
	seq     uint64                         // insertion counter; orders checkpoints
	threads map[string]map[string]*history // thread ID → namespace → history
	guard   func(ctx context.Context) error
}

// history is one thread and namespace's checkpoints, oldest first.
type history struct {
	order []*entry
	byID  map[string]*entry
}

type entry struct {
	seq    uint64
	cp     state.Checkpoint
	writes []state.PendingWrite
}

var _ state.Saver = (*Saver)(nil)

// An Option configures the Saver New makes.
type Option func(*Saver)

// WithWriteGuard has the store call guard before it stores a write (Put,
// PutIfLatest, PutWrites): once the write's own checks have passed, while
// the store holds its lock, so that no other read or write of the store
// comes between the guard and the write. An error from guard refuses the
// write: nothing is stored, and the error returned wraps state.ErrFenced
// and guard's error. A write that fails its own checks (a conflict, a
// latest checkpoint that is not the expected one, an unknown checkpoint)
// reports that, and guard is not called.
//
// The guard is what lets a store in memory serve as the checkpointer of a
// process that fences writers elsewhere (runs/memory runs the runs layer's
// fence statement on its database there).
func WithWriteGuard(guard func(ctx context.Context) error) Option {
	return func(s *Saver) { s.guard = guard }
}

// New returns an empty in-memory store.
func New(opts ...Option) *Saver {
	s := &Saver{threads: make(map[string]map[string]*history)}
	for _, o := range opts {
		o(s)
	}
	return s
}

// admit calls the write guard, if any, for a write whose checks passed.
// The caller holds s.mu.
func (s *Saver) admit(ctx context.Context) error {
	if s.guard == nil {
		return nil
	}
	if err := s.guard(ctx); err != nil {
		return fmt.Errorf("%w: %w", state.ErrFenced, err)
	}
	return nil
}

// Put stores a copy of cp. A zero CreatedAt is set to the current time.
// Metadata keys and values must be valid UTF-8, as the durable stores
// require.
func (s *Saver) Put(ctx context.Context, cp state.Checkpoint) error {
	return s.put(ctx, cp, false, "")
}

// PutIfLatest stores a copy of cp, as Put does, provided that the latest
// checkpoint of cp's thread and namespace is the one with ID latest (none,
// with latest empty); otherwise it stores nothing and returns an error
// wrapping state.ErrNotLatest. See state.ConditionalSaver.
func (s *Saver) PutIfLatest(ctx context.Context, cp state.Checkpoint, latest string) error {
	return s.put(ctx, cp, true, latest)
}

// put stores cp, when cond only if the thread's latest checkpoint in cp's
// namespace is latest.
func (s *Saver) put(ctx context.Context, cp state.Checkpoint, cond bool, latest string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: put: %w", err)
	}
	if cp.ThreadID == "" {
		return errors.New("memory: put: checkpoint has no thread ID")
	}
	if cp.ID == "" {
		return fmt.Errorf("memory: put: thread %q: checkpoint has no ID", cp.ThreadID)
	}
	for k, v := range cp.Metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("memory: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID,
				fmt.Errorf("metadata %q: keys and values must be valid UTF-8", k)))
		}
	}
	stored := cloneCheckpoint(cp)
	if stored.CreatedAt.IsZero() {
		stored.CreatedAt = time.Now()
	}
	stored.CreatedAt = stored.CreatedAt.Round(0) // drop the monotonic reading

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.threads == nil {
		s.threads = make(map[string]map[string]*history)
	}
	namespaces := s.threads[cp.ThreadID]
	if namespaces == nil {
		namespaces = make(map[string]*history)
		s.threads[cp.ThreadID] = namespaces
	}
	h := namespaces[cp.Namespace]
	if h == nil {
		h = &history{byID: make(map[string]*entry)}
		namespaces[cp.Namespace] = h
	}
	if _, dup := h.byID[cp.ID]; dup {
		return describe(cp.ThreadID, cp.Namespace, cp.ID, state.ErrConflict)
	}
	if cond {
		found := ""
		if n := len(h.order); n > 0 {
			found = h.order[n-1].cp.ID
		}
		if found != latest {
			return describe(cp.ThreadID, cp.Namespace, cp.ID, state.NotLatest(found, latest))
		}
	}
	if err := s.admit(ctx); err != nil {
		return fmt.Errorf("memory: put: %w", describe(cp.ThreadID, cp.Namespace, cp.ID, err))
	}
	s.seq++
	e := &entry{seq: s.seq, cp: stored}
	h.order = append(h.order, e)
	h.byID[cp.ID] = e
	return nil
}

// PutWrites stores copies of writes against an existing checkpoint. A write
// whose TaskID is already stored replaces the stored one in its place.
func (s *Saver) PutWrites(ctx context.Context, threadID, namespace, checkpointID string, writes []state.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: put writes: %w", err)
	}
	for i, w := range writes {
		if w.TaskID == "" {
			return fmt.Errorf("memory: put writes: thread %q: checkpoint %q: write %d (node %q) has no task ID",
				threadID, checkpointID, i, w.Node)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.lookup(threadID, namespace, checkpointID)
	if e == nil {
		return describe(threadID, namespace, checkpointID, state.ErrNotFound)
	}
	if err := s.admit(ctx); err != nil {
		return fmt.Errorf("memory: put writes: %w", describe(threadID, namespace, checkpointID, err))
	}
	for _, w := range writes {
		stored := state.PendingWrite{TaskID: w.TaskID, Node: w.Node, Payload: bytes.Clone(w.Payload)}
		if i := indexOfTask(e.writes, w.TaskID); i >= 0 {
			e.writes[i] = stored
		} else {
			e.writes = append(e.writes, stored)
		}
	}
	return nil
}

func indexOfTask(writes []state.PendingWrite, taskID string) int {
	for i, w := range writes {
		if w.TaskID == taskID {
			return i
		}
	}
	return -1
}

// Get returns a copy of a checkpoint and its writes; an empty checkpointID
// asks for the latest.
func (s *Saver) Get(ctx context.Context, threadID, namespace, checkpointID string) (state.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return state.Tuple{}, fmt.Errorf("memory: get: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var e *entry
	if checkpointID == "" {
		if h := s.threads[threadID][namespace]; h != nil && len(h.order) > 0 {
			e = h.order[len(h.order)-1]
		}
	} else {
		e = s.lookup(threadID, namespace, checkpointID)
	}
	if e == nil {
		return state.Tuple{}, describe(threadID, namespace, checkpointID, state.ErrNotFound)
	}
	tup := state.Tuple{Checkpoint: cloneCheckpoint(e.cp)}
	if len(e.writes) > 0 {
		tup.Writes = make([]state.PendingWrite, len(e.writes))
		for i, w := range e.writes {
			tup.Writes[i] = state.PendingWrite{TaskID: w.TaskID, Node: w.Node, Payload: bytes.Clone(w.Payload)}
		}
	}
	return tup, nil
}

// List returns copies of a thread's checkpoints in a namespace, newest first.
func (s *Saver) List(ctx context.Context, threadID, namespace string, opts state.ListOptions) ([]state.Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	if opts.Limit < 0 {
		return nil, fmt.Errorf("memory: list: thread %q: limit must not be negative, got %d", threadID, opts.Limit)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	h := s.threads[threadID][namespace]
	end := 0 // checkpoints before index end are listed
	if h != nil {
		end = len(h.order)
	}
	if opts.Before != "" {
		b := s.lookup(threadID, namespace, opts.Before)
		if b == nil {
			return nil, fmt.Errorf("list before: %w", describe(threadID, namespace, opts.Before, state.ErrNotFound))
		}
		end = sort.Search(len(h.order), func(i int) bool { return h.order[i].seq >= b.seq })
	}
	n := end
	if opts.Limit > 0 && opts.Limit < n {
		n = opts.Limit
	}
	out := make([]state.Checkpoint, 0, n)
	for i := end - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, cloneCheckpoint(h.order[i].cp))
	}
	return out, nil
}

// DeleteThread removes a thread's checkpoints and writes in all namespaces.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: delete thread: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.threads, threadID)
	return nil
}

// Prune keeps the newest keep checkpoints of each namespace of a thread.
func (s *Saver) Prune(ctx context.Context, threadID string, keep int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: prune: %w", err)
	}
	if keep < 1 {
		return fmt.Errorf("memory: prune: thread %q: keep must be at least 1, got %d", threadID, keep)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.threads[threadID] {
		drop := len(h.order) - keep
		if drop <= 0 {
			continue
		}
		for _, e := range h.order[:drop] {
			delete(h.byID, e.cp.ID)
		}
		h.order = append([]*entry(nil), h.order[drop:]...) // let the dropped entries be collected
	}
	return nil
}

// lookup finds a checkpoint by ID. The caller holds s.mu.
func (s *Saver) lookup(threadID, namespace, checkpointID string) *entry {
	if h := s.threads[threadID][namespace]; h != nil {
		return h.byID[checkpointID]
	}
	return nil
}

func cloneCheckpoint(cp state.Checkpoint) state.Checkpoint {
	cp.Payload = bytes.Clone(cp.Payload)
	cp.Metadata = maps.Clone(cp.Metadata)
	return cp
}

// describe wraps err with the names of the thread, namespace and checkpoint
// it concerns, e.g. `thread "t1": checkpoint "abc": checkpoint not found`.
func describe(threadID, namespace, checkpointID string, err error) error {
	where := fmt.Sprintf("thread %q", threadID)
	if namespace != "" {
		where += fmt.Sprintf(" namespace %q", namespace)
	}
	if checkpointID != "" {
		where += fmt.Sprintf(": checkpoint %q", checkpointID)
	}
	return fmt.Errorf("%s: %w", where, err)
}
