package arguments

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The argument parser decodes JSON text into map[string]any, []any,
// string, json.Number, bool and nil, exactly as encoding/json does with
// UseNumber (invalid UTF-8 and lone surrogates become U+FFFD, the last of
// duplicate keys wins), in one pass. It converts the input to a string once
// and slices numbers and escape-free strings out of it, which spares an
// allocation per value; that is most of why it is faster than
// encoding/json's decoder for tool arguments.

// maxParseDepth matches encoding/json's nesting limit.
const maxParseDepth = 10000

// SyntaxError reports JSON text that does not parse.
type SyntaxError struct {
	// Offset is the byte offset of the problem.
	Offset int
	// Msg says what the problem is.
	Msg string
}

// Error says what is wrong and where.
func (e *SyntaxError) Error() string { return fmt.Sprintf("%s (at byte %d)", e.Msg, e.Offset) }

type parser struct {
	s string
	i int
}

// Parse decodes JSON text into the values Coerce and Validate work on:
// objects as map[string]any, arrays as []any, numbers as json.Number.
// Trailing data after the value is an error.
func Parse(raw []byte) (any, error) { return parseJSONFast(raw) }

func parseJSONFast(raw []byte) (any, error) {
	p := parser{s: string(raw)}
	p.space()
	if p.i >= len(p.s) {
		return nil, errEmptyJSON
	}
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, &SyntaxError{Offset: p.i, Msg: errTrailingData.Error()}
	}
	return v, nil
}

func (p *parser) fail(msg string) error { return &SyntaxError{Offset: p.i, Msg: msg} }

func (p *parser) unexpected() error {
	if p.i >= len(p.s) {
		return p.fail("unexpected end of JSON input")
	}
	return p.fail(fmt.Sprintf("invalid character %q", p.s[p.i]))
}

func (p *parser) space() {
	// Every byte of JSON's white space is below '!': the usual byte that
	// follows a token is past the first test.
	for p.i < len(p.s) && p.s[p.i] <= ' ' {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, error) {
	if p.i >= len(p.s) {
		return nil, p.unexpected()
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.unexpected()
}

func (p *parser) literal(lit string) error {
	for j := 0; j < len(lit); j++ {
		if p.i >= len(p.s) || p.s[p.i] != lit[j] {
			return p.unexpected()
		}
		p.i++
	}
	return nil
}

func (p *parser) object(depth int) (any, error) {
	if depth > maxParseDepth {
		return nil, p.fail("exceeded max nesting depth")
	}
	p.i++ // {
	m := make(map[string]any)
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.unexpected()
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.unexpected()
		}
		p.i++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[key] = v
		p.space()
		if p.i >= len(p.s) {
			return nil, p.unexpected()
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case '}':
			p.i++
			return m, nil
		default:
			return nil, p.unexpected()
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	if depth > maxParseDepth {
		return nil, p.fail("exceeded max nesting depth")
	}
	p.i++ // [
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return []any{}, nil
	}
	a := make([]any, 0, 4)
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, p.unexpected()
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.unexpected()
		}
	}
}

func (p *parser) number() (any, error) {
	lit, err := p.numberText()
	if err != nil {
		return nil, err
	}
	return json.Number(lit), nil
}

// numberText scans a number at p.i and returns its text.
func (p *parser) numberText() (string, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.s) && p.s[p.i] == '0':
		p.i++
	case p.i < len(p.s) && p.s[p.i] >= '1' && p.s[p.i] <= '9':
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
	default:
		return "", p.unexpected()
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if p.i >= len(p.s) || p.s[p.i] < '0' || p.s[p.i] > '9' {
			return "", p.unexpected()
		}
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if p.i >= len(p.s) || p.s[p.i] < '0' || p.s[p.i] > '9' {
			return "", p.unexpected()
		}
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
	}
	return p.s[start:p.i], nil
}

// str parses a string at p.i (which holds the opening quote).
func (p *parser) str() (string, error) {
	start := p.i + 1 // after the quote
	s, i := p.s, start
	i = plainRun(s, i)
	if i < len(s) && s[i] == '"' {
		p.i = i + 1
		return s[start:i], nil
	}
	p.i = i
	if i == len(s) {
		return "", p.fail("unexpected end of JSON input")
	}
	if c := s[i]; c < 0x20 {
		return "", p.fail(fmt.Sprintf("invalid character %q in string literal", c))
	}
	return p.slowStr(start)
}

// plainRun returns the end of the run of plain bytes (see plainByte) of
// s that starts at i. It tests eight bytes at a time while eight are left:
// tool arguments are mostly short plain strings, and a byte at a time
// costs a load, a table lookup and a branch each.
func plainRun(s string, i int) int {
	for i+8 <= len(s) {
		if m := unplain8(binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	if i == len(s) {
		return i
	}
	if len(s) >= 8 {
		// The last eight bytes, those before i made plain.
		end := len(s) - 8
		before := uint64(1)<<(8*(i-end)) - 1
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[end:]), 8))
		if m := unplain8(x&^before | 'a'*0x0101010101010101&before); m != 0 {
			return end + bits.TrailingZeros64(m)/8
		}
		return len(s)
	}
	for i < len(s) && plainByte[s[i]] {
		i++
	}
	return i
}

