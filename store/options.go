package store

import (
	"time"
)

// Option configures a store when a backend opens it.
type Option func(*Config)

// Config is what the options set. Backends read it through NewConfig;
// users set it through the options.
type Config struct {
	// Embedder embeds items and queries for search by meaning; nil for a
	// store without it.
	Embedder Embedder
	// Index names the fields embedded by default (see WithIndex).
	Index []string
	// ExactLimit, when positive, is the number of embedded items under a
	// search prefix up to which a search by meaning compares the query with
	// every item; above it, the store builds an approximate index of the
	// prefix in memory and searches that. Zero or negative: always exact.
	ExactLimit int
	// Now is the store's clock.
	Now func() time.Time
	// TablePrefix and Schema place an SQL backend's tables.
	TablePrefix, Schema string
}

// NewConfig applies opts over the defaults.
func NewConfig(opts ...Option) Config {
	c := Config{Now: time.Now, TablePrefix: "trellis_"}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithEmbedder makes the store embed the items it stores (their indexed
// fields, see WithIndex) and enables search by meaning (Query.Text).
func WithEmbedder(e Embedder) Option {
	return func(c *Config) { c.Embedder = e }
}

// WithIndex names the fields of an item's value whose text is embedded,
// as dot-separated paths ("content", "author.bio"); "$" is the whole value.
// A string field is embedded as it is, other values as their JSON; the
// fields an item has are joined with newlines. The default is "$".
// WithIndexFields overrides it for one put.
func WithIndex(fields ...string) Option {
	return func(c *Config) { c.Index = fields }
}

// WithExactLimit makes searches by meaning under a prefix of more than n
// embedded items go through an approximate index (an HNSW graph) kept in
// the process's memory. Without it every search is exact. The index finds
// fewer of the true nearest items than an exact scan (see
// docs/performance.md for the figures), costs seconds to build per 10,000
// items, and sees other processes' writes before each search.
func WithExactLimit(n int) Option {
	return func(c *Config) { c.ExactLimit = n }
}

// WithClock sets the store's clock (time.Now unless set), for tests of
// expiry.
func WithClock(now func() time.Time) Option {
	return func(c *Config) { c.Now = now }
}

// WithTablePrefix sets the prefix of an SQL backend's table names,
// "trellis_" unless set.
func WithTablePrefix(p string) Option {
	return func(c *Config) { c.TablePrefix = p }
}

// WithSchema puts a Postgres backend's tables in the named schema,
// creating it when missing (the search_path's first schema unless set).
// Other backends ignore it.
func WithSchema(name string) Option {
	return func(c *Config) { c.Schema = name }
}
