package memory

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/internal/engine"
)

// New returns an empty store in memory.
func New(opts ...store.Option) store.Store {
	return engine.New(&driver{rows: map[string]map[string]*engine.Row{}}, store.NewConfig(opts...))
}

// driver keeps rows in maps: namespace, then key.
type driver struct {
	mu   sync.RWMutex
	rows map[string]map[string]*engine.Row
	seq  int64
}

func live(r *engine.Row, now time.Time) bool {
	return r != nil && (r.ExpiresAt.IsZero() || now.Before(r.ExpiresAt))
}

func (d *driver) Get(ctx context.Context, ns, key string, now time.Time) (engine.Row, bool, error) {
	if err := ctx.Err(); err != nil {
		return engine.Row{}, false, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	r := d.rows[ns][key]
	if !live(r, now) {
		return engine.Row{}, false, nil
	}
	return copyRow(r, true), true, nil
}

// copyRow returns r with its own value (and vector, when asked).
func copyRow(r *engine.Row, vector bool) engine.Row {
	c := *r
	c.Value = slices.Clone(r.Value)
	if vector {
		c.Vector = slices.Clone(r.Vector)
	} else {
		c.Vector = nil
	}
	return c
}

func (d *driver) Apply(ctx context.Context, ws []engine.Write, now time.Time) ([]engine.Row, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Check every condition first, against the state each earlier write
	// of the batch leaves, so that a failing batch changes nothing.
	pending := map[[2]string]*engine.Row{}
	current := func(ns, key string) *engine.Row {
		if r, ok := pending[[2]string{ns, key}]; ok {
			return r
		}
		if r := d.rows[ns][key]; live(r, now) {
			return r
		}
		return nil
	}
	out := make([]engine.Row, len(ws))
	seq := d.seq
	for i, w := range ws {
		cur := current(w.NS, w.Key)
		var have int64
		if cur != nil {
			have = cur.Version
		}
		if w.Conditional && have != w.IfVersion {
			return nil, &store.ConflictError{Namespace: store.DecodeNamespace(w.NS), Key: w.Key, Want: w.IfVersion, Have: have}
		}
		seq++
		if w.Value == nil {
			pending[[2]string{w.NS, w.Key}] = nil
			continue
		}
		r := &engine.Row{NS: w.NS, Key: w.Key, Value: slices.Clone(w.Value), Version: have + 1,
			CreatedAt: now, UpdatedAt: now, ExpiresAt: w.ExpiresAt, Vector: slices.Clone(w.Vector), Seq: seq}
		if cur != nil {
			r.CreatedAt = cur.CreatedAt
		}
		pending[[2]string{w.NS, w.Key}] = r
		out[i] = copyRow(r, false)
	}
	d.seq = seq
	for k, r := range pending {
		m := d.rows[k[0]]
		if r == nil {
			delete(m, k[1])
			if len(m) == 0 {
				delete(d.rows, k[0])
			}
			continue
		}
		if m == nil {
			m = map[string]*engine.Row{}
			d.rows[k[0]] = m
		}
		m[k[1]] = r
	}
	return out, nil
}

func under(ns, prefix string) bool { return strings.HasPrefix(ns, prefix) }

func (d *driver) Scan(ctx context.Context, o engine.ScanOptions, now time.Time, fn func(engine.Row) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Rows are never changed in place (a write stores a new one): collect
	// pointers under the lock and copy each row as it is handed out.
	d.mu.RLock()
	var rows []*engine.Row
	for ns, m := range d.rows {
		if !under(ns, o.Prefix) {
			continue
		}
		for _, r := range m {
			if live(r, now) && r.Seq > o.AfterSeq && (!o.Embedded || len(r.Vector) > 0) {
				rows = append(rows, r)
			}
		}
	}
	d.mu.RUnlock()
	for _, r := range rows {
		c := *r
		if !o.Vectors {
			c.Vector = nil
		}
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

func (d *driver) Namespaces(ctx context.Context, prefix string, now time.Time) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	var out []string
	for ns, m := range d.rows {
		if !under(ns, prefix) {
			continue
		}
		for _, r := range m {
			if live(r, now) {
				out = append(out, ns)
				break
			}
		}
	}
	return out, nil
}

func (d *driver) Sweep(ctx context.Context, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for ns, m := range d.rows {
		for k, r := range m {
			if !live(r, now) {
				delete(m, k)
				n++
			}
		}
		if len(m) == 0 {
			delete(d.rows, ns)
		}
	}
	return n, nil
}

func (d *driver) Close() error { return nil }
