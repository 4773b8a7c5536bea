package wasm

import "fmt"

// maxLocals bounds the locals one function declares. A declaration is a
// count and a type, so a few bytes can declare billions of locals; real
// compilers stay far below this.
const maxLocals = 1 << 20

// precheck walks the structure of a WebAssembly binary before wazero
// decodes it, and refuses the lengths that wazero would trust: its decoder
// allocates a vector as long as the count the binary states before it
// reads the elements, so a 40-byte module that claims four billion imports
// makes the process run out of memory and die, which no recover catches.
// Every count and length must fit in the bytes that remain (an element
// takes at least one byte), and the locals of a function stay below
// maxLocals. Where precheck meets a construct it does not know, it stops
// checking that section and lets wazero judge the rest.
func precheck(wasm []byte) error {
	r := reader{b: wasm[8:]}
	for len(r.b) > 0 {
		id, _ := r.byte()
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(len(r.b)) {
			return fmt.Errorf("a section (id %d) is longer than the bytes that remain", id)
		}
		s := sectionReader{reader: reader{b: r.b[:size]}, id: id}
		r.b = r.b[size:]
		if err := s.check(); err != nil {
			return fmt.Errorf("section %d: %v", id, err)
		}
	}
	return nil
}

// errStop ends the check of a section at a construct precheck does not
// know.
var errStop = fmt.Errorf("stop")

type sectionReader struct {
	reader
	id byte
}

// count reads a vector's length and checks that it fits.
func (s *sectionReader) count(what string) (uint32, error) {
	n, ok := s.u32()
	if !ok {
		return 0, fmt.Errorf("the number of %s is malformed", what)
	}
	if uint64(n) > uint64(len(s.b)) {
		return 0, fmt.Errorf("the module claims %d %s in %d bytes", n, what, len(s.b))
	}
	return n, nil
}

// bytes skips a length-prefixed string of bytes.
func (s *sectionReader) bytes(what string) error {
	n, err := s.count("bytes of " + what)
	if err != nil {
		return err
	}
	s.b = s.b[n:]
	return nil
}

func (s *sectionReader) skipU32() error {
	if _, ok := s.u32(); !ok {
		return errStop
	}
	return nil
}

// skipLEB skips a signed or unsigned LEB128 number of up to 10 bytes.
func (s *sectionReader) skipLEB() error {
	for i := 0; i < 10; i++ {
		c, ok := s.byte()
		if !ok {
			return errStop
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return errStop
}

func (s *sectionReader) skipN(n int) error {
	if len(s.b) < n {
		return errStop
	}
	s.b = s.b[n:]
	return nil
}

// expr skips a constant expression, up to its end opcode.
func (s *sectionReader) expr() error {
	for {
		op, ok := s.byte()
		if !ok {
			return errStop
		}
		var err error
		switch op {
		case 0x0b: // end
			return nil
		case 0x41, 0x42, 0x23, 0xd2: // i32.const, i64.const, global.get, ref.func
			err = s.skipLEB()
		case 0x43: // f32.const
			err = s.skipN(4)
		case 0x44: // f64.const
			err = s.skipN(8)
		case 0xd0: // ref.null
			err = s.skipLEB()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		default:
			return errStop
		}
		if err != nil {
			return err
		}
	}
}

// check checks one section.
func (s *sectionReader) check() error {
	err := s.checkBody()
	if err == errStop {
		return nil
	}
	return err
}

func (s *sectionReader) checkBody() error {
	switch s.id {
	case 0:
		return s.custom()
	case 1:
		return s.types()
	case 2:
		return s.imports()
	case 3, 4, 5, 13: // functions, tables, memories, tags: fixed-size items
		_, err := s.count("items")
		return err
	case 6:
		return s.globals()
	case 7:
		return s.exports()
	case 9:
		return s.elements()
	case 10:
		return s.code()
	case 11:
		return s.data()
	}
	return nil
}

func (s *sectionReader) custom() error {
	n, err := s.count("bytes of the custom section's name")
	if err != nil {
		return err
	}
	name := string(s.b[:n])
	s.b = s.b[n:]
	if name != "name" {
		return nil
	}
	// The name section: subsections of an id and a size.
	for len(s.b) > 0 {
		id, _ := s.byte()
		size, err := s.count("bytes of a name subsection")
		if err != nil {
			return err
		}
		sub := sectionReader{reader: reader{b: s.b[:size]}}
		s.b = s.b[size:]
		switch id {
		case 1: // function names: a name map
			err = sub.nameMap()
		case 2: // local names: an indirect name map
			var n uint32
			if n, err = sub.count("functions with local names"); err != nil {
				return err
			}
			for i := uint32(0); i < n && err == nil; i++ {
				if err = sub.skipU32(); err == nil {
					err = sub.nameMap()
				}
			}
		}
		if err != nil && err != errStop {
			return err
		}
	}
	return nil
}

func (s *sectionReader) nameMap() error {
	n, err := s.count("names")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := s.skipU32(); err != nil {
			return err
		}
		if err := s.bytes("a name"); err != nil {
			return err
		}
	}
	return nil
}

func (s *sectionReader) types() error {
	n, err := s.count("types")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if form, _ := s.byte(); form != 0x60 {
			return errStop
		}
		for _, what := range []string{"parameters", "results"} {
			k, err := s.count(what)
			if err != nil {
				return err
			}
			s.b = s.b[k:] // one byte per number type
		}
	}
	return nil
}

