package sqlstore

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/trellis-go/trellis/store"
	"github.com/trellis-go/trellis/store/internal/engine"
)

// Driver keeps a store's rows in a SQL database.
type Driver struct {
	db    *sql.DB
	owned bool // Close closes db
	t     tables
	// write admits one writer of this process at a time (SQLite), so
	// in-process writers queue in Go instead of polling SQLite's lock.
	write sync.Mutex
}

var _ engine.Pager = (*Driver)(nil)

// ScansNewestFirst implements engine.Pager: Scan orders and limits its
// rows in SQL.
func (d *Driver) ScansNewestFirst() {}

// Open returns a driver on db in dialect, its tables named with prefix in
// schema (Postgres; "" for the search_path's), after creating or migrating
// them. Close closes db when owned.
func Open(ctx context.Context, db *sql.DB, dialect Dialect, schema, prefix string, owned bool) (*Driver, error) {
	if err := checkIdentifier(prefix, true); err != nil {
		return nil, fmt.Errorf("table prefix %q: %w", prefix, err)
	}
	t := tables{dialect: dialect, prefix: prefix}
	if schema != "" {
		if err := checkIdentifier(schema, false); err != nil {
			return nil, fmt.Errorf("schema %q: %w", schema, err)
		}
		t.schema = `"` + schema + `"`
	}
	d := &Driver{db: db, owned: owned, t: t}
	if err := d.migrate(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// checkIdentifier accepts ASCII letters, digits and underscores, not
// starting with a digit, at most 40 bytes (the longest table name the
// store appends stays within PostgreSQL's 63).
func checkIdentifier(name string, emptyOK bool) error {
	if name == "" && !emptyOK {
		return errors.New("empty")
	}
	if len(name) > 40 {
		return errors.New("longer than 40 bytes")
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

// DB returns the database the driver runs on.
func (d *Driver) DB() *sql.DB { return d.db }

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func encodeVector(v []float32) []byte {
	if v == nil {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

const columns = `namespace, key, value, version, created_at, updated_at, expires_at, seq`

// scanRow reads the columns above, and the vector when withVector.
func scanRow(sc interface{ Scan(...any) error }, withVector bool) (engine.Row, error) {
	var r engine.Row
	var value, vec []byte
	var created, updated int64
	var expires sql.NullInt64
	dest := []any{&r.NS, &r.Key, &value, &r.Version, &created, &updated, &expires, &r.Seq}
	if withVector {
		dest = append(dest, &vec)
	}
	if err := sc.Scan(dest...); err != nil {
		return r, err
	}
	r.Value = value
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	if expires.Valid {
		r.ExpiresAt = fromMicros(expires.Int64)
	}
	r.Vector = decodeVector(vec)
	return r, nil
}

// Get implements engine.Driver.
func (d *Driver) Get(ctx context.Context, ns, key string, now time.Time) (engine.Row, bool, error) {
	row := d.db.QueryRowContext(ctx, d.t.expand(`SELECT `+columns+`, vector FROM {items}
		WHERE namespace = $1 AND key = $2 AND (expires_at IS NULL OR expires_at > $3)`), ns, key, micros(now))
	r, err := scanRow(row, true)
	if errors.Is(err, sql.ErrNoRows) {
		return engine.Row{}, false, nil
	}
	if err != nil {
		return engine.Row{}, false, err
	}
	return r, true, nil
}

// maxGetMany is the most rows GetMany asks for in one statement (two
// parameters each, well under SQLite's and PostgreSQL's limits).
const maxGetMany = 256

// GetMany implements engine.ManyGetter: one statement per maxGetMany keys
// instead of a statement per key.
func (d *Driver) GetMany(ctx context.Context, keys []engine.Key, now time.Time) ([]engine.Row, error) {
	var out []engine.Row
	for len(keys) > 0 {
		n := min(len(keys), maxGetMany)
		var q strings.Builder
		args := make([]any, 0, 2*n+1)
		args = append(args, micros(now))
		q.WriteString(`SELECT ` + columns + `, vector FROM {items}
			WHERE (expires_at IS NULL OR expires_at > $1) AND (namespace, key) IN (VALUES `)
		for i, k := range keys[:n] {
			if i > 0 {
				q.WriteString(", ")
			}
			fmt.Fprintf(&q, "($%d, $%d)", 2*i+2, 2*i+3)
			args = append(args, k.NS, k.Key)
		}
		q.WriteString(")")
		rows, err := d.db.QueryContext(ctx, d.t.expand(q.String()), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			r, err := scanRow(rows, true)
			if err != nil {
				rows.Close()
				return nil, err
			}
			out = append(out, r)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		keys = keys[n:]
	}
	return out, nil
}

// Apply implements engine.Driver. The write clock is taken first, so
// writers of every process hold it in turn until they commit: writes
// commit in the order of their Seq, which is what the approximate index's
// catching up relies on.
func (d *Driver) Apply(ctx context.Context, ws []engine.Write, now time.Time) (rows []engine.Row, err error) {
	if d.t.dialect == SQLite {
		d.write.Lock()
		defer d.write.Unlock()
	}
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var end int64
	if err := tx.QueryRowContext(ctx, d.t.expand(`UPDATE {clock} SET seq = seq + $1 WHERE id = 1 RETURNING seq`), len(ws)).Scan(&end); err != nil {
		return nil, fmt.Errorf("advance write clock: %w", err)
	}
	base := end - int64(len(ws))
	nowUS := micros(now)
	rows = make([]engine.Row, len(ws))
	for i, w := range ws {
		var version, created int64
		var expires sql.NullInt64
		err := tx.QueryRowContext(ctx, d.t.expand(`SELECT version, created_at, expires_at FROM {items} WHERE namespace = $1 AND key = $2`),
			w.NS, w.Key).Scan(&version, &created, &expires)
		live := err == nil && (!expires.Valid || expires.Int64 > nowUS)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		var have int64
		if live {
			have = version
		} else {
			created = nowUS
		}
		if w.Conditional && have != w.IfVersion {
			return nil, &store.ConflictError{Namespace: store.DecodeNamespace(w.NS), Key: w.Key, Want: w.IfVersion, Have: have}
		}
		seq := base + int64(i) + 1
		if w.Value == nil {
			if _, err := tx.ExecContext(ctx, d.t.expand(`DELETE FROM {items} WHERE namespace = $1 AND key = $2`), w.NS, w.Key); err != nil {
				return nil, err
			}
			continue
		}
		var exp sql.NullInt64
		if !w.ExpiresAt.IsZero() {
			exp = sql.NullInt64{Int64: micros(w.ExpiresAt), Valid: true}
		}
		// RETURNING gives the value as the database keeps it (JSONB's
		// normal form in Postgres), as Get will.
		var stored []byte
		if err := tx.QueryRowContext(ctx, d.t.expand(`INSERT INTO {items} (`+columns+`, vector)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, version = excluded.version,
				created_at = excluded.created_at, updated_at = excluded.updated_at,
				expires_at = excluded.expires_at, seq = excluded.seq, vector = excluded.vector
			RETURNING value`),
			w.NS, w.Key, string(w.Value), have+1, created, nowUS, exp, seq, encodeVector(w.Vector)).Scan(&stored); err != nil {
			return nil, err
		}
		rows[i] = engine.Row{NS: w.NS, Key: w.Key, Value: stored, Version: have + 1,
			CreatedAt: fromMicros(created), UpdatedAt: now, ExpiresAt: w.ExpiresAt, Seq: seq}
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	return rows, nil
}

// where returns the conditions selecting live rows under prefix, with
// their arguments numbered from $1.
func where(prefix string, now time.Time) (string, []any) {
	cond := `(expires_at IS NULL OR expires_at > $1)`
	args := []any{micros(now)}
	if prefix != "" {
		cond += ` AND namespace >= $2 AND namespace < $3`
		args = append(args, prefix, store.PrefixEnd(prefix))
	}
	return cond, args
}

// Scan implements engine.Driver.
func (d *Driver) Scan(ctx context.Context, o engine.ScanOptions, now time.Time, fn func(engine.Row) error) error {
	cond, args := where(o.Prefix, now)
	if o.AfterSeq > 0 {
		args = append(args, o.AfterSeq)
		cond += ` AND seq > $` + strconv.Itoa(len(args))
	}
	if o.Embedded {
		cond += ` AND vector IS NOT NULL`
	}
	cond, args = d.filter(cond, args, o.Filter)
	cols := columns
	if o.Vectors {
		cols += `, vector`
	}
	q := `SELECT ` + cols + ` FROM {items} WHERE ` + cond
	if o.Newest {
		q += ` ORDER BY updated_at DESC, namespace, key`
	}
	if o.Limit > 0 {
		args = append(args, o.Limit)
		q += ` LIMIT $` + strconv.Itoa(len(args))
	}
	rs, err := d.db.QueryContext(ctx, d.t.expand(q), args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		r, err := scanRow(rs, o.Vectors)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rs.Err()
}

// Namespaces implements engine.Driver.
func (d *Driver) Namespaces(ctx context.Context, prefix string, now time.Time) ([]string, error) {
	cond, args := where(prefix, now)
	rs, err := d.db.QueryContext(ctx, d.t.expand(`SELECT DISTINCT namespace FROM {items} WHERE `+cond), args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var ns string
		if err := rs.Scan(&ns); err != nil {
			return nil, err
		}
		out = append(out, ns)
	}
	return out, rs.Err()
}

// Sweep implements engine.Driver.
func (d *Driver) Sweep(ctx context.Context, now time.Time) (int, error) {
	if d.t.dialect == SQLite {
		d.write.Lock()
		defer d.write.Unlock()
	}
	res, err := d.db.ExecContext(ctx, d.t.expand(`DELETE FROM {items} WHERE expires_at IS NOT NULL AND expires_at <= $1`), micros(now))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// Close implements engine.Driver.
func (d *Driver) Close() error {
	if d.owned {
		return d.db.Close()
	}
	return nil
}
