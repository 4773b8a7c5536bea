package workspace

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The notebook tools change a notebook by splicing its bytes: they find
// where each value of the file lies and rewrite only the values an edit
// changes. Everything else — other cells, metadata, fields this package
// does not know, key order, whitespace, escapes — stays byte for byte as it
// was, whichever program wrote the file and however it laid it out, which
// decoding and encoding again could not promise.
//
// The functions below walk JSON text that json.Valid has accepted, or
// text that it accepts once finite has replaced its non-finite numbers;
// they do not check it again. The bare words NaN, Infinity and -Infinity
// read as a number would: a value that ends where the next delimiter is.

// span is where a value lies in a document: data[start:end].
type span struct{ start, end int }

// member is one member of a JSON object.
type member struct {
	name  string // the key, decoded
	key   span   // the key, quotes included
	value span
}

// whole is the span of the member from its key to the end of its value.
func (m member) whole() span { return span{m.key.start, m.value.end} }

// object is a JSON object of a document and where its members lie.
type object struct {
	span
	members []member
}

// find returns the index of the member named name, or -1.
func (o object) find(name string) int {
	for i, m := range o.members {
		if m.name == name {
			return i
		}
	}
	return -1
}

// items returns the spans of the members, key to value.
func (o object) items() []span {
	s := make([]span, len(o.members))
	for i, m := range o.members {
		s[i] = m.whole()
	}
	return s
}

