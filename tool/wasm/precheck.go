package wasm

import (
	"errors"
	"fmt"
)

// maxLocals bounds the locals one function declares, and maxModuleLocals
// those of all the functions together. A declaration is a count and a
// type, so a few bytes can declare a million locals, and wazero makes a
// slice of them for each function as it decodes it. Real compilers stay
// far below both (50,000 is also what web browsers accept per function).
const (
	maxLocals       = 50_000
	maxModuleLocals = 1 << 24
)

// precheck walks the structure of a WebAssembly binary before wazero
// decodes it, and refuses the lengths that wazero would trust: its decoder
// allocates a vector as long as the count the binary states before it
// reads the elements, so a 40-byte module that claims four billion imports
// makes the process run out of memory and die, which no recover catches.
// Every count and length must fit in the bytes that remain (an element
// takes at least one byte), and the locals stay below maxLocals per
// function and maxModuleLocals in all.
//
// wazero reads each section from the whole binary and checks the
// section's length only when it has decoded it, so a section whose items
// run past its end would have their counts read from the bytes of the
// sections after it, which precheck checked as something else. precheck
// therefore decodes every section with wazero's grammar, item by item,
// and refuses a section whose items do not end exactly where it ends, or
// that holds a construct it does not know: it fails closed.
func precheck(wasm []byte) error {
	r := reader{b: wasm[8:]}
	locals := uint64(0)
	for len(r.b) > 0 {
		id, _ := r.byte()
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(len(r.b)) {
			return fmt.Errorf("a section (id %d) is longer than the bytes that remain", id)
		}
		s := sectionReader{reader: reader{b: r.b[:size]}, id: id, locals: &locals}
		r.b = r.b[size:]
		if err := s.check(); err != nil {
			return fmt.Errorf("section %d: %w", id, err)
		}
	}
	return nil
}

// errTruncated is the error of an item that runs past the end of its
// section.
var errTruncated = errors.New("an item runs past the end of the section")

type sectionReader struct {
	reader
	id     byte
	locals *uint64 // the locals of the functions so far
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
		return errTruncated
	}
	return nil
}

// skipLEB skips a signed or unsigned LEB128 number of up to max bytes.
func (s *sectionReader) skipLEB(max int) error {
	for i := 0; i < max; i++ {
		c, ok := s.byte()
		if !ok {
			return errTruncated
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return errors.New("a number is too long")
}

func (s *sectionReader) skipN(n int) error {
	if len(s.b) < n {
		return errTruncated
	}
	s.b = s.b[n:]
	return nil
}

// valueType skips a value type: a number, vector or reference type, or a
// typed reference (0x63 or 0x64 and a heap type).
func (s *sectionReader) valueType() error {
	t, ok := s.byte()
	if !ok {
		return errTruncated
	}
	switch t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69:
		return nil
	case 0x63, 0x64:
		return s.skipLEB(5)
	}
	return fmt.Errorf("unknown value type 0x%02x", t)
}

// limits skips the limits of a table or a memory.
func (s *sectionReader) limits() error {
	flags, ok := s.byte()
	if !ok {
		return errTruncated
	}
	if flags > 0x03 {
		return fmt.Errorf("unknown limits 0x%02x", flags)
	}
	if err := s.skipU32(); err != nil {
		return err
	}
	if flags&0x01 != 0 {
		return s.skipU32()
	}
	return nil
}

// table skips a table type, with the initial value that may follow it.
func (s *sectionReader) table() error {
	init := len(s.b) >= 2 && s.b[0] == 0x40 && s.b[1] == 0x00
	if init {
		s.b = s.b[2:]
	}
	if err := s.valueType(); err != nil {
		return err
	}
	if err := s.limits(); err != nil {
		return err
	}
	if init {
		return s.expr()
	}
	return nil
}

// expr skips a constant expression, up to its end opcode.
func (s *sectionReader) expr() error {
	for {
		op, ok := s.byte()
		if !ok {
			return errTruncated
		}
		var err error
		switch op {
		case 0x0b: // end
			return nil
		case 0x41: // i32.const
			err = s.skipLEB(5)
		case 0x42: // i64.const
			err = s.skipLEB(10)
		case 0x23, 0xd0, 0xd2: // global.get, ref.null, ref.func
			err = s.skipU32()
		case 0x43: // f32.const
			err = s.skipN(4)
		case 0x44: // f64.const
			err = s.skipN(8)
		case 0xfd: // v128.const
			if sub, ok := s.byte(); !ok || sub != 0x0c {
				return errors.New("a constant expression holds a vector instruction other than v128.const")
			}
			err = s.skipN(16)
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		default:
			return fmt.Errorf("a constant expression holds the unknown opcode 0x%02x", op)
		}
		if err != nil {
			return err
		}
	}
}

// check checks one section: its items must end where it ends.
func (s *sectionReader) check() error {
	if err := s.checkBody(); err != nil {
		return err
	}
	if len(s.b) > 0 {
		return fmt.Errorf("%d bytes remain after the section's items", len(s.b))
	}
	return nil
}

// vector checks a vector of items.
func (s *sectionReader) vector(what string, item func() error) error {
	n, err := s.count(what)
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		if err := item(); err != nil {
			return err
		}
	}
	return nil
}