// unplain8 returns, for the eight bytes of x (the first in its low byte),
// a mask whose lowest set bit is the high bit of the first byte that is
// not plain: a control character, a quote, a backslash or a byte of a
// multi-byte character. Bits above it may be set too (the subtractions
// borrow); none is set below it.
func unplain8(x uint64) uint64 {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	return ((x - ones*0x20) | (quote - ones) | (backslash - ones) | x) & highs
}

// plainByte marks the bytes a string literal holds as they are: not the
// closing quote, a backslash, a control character or part of a multi-byte
// character.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// slowStr finishes a string that has escapes or non-ASCII bytes.
func (p *parser) slowStr(start int) (string, error) {
	b := make([]byte, 0, p.i-start+16)
	b = append(b, p.s[start:p.i]...)
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return string(b), nil
		case c < 0x20:
			return "", p.fail(fmt.Sprintf("invalid character %q in string literal", c))
		case c == '\\':
			p.i++
			if p.i >= len(p.s) {
				return "", p.fail("unexpected end of JSON input")
			}
			e := p.s[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := p.hex4(p.i)
				if !ok {
					return "", p.fail("invalid escape in string literal")
				}
				p.i += 4
				if utf16.IsSurrogate(r) {
					if dec, n, ok := lowSurrogate(p.s, p.i, r); ok {
						p.i += n
						r = dec
					} else {
						r = unicode.ReplacementChar
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				p.i--
				return "", p.fail(fmt.Sprintf("invalid character %q in string escape code", e))
			}
		case c < utf8.RuneSelf:
			b = append(b, c)
			p.i++
		default:
			r, size := utf8.DecodeRuneInString(p.s[p.i:])
			p.i += size
			b = utf8.AppendRune(b, r) // invalid bytes become U+FFFD
		}
	}
	return "", p.fail("unexpected end of JSON input")
}

func (p *parser) hex4(at int) (rune, bool) { return hex4(p.s, at) }

// hex4 reads the four hex digits of a \u escape at s[at:].
func hex4[T string | []byte](s T, at int) (rune, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	var r rune
	for k := at; k < at+4; k++ {
		c := s[k]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// lowSurrogate joins the high surrogate hi with the \uXXXX escape of a low
// surrogate at s[at:], if there is one: it returns the character and the
// length of the escape, or ok false.
func lowSurrogate[T string | []byte](s T, at int, hi rune) (r rune, n int, ok bool) {
	if at+6 > len(s) || s[at] != '\\' || s[at+1] != 'u' {
		return 0, 0, false
	}
	lo, ok := hex4(s, at+2)
	if !ok {
		return 0, 0, false
	}
	if r = utf16.DecodeRune(hi, lo); r == unicode.ReplacementChar {
		return 0, 0, false
	}
	return r, 6, true
}

// skip scans past the value at p.i without building it. It accepts and
// rejects exactly what value does, at the same depth.
func (p *parser) skip(depth int) error {
	if p.i >= len(p.s) {
		return p.unexpected()
	}
	switch c := p.s[p.i]; {
	case c == '{', c == '[':
		return p.skipContainer(depth + 1)
	case c == '"':
		return p.skipStr()
	case c == '-' || c >= '0' && c <= '9':
		_, err := p.numberText()
		return err
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return p.unexpected()
}

// skipContainer skips the object or array at p.i.
func (p *parser) skipContainer(depth int) error {
	if depth > maxParseDepth {
		return p.fail("exceeded max nesting depth")
	}
	object := p.s[p.i] == '{'
	end := byte(']')
	if object {
		end = '}'
	}
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] == end {
		p.i++
		return nil
	}
	for {
		if object {
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return p.unexpected()
			}
			if err := p.skipStr(); err != nil {
				return err
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return p.unexpected()
			}
			p.i++
			p.space()
		}
		if err := p.skip(depth); err != nil {
			return err
		}
		p.space()
		if p.i >= len(p.s) {
			return p.unexpected()
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			p.space()
		case end:
			p.i++
			return nil
		default:
			return p.unexpected()
		}
	}
}

// skipStr skips the string at p.i, checking what str checks: no raw
// control characters and only valid escapes.
func (p *parser) skipStr() error {
	p.i++ // "
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return nil
		case c < 0x20:
			return p.fail(fmt.Sprintf("invalid character %q in string literal", c))
		case c == '\\':
			p.i++
			if p.i >= len(p.s) {
				return p.fail("unexpected end of JSON input")
			}
			switch p.s[p.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i++
			case 'u':
				if _, ok := p.hex4(p.i + 1); !ok {
					return p.fail("invalid escape in string literal")
				}
				p.i += 5
			default:
				return p.fail(fmt.Sprintf("invalid character %q in string escape code", p.s[p.i]))
			}
		default:
			p.i++
		}
	}
	return p.fail("unexpected end of JSON input")
}
