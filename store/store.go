package store

import (
	"context"
	"encoding/json"
	"time"
)

// Store keeps items under hierarchical namespaces. Implementations are safe
// for concurrent use.
//
// Every method that finds no live item answers as if the item did not
// exist: an item past its expiry is never returned, whether or not Sweep
// has removed it yet.
type Store interface {
	// Get returns the item at namespace and key, or an error matching
	// ErrNotFound.
	Get(ctx context.Context, namespace []string, key string) (Item, error)
	// Put stores value (a JSON object) at namespace and key, replacing any
	// item there, and returns the item stored, with its new version.
	Put(ctx context.Context, namespace []string, key string, value json.RawMessage, opts ...PutOption) (Item, error)
	// PutIf stores value only when the item's current version is version
	// (0: only when there is no item), and fails with a *ConflictError,
	// which matches ErrConflict, otherwise.
	PutIf(ctx context.Context, namespace []string, key string, value json.RawMessage, version int64, opts ...PutOption) (Item, error)
	// Delete removes the item at namespace and key; deleting an item that
	// does not exist is not an error.
	Delete(ctx context.Context, namespace []string, key string) error
	// Apply carries out ops in one transaction: all of them or, when one
	// fails (a version conflict, an invalid op), none. It returns, for each
	// op, the item stored (the zero Item for a delete).
	Apply(ctx context.Context, ops []Op) ([]Item, error)
	// Search returns the items under prefix (a namespace and every one
	// below it) that match q.
	Search(ctx context.Context, prefix []string, q Query) ([]Item, error)
	// ListNamespaces returns the namespaces that hold items, as q selects
	// them, in lexical order.
	ListNamespaces(ctx context.Context, q NamespaceQuery) ([][]string, error)
	// Sweep removes the items whose time to live has passed and returns
	// how many it removed.
	Sweep(ctx context.Context) (int, error)
	// Close releases what the store holds (not a database handle the
	// caller passed in).
	Close() error
}

// Item is a stored value and what the store knows about it.
type Item struct {
	// Namespace and Key locate the item.
	Namespace []string
	Key       string
	// Value is the item's JSON object.
	Value json.RawMessage
	// Version is 1 for a new item and grows by one with every write.
	Version int64
	// CreatedAt is when the item was first stored, UpdatedAt when it was
	// last written.
	CreatedAt time.Time
	UpdatedAt time.Time
	// ExpiresAt is when the item expires; zero for never.
	ExpiresAt time.Time
	// Score is, in the results of a search by meaning, the cosine
	// similarity of the item to the query (1 is the same direction); zero
	// otherwise.
	Score float64
}

// Decode unmarshals the item's value into v.
func (it Item) Decode(v any) error { return json.Unmarshal(it.Value, v) }

// Op is one write of a batch (see Store.Apply).
type Op struct {
	// Namespace and Key locate the item.
	Namespace []string
	Key       string
	// Value is the JSON object to store; nil deletes the item.
	Value json.RawMessage
	// IfVersion, when Conditional, is the version the item must have for
	// the op to apply (0: the item must not exist).
	IfVersion   int64
	Conditional bool
	// TTL, when positive, makes the item expire that long after the write.
	TTL time.Duration
	// Index, when not nil, names the fields whose text is embedded for
	// search by meaning, instead of the store's (see WithIndex); an empty,
	// non-nil slice embeds nothing.
	Index []string
}

// PutOption configures one Put or PutIf.
type PutOption func(*Op)

// WithTTL makes the item expire d after the write. Without it the item
// never expires.
func WithTTL(d time.Duration) PutOption {
	return func(o *Op) { o.TTL = d }
}

// WithIndexFields names the fields of this item whose text is embedded for
// search by meaning, in place of the store's default (WithIndex). With no
// fields, the item is not embedded and search by meaning never finds it.
func WithIndexFields(fields ...string) PutOption {
	return func(o *Op) {
		if fields == nil {
			fields = []string{}
		}
		o.Index = fields
	}
}

// PutOp returns the op that puts value at namespace and key.
func PutOp(namespace []string, key string, value json.RawMessage, opts ...PutOption) Op {
	op := Op{Namespace: namespace, Key: key, Value: value}
	for _, o := range opts {
		o(&op)
	}
	return op
}

// DeleteOp returns the op that deletes the item at namespace and key.
func DeleteOp(namespace []string, key string) Op {
	return Op{Namespace: namespace, Key: key}
}

// Embedder turns texts into vectors, one per text, all of one length.
// model.Embedder implementations satisfy it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
