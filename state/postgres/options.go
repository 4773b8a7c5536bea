package postgres

import (
	"fmt"

	"github.com/trellis-go/trellis/state"
)

// Option configures a store.
type Option func(*config)

type config struct {
	schema string // empty: the search_path decides
	prefix string
	guard  state.WriteGuard
}

func defaultConfig() config { return config{prefix: "trellis_"} }

// WithSchema puts the store's tables in the named schema, creating it if it
// does not exist. The name must be a plain identifier (letters, digits and
// underscores, not starting with a digit); it is quoted, so case matters.
// By default the tables go to the first schema on the search_path.
func WithSchema(name string) Option {
	return func(c *config) { c.schema = name }
}

// WithTablePrefix sets the prefix of the store's table names, "trellis_" by
// default. Stores with different prefixes in one schema do not see each
// other. The prefix must be empty or a plain identifier.
func WithTablePrefix(prefix string) Option {
	return func(c *config) { c.prefix = prefix }
}

// WithWriteGuard makes every write of the store conditional: the guard's
// statement, when it gives one, is sent first in the same transaction as
// the write (in the same round trip), and when it fails, nothing is
// stored and the write fails with an error wrapping state.ErrFenced and
// the statement's error. A guard refuses a write by raising an exception
// (a PL/pgSQL function that checks and RAISEs, for one). The runs layer
// (package runs) fences its workers' checkpoints this way.
func WithWriteGuard(g state.WriteGuard) Option {
	return func(c *config) { c.guard = g }
}

// maxIdentifier is PostgreSQL's identifier length limit, in bytes.
const maxIdentifier = 63

// longestSuffix is the longest name the store appends to the prefix.
const longestSuffix = "checkpoints_history"

func (c config) validate() error {
	if c.schema != "" {
		if err := checkIdentifier(c.schema); err != nil {
			return fmt.Errorf("schema %q: %w", c.schema, err)
		}
	}
	if c.prefix != "" {
		if err := checkIdentifier(c.prefix); err != nil {
			return fmt.Errorf("table prefix %q: %w", c.prefix, err)
		}
	}
	if len(c.prefix)+len(longestSuffix) > maxIdentifier {
		return fmt.Errorf("table prefix %q: too long: names would exceed %d bytes", c.prefix, maxIdentifier)
	}
	return nil
}

// checkIdentifier accepts ASCII letters, digits and underscores, not
// starting with a digit, at most maxIdentifier bytes.
func checkIdentifier(name string) error {
	if len(name) > maxIdentifier {
		return fmt.Errorf("longer than %d bytes", maxIdentifier)
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return fmt.Errorf("character %q at %d: use letters, digits and underscores, not starting with a digit", r, i)
		}
	}
	return nil
}
