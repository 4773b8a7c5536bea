package arguments

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxRepairDepth bounds the nesting Repair follows.
const maxRepairDepth = 512

// Repair makes a best effort to turn the almost-JSON that models
// sometimes produce into JSON. It returns valid JSON or an error, never
// anything else; valid JSON is returned unchanged. It handles:
//
//   - Markdown code fences (```json ... ```) and prose before the value;
//   - trailing and repeated commas, and missing commas between members;
//   - single-quoted and backtick-quoted strings;
//   - unquoted keys, and unquoted string values ({status: done});
//   - Python and JavaScript literals: True, False, None, undefined, NaN,
//     Infinity (the last three become null);
//   - comments (// and /* */);
//   - raw control characters and invalid escapes inside strings, and quotes
//     inside strings the model did not escape ("he said "hi"");
//   - numbers such as +1, .5, 1., 01;
//   - truncated input: an unterminated string, number or literal is
//     completed, a member without a value is dropped, and open arrays and
//     objects are closed.
//
// Text after the first complete value is ignored.
func Repair(raw []byte) ([]byte, error) {
	if json.Valid(raw) {
		return raw, nil
	}
	r := &repairer{src: extractValue(raw)}
	r.skip()
	if r.eof() {
		return nil, fmt.Errorf("%w: no JSON value found", ErrUnrepairable)
	}
	if c := r.peek(); isWordByte(c) && !(c >= '0' && c <= '9') {
		// At the top, a bare word must be a literal: prose is not a value.
		start := r.i
		w := r.readWord()
		r.i = start
		switch w {
		case "true", "True", "TRUE", "false", "False", "FALSE", "null", "None", "NULL", "nil", "undefined", "NaN", "Infinity":
		default:
			return nil, fmt.Errorf("%w: no JSON value found", ErrUnrepairable)
		}
	}
	if err := r.value(0, false); err != nil {
		return nil, err
	}
	out := r.out.Bytes()
	if !json.Valid(out) {
		return nil, fmt.Errorf("%w: could not recover a valid value", ErrUnrepairable)
	}
	return out, nil
}

// extractValue strips a Markdown code fence and any prose before the
// value. Backticks after the start of an object or array are the value's
// own (a string holding Markdown), not a fence around it.
func extractValue(raw []byte) []byte {
	s := bytes.TrimSpace(raw)
	if i := bytes.Index(s, []byte("```")); i >= 0 && bytes.IndexAny(s[:i], "{[") < 0 {
		body := s[i+3:]
		if nl := bytes.IndexByte(body, '\n'); nl >= 0 && isFenceInfo(body[:nl]) {
			body = body[nl+1:]
		} else if nl < 0 && isFenceInfo(body) {
			body = nil
		}
		// The closing fence is the last one: the value may hold fences of
		// its own, and text after the value is ignored anyway.
		if j := bytes.LastIndex(body, []byte("```")); j >= 0 {
			body = body[:j]
		}
		s = bytes.TrimSpace(body)
	}
	if len(s) > 0 && !startsValue(s[0]) {
		if i := bytes.IndexAny(s, "{["); i >= 0 {
			s = s[i:]
		}
	}
	return s
}