func (s *sectionReader) checkBody() error {
	switch s.id {
	case 0:
		return s.custom()
	case 1:
		return s.vector("types", s.funcType)
	case 2:
		return s.vector("imports", s.importItem)
	case 3:
		return s.vector("functions", s.skipU32)
	case 4:
		return s.vector("tables", s.table)
	case 5:
		return s.vector("memories", s.limits)
	case 6:
		return s.vector("globals", func() error {
			if err := s.globalType(); err != nil {
				return err
			}
			return s.expr()
		})
	case 7:
		return s.vector("exports", func() error {
			if err := s.bytes("an export name"); err != nil {
				return err
			}
			if err := s.skipN(1); err != nil {
				return err
			}
			return s.skipU32()
		})
	case 8, 12: // start, data count: one index or number
		return s.skipU32()
	case 9:
		return s.vector("element segments", s.element)
	case 10:
		return s.vector("function bodies", s.code)
	case 11:
		return s.vector("data segments", s.data)
	}
	return fmt.Errorf("the section id %d is not one the runtime supports", s.id)
}

func (s *sectionReader) custom() error {
	n, err := s.count("bytes of the custom section's name")
	if err != nil {
		return err
	}
	name := string(s.b[:n])
	s.b = s.b[n:]
	if name != "name" {
		s.b = nil
		return nil
	}
	// The name section: subsections of an id and a size. wazero reads the
	// three it knows without regard to their sizes, so these must be
	// exact.
	for len(s.b) > 0 {
		id, _ := s.byte()
		size, err := s.count("bytes of a name subsection")
		if err != nil {
			return err
		}
		sub := sectionReader{reader: reader{b: s.b[:size]}}
		s.b = s.b[size:]
		switch id {
		case 0: // the module's name
			err = sub.bytes("the module name")
		case 1: // function names: a name map
			err = sub.nameMap()
		case 2: // local names: an indirect name map
			err = sub.vector("functions with local names", func() error {
				if err := sub.skipU32(); err != nil {
					return err
				}
				return sub.nameMap()
			})
		default:
			sub.b = nil
		}
		if err == nil && len(sub.b) > 0 {
			err = fmt.Errorf("%d bytes remain after the items", len(sub.b))
		}
		if err != nil {
			return fmt.Errorf("name subsection %d: %w", id, err)
		}
	}
	return nil
}

func (s *sectionReader) nameMap() error {
	return s.vector("names", func() error {
		if err := s.skipU32(); err != nil {
			return err
		}
		return s.bytes("a name")
	})
}

func (s *sectionReader) funcType() error {
	if form, ok := s.byte(); !ok || form != 0x60 {
		return errors.New("a type is not a function type (0x60)")
	}
	for _, what := range []string{"parameters", "results"} {
		k, err := s.count(what)
		if err != nil {
			return err
		}
		for i := uint32(0); i < k; i++ {
			if err := s.valueType(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *sectionReader) globalType() error {
	if err := s.valueType(); err != nil {
		return err
	}
	return s.skipN(1) // mutability
}

func (s *sectionReader) importItem() error {
	if err := s.bytes("a module name"); err != nil {
		return err
	}
	if err := s.bytes("an import name"); err != nil {
		return err
	}
	return s.importKind()
}

// importKind skips an import's description: its kind and its type.
func (s *sectionReader) importKind() error {
	kind, ok := s.byte()
	if !ok {
		return errTruncated
	}
	switch kind {
	case 0x00: // function: a type index
		return s.skipU32()
	case 0x01:
		return s.table()
	case 0x02:
		return s.limits()
	case 0x03:
		return s.globalType()
	}
	return fmt.Errorf("an import is of the unknown kind 0x%02x", kind)
}

// refType skips the reference type of an element segment.
func (s *sectionReader) refType() error {
	t, ok := s.byte()
	switch {
	case !ok:
		return errTruncated
	case t == 0x63 || t == 0x64:
		return s.skipLEB(5)
	case t == 0x70 || t == 0x6f:
		return nil
	}
	return fmt.Errorf("unknown reference type 0x%02x", t)
}

func (s *sectionReader) element() error {
	flags, ok := s.u32()
	if !ok || flags > 7 {
		return errors.New("an element segment is malformed")
	}
	if flags == 2 || flags == 6 { // an explicit table index
		if err := s.skipU32(); err != nil {
			return err
		}
	}
	if flags&0x01 == 0 { // active: an offset
		if err := s.expr(); err != nil {
			return err
		}
	}
	switch {
	case flags == 1 || flags == 2 || flags == 3: // an element kind
		if err := s.skipN(1); err != nil {
			return err
		}
	case flags >= 5: // a reference type
		if err := s.refType(); err != nil {
			return err
		}
	}
	item := s.skipU32
	if flags&0x04 != 0 {
		item = s.expr
	}
	return s.vector("elements", item)
}

func (s *sectionReader) code() error {
	size, err := s.count("bytes of a function body")
	if err != nil {
		return err
	}
	body := sectionReader{reader: reader{b: s.b[:size]}}
	s.b = s.b[size:]
	var locals uint64
	err = body.vector("groups of locals", func() error {
		k, ok := body.u32()
		if !ok {
			return errors.New("a function body's locals are malformed")
		}
		locals += uint64(k)
		if locals > maxLocals {
			return fmt.Errorf("a function declares more than %d locals", maxLocals)
		}
		return body.valueType()
	})
	if err != nil {
		return err
	}
	if *s.locals += locals; *s.locals > maxModuleLocals {
		return fmt.Errorf("the functions declare more than %d locals in all", maxModuleLocals)
	}
	return nil
}

func (s *sectionReader) data() error {
	flags, ok := s.u32()
	if !ok || flags > 2 {
		return errors.New("a data segment is malformed")
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
	return s.bytes("a data segment")
}