func (s *sectionReader) imports() error {
	n, err := s.count("imports")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := s.bytes("a module name"); err != nil {
			return err
		}
		if err := s.bytes("an import name"); err != nil {
			return err
		}
		kind, _ := s.byte()
		switch kind {
		case 0x00, 0x04: // function, tag: a type index
			err = s.skipU32()
		case 0x01: // table: a reference type and limits
			if err = s.skipN(1); err == nil {
				err = s.limits()
			}
		case 0x02: // memory: limits
			err = s.limits()
		case 0x03: // global: a value type and mutability
			err = s.skipN(2)
		default:
			return errStop
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *sectionReader) limits() error {
	flags, ok := s.byte()
	if !ok || flags > 0x03 {
		return errStop
	}
	if err := s.skipU32(); err != nil {
		return err
	}
	if flags&0x01 != 0 {
		return s.skipU32()
	}
	return nil
}

func (s *sectionReader) globals() error {
	n, err := s.count("globals")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := s.skipN(2); err != nil { // a value type and mutability
			return err
		}
		if err := s.expr(); err != nil {
			return err
		}
	}
	return nil
}

func (s *sectionReader) exports() error {
	n, err := s.count("exports")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := s.bytes("an export name"); err != nil {
			return err
		}
		if err := s.skipN(1); err != nil {
			return err
		}
		if err := s.skipU32(); err != nil {
			return err
		}
	}
	return nil
}

func (s *sectionReader) elements() error {
	n, err := s.count("element segments")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		flags, ok := s.u32()
		if !ok || flags > 7 {
			return errStop
		}
		if flags&0x02 != 0 && flags&0x01 == 0 { // an explicit table index
			if err := s.skipU32(); err != nil {
				return err
			}
		}
		if flags&0x01 == 0 { // active: an offset
			if err := s.expr(); err != nil {
				return err
			}
		}
		if flags&0x03 != 0 { // an element kind or a reference type
			if err := s.skipN(1); err != nil {
				return err
			}
		}
		k, err := s.count("elements")
		if err != nil {
			return err
		}
		for j := uint32(0); j < k; j++ {
			if flags&0x04 != 0 {
				err = s.expr()
			} else {
				err = s.skipU32()
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *sectionReader) code() error {
	n, err := s.count("function bodies")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		size, err := s.count("bytes of a function body")
		if err != nil {
			return err
		}
		body := sectionReader{reader: reader{b: s.b[:size]}}
		s.b = s.b[size:]
		groups, err := body.count("groups of locals")
		if err != nil {
			return err
		}
		var locals uint64
		for j := uint32(0); j < groups; j++ {
			k, ok := body.u32()
			if !ok {
				break
			}
			locals += uint64(k)
			if locals > maxLocals {
				return fmt.Errorf("function %d declares more than %d locals", i, maxLocals)
			}
			if t, ok := body.byte(); !ok || t == 0x63 || t == 0x64 { // typed references carry a heap type
				break
			}
		}
	}
	return nil
}

func (s *sectionReader) data() error {
	n, err := s.count("data segments")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		flags, ok := s.u32()
		if !ok || flags > 2 {
			return errStop
		}
		if flags == 2 {
			if err := s.skipU32(); err != nil {
				return err
			}
		}
		if flags != 1 {
			if err := s.expr(); err != nil {
				return err
			}
		}
		if err := s.bytes("a data segment"); err != nil {
			return err
		}
	}
	return nil
}