// isFenceInfo reports whether b is a code fence's info string ("json", "").
func isFenceInfo(b []byte) bool {
	for _, c := range bytes.TrimSpace(b) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func startsValue(c byte) bool {
	return c == '{' || c == '[' || c == '"' || c == '\'' || c == '-' || c >= '0' && c <= '9'
}

type repairer struct {
	src []byte
	i   int
	out bytes.Buffer
}

func (r *repairer) eof() bool  { return r.i >= len(r.src) }
func (r *repairer) peek() byte { return r.src[r.i] }

// skip passes whitespace and comments.
func (r *repairer) skip() {
	for !r.eof() {
		switch c := r.peek(); {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			r.i++
		case c == '/' && r.i+1 < len(r.src) && r.src[r.i+1] == '/':
			for !r.eof() && r.peek() != '\n' {
				r.i++
			}
		case c == '/' && r.i+1 < len(r.src) && r.src[r.i+1] == '*':
			end := bytes.Index(r.src[r.i+2:], []byte("*/"))
			if end < 0 {
				r.i = len(r.src)
			} else {
				r.i += end + 4
			}
		default:
			return
		}
	}
}

// value repairs one value. inArray says a bare word ends at ']' too.
func (r *repairer) value(depth int, inArray bool) error {
	if depth > maxRepairDepth {
		return fmt.Errorf("%w: nested deeper than %d levels", ErrUnrepairable, maxRepairDepth)
	}
	r.skip()
	if r.eof() {
		r.out.WriteString("null")
		return nil
	}
	switch c := r.peek(); {
	case c == '{':
		return r.object(depth)
	case c == '[':
		return r.array(depth)
	case c == '"' || c == '\'' || c == '`':
		r.str()
		return nil
	case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
		r.number()
		return nil
	case isWordByte(c):
		r.word(inArray)
		return nil
	default:
		return fmt.Errorf("%w: unexpected %q at offset %d", ErrUnrepairable, c, r.i)
	}
}

func (r *repairer) object(depth int) error {
	r.i++ // {
	r.out.WriteByte('{')
	first := true
	for {
		r.skip()
		if r.eof() {
			break
		}
		c := r.peek()
		if c == '}' || c == ']' {
			r.i++
			break
		}
		if c == ',' || c == ';' {
			r.i++
			continue
		}
		var key string
		switch {
		case c == '"' || c == '\'' || c == '`':
			key = r.rawString()
		case isWordByte(c):
			start := r.i
			for !r.eof() && (isWordByte(r.peek()) || r.peek() == '-' || r.peek() == '.') {
				r.i++
			}
			key = strings.ToValidUTF8(string(r.src[start:r.i]), "\uFFFD")
		default:
			r.i++ // a byte that cannot start a key: drop it
			continue
		}
		r.skip()
		if r.eof() {
			break // a key with no value: dropped
		}
		if c := r.peek(); c == ':' || c == '=' {
			r.i++
			r.skip()
		}
		if r.eof() {
			break
		}
		if c := r.peek(); c == ',' || c == '}' || c == ']' {
			continue // a key with no value: dropped
		}
		if !first {
			r.out.WriteByte(',')
		}
		first = false
		writeString(&r.out, key)
		r.out.WriteByte(':')
		if err := r.value(depth+1, false); err != nil {
			return err
		}
	}
	r.out.WriteByte('}')
	return nil
}

func (r *repairer) array(depth int) error {
	r.i++ // [
	r.out.WriteByte('[')
	first := true
	for {
		r.skip()
		if r.eof() {
			break
		}
		c := r.peek()
		if c == ']' || c == '}' {
			r.i++
			break
		}
		if c == ',' {
			r.i++
			continue
		}
		if !(c == '{' || c == '[' || c == '"' || c == '\'' || c == '`' || c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9' || isWordByte(c)) {
			r.i++ // a byte that cannot start a value: drop it
			continue
		}
		if !first {
			r.out.WriteByte(',')
		}
		first = false
		if err := r.value(depth+1, true); err != nil {
			return err
		}
	}
	r.out.WriteByte(']')
	return nil
}

// rawString reads a quoted string and returns its text. A quote that
// cannot end the string, judging by what follows it, is taken for one the
// model forgot to escape ("say "hi" now") and kept in the text.
func (r *repairer) rawString() string {
	quote := r.peek()
	r.i++
	var b strings.Builder
	for !r.eof() {
		c := r.peek()
		if c == quote {
			r.i++
			if r.closes(r.i, quote) {
				return b.String()
			}
			b.WriteByte(c)
			continue
		}
		if c == '\\' {
			r.i++
			if r.eof() {
				break
			}
			e := r.peek()
			r.i++
			switch e {
			case '"', '\\', '/', '\'', '`':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				if ru, ok := r.hex4(r.i); ok {
					r.i += 4
					if utf16.IsSurrogate(ru) {
						// A surrogate pair is one character; a lone
						// surrogate becomes U+FFFD.
						if dec, n, ok := lowSurrogate(r.src, r.i, ru); ok {
							r.i += n
							ru = dec
						}
					}
					b.WriteRune(ru)
					continue
				}
				b.WriteString(`\u`)
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
			continue
		}
		ru, size := utf8.DecodeRune(r.src[r.i:])
		b.WriteRune(ru) // invalid UTF-8 becomes U+FFFD
		r.i += size
	}
	return b.String() // unterminated: closed here
}

// closes reports whether a quote that ends at i ends its string: the text
// after it (past spaces and tabs) is what may follow a string — the end, a
// line break, a comma, a colon, a closing bracket, a comment, an opening
// bracket (a comma missing in an array) — or the next key of an object
// whose comma is missing (a word and a colon, or a quoted string that is
// not itself followed by what ends a string). Anything else — a letter, a
// quote that ends the string itself — makes the quote part of the text.
func (r *repairer) closes(i int, quote byte) bool {
	i, nl := r.blank(i)
	if i >= len(r.src) || nl {
		return true
	}
	switch c := r.src[i]; {
	case c == ',' || c == ':' || c == '}' || c == ']' || c == '{' || c == '[' || c == '/' || c == ';':
		return true
	case c == quote:
		// Either the real end of this string ("say "hi"" ...), or the start
		// of the next string after a missing comma ("a" "b": 1).
		j, nl := r.blank(i + 1)
		if j >= len(r.src) || nl {
			return false
		}
		switch r.src[j] {
		case ',', ':', '}', ']':
			return false
		}
		return true
	case c == '"' || c == '\'' || c == '`':
		return true // another kind of string starts: a missing comma
	case isWordByte(c):
		// An unquoted key after a missing comma ("a" b: 1), or text.
		for i < len(r.src) && (isWordByte(r.src[i]) || r.src[i] == '-' || r.src[i] == '.') {
			i++
		}
		i, _ = r.blank(i)
		return i < len(r.src) && (r.src[i] == ':' || r.src[i] == '=')
	}
	return false
}

// blank skips spaces and tabs from i and reports where they end and
// whether a line break came first.
func (r *repairer) blank(i int) (int, bool) {
	for ; i < len(r.src); i++ {
		switch r.src[i] {
		case ' ', '\t':
		case '\n', '\r':
			return i, true
		default:
			return i, false
		}
	}
	return i, false
}

// hex4 reads the four hexadecimal digits of a \u escape at i.
func (r *repairer) hex4(i int) (rune, bool) { return hex4(r.src, i) }

func (r *repairer) str() { writeString(&r.out, r.rawString()) }

// writeString writes s as a JSON string.
func writeString(out *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // strings always marshal
	out.Write(b)
}

func (r *repairer) number() {
	start := r.i
	for !r.eof() {
		c := r.peek()
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			r.i++
			continue
		}
		break
	}
	tok := string(r.src[start:r.i])
	// A word glued to the number ("12abc") or "-Infinity": not a number.
	if !r.eof() && isWordByte(r.peek()) {
		r.i = start
		if tok == "-" || tok == "+" {
			r.i++
			w := r.readWord()
			if lw := strings.ToLower(w); lw == "infinity" || lw == "inf" {
				r.out.WriteString("null")
				return
			}
			writeString(&r.out, tok+w)
			return
		}
		r.word(false)
		return
	}
	if fixed, ok := fixNumber(tok); ok {
		r.out.WriteString(fixed)
		return
	}
	writeString(&r.out, tok)
}

// fixNumber turns a number-like token into a JSON number.
func fixNumber(tok string) (string, bool) {
	if isJSONNumber(tok) {
		return tok, true
	}
	t := strings.TrimPrefix(tok, "+")
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimPrefix(t, "-")
	t = strings.TrimRight(t, "eE+-") // a truncated exponent
	t = strings.TrimSuffix(t, ".")
	if strings.HasPrefix(t, ".") {
		t = "0" + t
	}
	for len(t) > 1 && t[0] == '0' && t[1] >= '0' && t[1] <= '9' {
		t = t[1:]
	}
	if t == "" {
		return "0", true
	}
	if neg {
		t = "-" + t
	}
	if isJSONNumber(t) {
		return t, true
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return "", false
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// readWord reads an identifier-like word.
func (r *repairer) readWord() string {
	start := r.i
	for !r.eof() && isWordByte(r.peek()) {
		r.i++
	}
	return string(r.src[start:r.i])
}

// word repairs a bare word in value position: a literal, or unquoted text
// that runs to the next delimiter.
func (r *repairer) word(inArray bool) {
	start := r.i
	w := r.readWord()
	switch w {
	case "true", "True", "TRUE":
		r.out.WriteString("true")
		return
	case "false", "False", "FALSE":
		r.out.WriteString("false")
		return
	case "null", "None", "NULL", "nil", "undefined", "NaN", "Infinity":
		r.out.WriteString("null")
		return
	}
	if r.eof() {
		// A literal cut short at the end of the input.
		for _, lit := range [...]string{"true", "false", "null"} {
			if w != "" && strings.HasPrefix(lit, w) {
				r.out.WriteString(lit)
				return
			}
		}
	}
	// Unquoted text: up to the next delimiter on the same line.
	r.i = start
	for !r.eof() {
		c := r.peek()
		if c == ',' || c == '}' || c == '\n' || c == '\r' || (inArray && c == ']') {
			break
		}
		r.i++
	}
	text := strings.TrimSpace(string(r.src[start:r.i]))
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	writeString(&r.out, text)
}
