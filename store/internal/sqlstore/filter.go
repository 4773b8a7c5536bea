package sqlstore

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/trellis-go/trellis/store"
)

// maxFloat is math.MaxFloat64 as SQL: a JSON number beyond it is not a
// float64, so encoding/json, and with it store.Filter, fails on the value.
const maxFloat = `1.7976931348623157e308`

// filter adds to a scan's conditions those of a search's filter that SQL
// can express exactly as store.Filter.Match decides them, so that only
// matching rows are read:
//
//   - equality with a string, a number, a boolean or null, and the ranges
//     (numbers with numbers, strings with strings, byte by byte), in
//     SQLite through json_type and json_extract;
//   - equality with any value but a number by JSONB containment (which the
//     GIN index of migration 2 serves; containment may keep rows with
//     longer arrays, which the engine drops), and the ranges and equality
//     with a number through jsonb_typeof and #>, in PostgreSQL (containment
//     compares numbers as decimals, exactly, where Go compares float64s).
//
// A number is compared as a float64 (CAST AS REAL, ::float8), as Go
// compares it after decoding. The conditions it cannot express
// (inequality, equality with an object or array in SQLite, paths with
// quotes or backslashes in SQLite) are left to the engine, which tests
// every row it reads.
func (d *Driver) filter(cond string, args []any, conds []store.Cond) (string, []any) {
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var contains []store.Cond
	for _, c := range conds {
		var expr string
		if d.t.dialect == Postgres {
			if _, number := c.Value.(float64); c.Op == store.OpEq && !number {
				contains = append(contains, c)
				continue
			}
			expr = pgRange(c, arg)
		} else {
			expr = sqliteCond(c, arg)
		}
		if expr != "" {
			cond += ` AND ` + expr
		}
	}
	if len(contains) > 0 {
		if doc, ok := containment(contains); ok {
			cond += ` AND value @> ` + arg(doc) + `::jsonb`
		}
	}
	return cond, args
}

// sqlOp is the SQL comparison of a range operator.
func sqlOp(op store.Operator) string {
	switch op {
	case store.OpGt:
		return ">"
	case store.OpGte:
		return ">="
	case store.OpLt:
		return "<"
	case store.OpLte:
		return "<="
	}
	return ""
}

// sqliteCond returns c as an SQLite condition, or "" when it has none.
func sqliteCond(c store.Cond, arg func(any) string) string {
	if strings.ContainsAny(c.Path, `"\`) {
		return ""
	}
	path := func() string { return arg(`$."` + strings.ReplaceAll(c.Path, ".", `"."`) + `"`) }
	op := "="
	if c.Op != store.OpEq {
		if op = sqlOp(c.Op); op == "" {
			return ""
		}
	}
	switch v := c.Value.(type) {
	case string:
		p := path()
		return `(json_type(value, ` + p + `) = 'text' AND json_extract(value, ` + p + `) ` + op + ` ` + arg(v) + `)`
	case float64:
		p := path()
		n := `CAST(json_extract(value, ` + p + `) AS REAL)`
		return `(json_type(value, ` + p + `) IN ('integer', 'real') AND abs(` + n + `) <= ` + maxFloat + ` AND ` + n + ` ` + op + ` ` + arg(v) + `)`
	case bool:
		if c.Op != store.OpEq {
			return ""
		}
		if v {
			return `json_type(value, ` + path() + `) = 'true'`
		}
		return `json_type(value, ` + path() + `) = 'false'`
	case nil:
		if c.Op != store.OpEq {
			return ""
		}
		return `json_type(value, ` + path() + `) = 'null'`
	}
	return ""
}

// pgRange returns the range condition c, or the equality with a number, as
// a PostgreSQL condition, or "" when it has none. The CASEs keep a cast from running on a field of
// another type, which would fail the query.
func pgRange(c store.Cond, arg func(any) string) string {
	op := sqlOp(c.Op)
	if c.Op == store.OpEq {
		op = "="
	}
	if op == "" {
		return ""
	}
	parts := strings.Split(c.Path, ".")
	ph := make([]string, len(parts))
	for i, p := range parts {
		ph[i] = arg(p) + `::text`
	}
	field := `(value #> ARRAY[` + strings.Join(ph, ", ") + `])`
	text := `(value #>> ARRAY[` + strings.Join(ph, ", ") + `])`
	switch v := c.Value.(type) {
	case string:
		return `(CASE WHEN jsonb_typeof(` + field + `) = 'string' THEN ` + text + ` COLLATE "C" ` + op + ` ` + arg(v) + `::text END)`
	case float64:
		return `(CASE WHEN jsonb_typeof(` + field + `) = 'number' THEN CASE WHEN ` + field + `::numeric BETWEEN -` + maxFloat + ` AND ` + maxFloat +
			` THEN ` + field + `::float8 ` + op + ` ` + arg(v) + `::float8 END END)`
	}
	return ""
}

// containment returns the JSON document that contains the equalities
// eqs: each value at its path.
func containment(eqs []store.Cond) (string, bool) {
	doc := map[string]any{}
	for _, c := range eqs {
		m := doc
		parts := strings.Split(c.Path, ".")
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = c.Value
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", false
	}
	return string(b), true
}