// array is a JSON array of a document and where its items lie.
type array struct {
	span
	items []span
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// skipSpace returns the index of the first byte at or after i that is not
// whitespace.
func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string that starts at i.
func skipString(d []byte, i int) int {
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(d)
}

// skipValue returns the index just past the value that starts at i.
func skipValue(d []byte, i int) int {
	if i >= len(d) {
		return len(d)
	}
	switch d[i] {
	case '"':
		return skipString(d, i)
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				i = skipString(d, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(d)
	}
	// A number, true, false or null.
	for i < len(d) && !isSpace(d[i]) && d[i] != ',' && d[i] != '}' && d[i] != ']' {
		i++
	}
	return i
}

// nonFinite are the words Python's json module, with which Jupyter saves
// notebooks, writes for the floats that have no JSON number: NaN,
// infinity and minus infinity. They are not JSON, but a notebook that holds
// such a float (in an output's data, a widget's state) has them.
var nonFinite = []string{"NaN", "Infinity", "-Infinity"}

// finite returns d with each of the nonFinite words that stands as a value
// in the JSON text from the offset from on replaced by a 0 padded with
// spaces to the word's length ("NaN" becomes "0  "), so that json.Valid
// and json.Unmarshal take it and every other byte stays where it was; d
// itself when it has no such word. A word counts only outside strings and
// set apart from what surrounds it (by whitespace, a bracket, a comma or a
// colon, or an end of the text): "NaNa", "-NaN", "+Infinity" and "nan"
// stay as they are, and invalid.
func finite(d []byte, from int) []byte {
	var out []byte    // the copy, once there is a word to replace
	delimited := true // whether a value may start at i
	for i := from; i < len(d); {
		c := d[i]
		if c == '"' {
			i = skipString(d, i)
			delimited = false
			continue
		}
		if delimited {
			if n := nonFiniteAt(d, i); n > 0 {
				if out == nil {
					out = bytes.Clone(d)
				}
				out[i] = '0'
				for j := i + 1; j < i+n; j++ {
					out[j] = ' '
				}
				i += n
				delimited = false
				continue
			}
		}
		delimited = isSpace(c) || c == ',' || c == ':' || c == '[' || c == '{'
		i++
	}
	if out == nil {
		return d
	}
	return out
}

// nonFiniteAt returns the length of the nonFinite word at d[i:] when one
// is there and ends the value, and 0 when none is.
func nonFiniteAt(d []byte, i int) int {
	for _, w := range nonFinite {
		if !bytes.HasPrefix(d[i:], []byte(w)) {
			continue
		}
		end := i + len(w)
		if end == len(d) || isSpace(d[end]) || d[end] == ',' || d[end] == ']' || d[end] == '}' {
			return len(w)
		}
	}
	return 0
}

// nonFiniteWord returns the nonFinite word at d[i:], or "".
func nonFiniteWord(d []byte, i int) string {
	for _, w := range nonFinite {
		if bytes.HasPrefix(d[i:], []byte(w)) {
			return w
		}
	}
	return ""
}

// parseObject reads the object that starts at i.
func parseObject(d []byte, i int) (object, error) {
	o := object{span: span{start: i}}
	i = skipSpace(d, i+1)
	for i < len(d) && d[i] != '}' {
		key := span{i, skipString(d, i)}
		name, err := decodeString(d[key.start:key.end])
		if err != nil {
			return object{}, err
		}
		i = skipSpace(d, skipSpace(d, key.end)+1) // past the colon
		value := span{i, skipValue(d, i)}
		o.members = append(o.members, member{name: name, key: key, value: value})
		i = skipSpace(d, value.end)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	o.end = min(i+1, len(d))
	return o, nil
}

// parseArray reads the array that starts at i.
func parseArray(d []byte, i int) array {
	a := array{span: span{start: i}}
	i = skipSpace(d, i+1)
	for i < len(d) && d[i] != ']' {
		item := span{i, skipValue(d, i)}
		a.items = append(a.items, item)
		i = skipSpace(d, item.end)
		if i < len(d) && d[i] == ',' {
			i = skipSpace(d, i+1)
		}
	}
	a.end = min(i+1, len(d))
	return a
}

// decodeString decodes the JSON string raw, quotes included.
func decodeString(raw []byte) (string, error) {
	if len(raw) >= 2 && !strings.ContainsRune(string(raw[1:len(raw)-1]), '\\') {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// appendQuoted appends s as a JSON string the way Jupyter writes one
// (Python's json module with ensure_ascii off): text as UTF-8, and escapes
// only for the quote, the backslash and control characters. Go's encoder
// would escape <, > and & and U+2028 and U+2029 as well, so that a cell
// written here would differ from the same cell saved by Jupyter. Bytes
// that are not UTF-8 become U+FFFD.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, "\ufffd"...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
		i++
	}
	return append(b, '"')
}

// quote returns s as a JSON string, as appendQuoted writes it.
func quote(s string) string { return string(appendQuoted(nil, s)) }

// layout is how the items of one JSON container are laid out: the
// whitespace after its opening bracket, after each comma and before its
// closing bracket. Jupyter's layout of a list at depth 1 is
// {"\n  ", "\n  ", "\n "}; a compact file's is {"", "", ""} or
// {"", " ", ""}.
type layout struct {
	open, sep, close string
}

// multiline reports whether the items go on lines of their own.
func (l layout) multiline() bool { return strings.ContainsRune(l.open, '\n') }

// child returns the layout of a container that is an item of one laid out
// as l, its items indent deeper than l's.
func (l layout) child(indent string) layout {
	if !l.multiline() {
		return layout{sep: l.sep}
	}
	base := lastLine(l.sep)
	return layout{open: base + indent, sep: base + indent, close: base}
}

// lastLine returns the whitespace ws from its last line break on: the
// break and the indentation after it.
func lastLine(ws string) string {
	i := strings.LastIndexByte(ws, '\n')
	if i < 0 {
		return ws
	}
	if i > 0 && ws[i-1] == '\r' {
		i--
	}
	return ws[i:]
}

// layoutOf returns the layout of the container d[c.start:c.end] whose
// items lie at items; fallback serves where it has too few items to tell.
func layoutOf(d []byte, c span, items []span, fallback layout) layout {
	if len(items) == 0 {
		return fallback
	}
	l := layout{
		open:  string(d[c.start+1 : items[0].start]),
		close: string(d[items[len(items)-1].end : c.end-1]),
	}
	switch {
	case len(items) > 1:
		comma := skipSpace(d, items[0].end)
		l.sep = string(d[comma+1 : items[1].start])
	case l.multiline():
		l.sep = l.open
	default:
		l.sep = fallback.sep
	}
	return l
}

// appendList appends a JSON array of the values, each already encoded,
// laid out as l.
func appendList(b []byte, values []string, l layout) []byte {
	return appendContainer(b, '[', ']', values, l)
}

// appendContainer appends an array or an object (open and close are its
// brackets) of the items, each already encoded, laid out as l. An empty
// one is written [] or {}, as Jupyter writes it.
func appendContainer(b []byte, open, close byte, values []string, l layout) []byte {
	if len(values) == 0 {
		return append(b, open, close)
	}
	b = append(b, open)
	b = append(b, l.open...)
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
			b = append(b, l.sep...)
		}
		b = append(b, v...)
	}
	b = append(b, l.close...)
	return append(b, close)
}
