package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/trellis-go/trellis/store"
)

// Row is an item as a backend keeps it.
type Row struct {
	// NS is the encoded namespace (store.EncodeNamespace).
	NS        string
	Key       string
	Value     json.RawMessage
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
	ExpiresAt time.Time // zero: never
	// Vector is the item's unit-length embedding, nil when it has none or
	// it was not asked for.
	Vector []float32
	// Seq orders the writes of the whole store: a write takes a Seq above
	// every earlier one, and writes commit in Seq order.
	Seq int64
}

// Write is one write of a batch.
type Write struct {
	NS  string
	Key string
	// Value is the JSON object to store; nil deletes.
	Value     json.RawMessage
	Vector    []float32
	ExpiresAt time.Time
	// Conditional writes apply only over IfVersion (0: no live item);
	// otherwise the driver returns a *store.ConflictError.
	Conditional bool
	IfVersion   int64
}

// ScanOptions selects the rows of a scan.
type ScanOptions struct {
	// Prefix is an encoded namespace prefix; "" scans every row.
	Prefix string
	// AfterSeq keeps the rows whose Seq is above it.
	AfterSeq int64
	// Vectors loads the rows' vectors; Embedded keeps only the rows that
	// have one.
	Vectors, Embedded bool
	// Filter holds the search's conditions (store.Filter.Conds) a driver
	// may use to skip rows; it may return rows that fail them (the engine
	// tests every row), never leave out one that meets them.
	Filter []store.Cond
	// Newest and Limit, for a driver that implements Pager, ask for the
	// rows newest first (UpdatedAt, latest first, then NS and Key in byte
	// order) and for at most Limit of them (every one when zero). Other
	// drivers ignore them.
	Newest bool
	Limit  int
}

// Pager is a Driver whose Scan honours ScanOptions.Newest and Limit: a
// search without text then reads the rows of its page, not every row that
// meets its filter.
type Pager interface {
	Driver
	// ScansNewestFirst marks the driver; it does nothing.
	ScansNewestFirst()
}

// Key names a row: its namespace and key.
type Key struct{ NS, Key string }

// ManyGetter is a Driver that reads many rows at once (one round trip to
// its database): the approximate index checks its candidates with it.
type ManyGetter interface {
	// GetMany returns the live rows among keys, with their vectors, in
	// any order; a key with no live row is left out.
	GetMany(ctx context.Context, keys []Key, now time.Time) ([]Row, error)
}

// Driver keeps rows. Rows past their ExpiresAt (compared with the now
// passed in) are never returned, and count as absent for writes.
type Driver interface {
	// Get returns the live row at ns and key with its vector, and false
	// when there is none.
	Get(ctx context.Context, ns, key string, now time.Time) (Row, bool, error)
	// Apply carries out ws in one transaction, in order, and returns the
	// rows written (the zero Row for a delete). A version stored is the
	// live row's plus one, or 1; CreatedAt is kept from a live row.
	Apply(ctx context.Context, ws []Write, now time.Time) ([]Row, error)
	// Scan calls fn for each live row that o selects, in no set order,
	// until fn returns an error, which Scan returns. fn must not change
	// the rows' values or vectors, which may be the driver's own.
	Scan(ctx context.Context, o ScanOptions, now time.Time, fn func(Row) error) error
	// Namespaces returns the encoded namespaces under prefix that hold a
	// live row, each once.
	Namespaces(ctx context.Context, prefix string, now time.Time) ([]string, error)
	// Sweep deletes the rows expired at now and returns how many.
	Sweep(ctx context.Context, now time.Time) (int, error)
	// Close releases the driver.
	Close() error
}
