package wasm

import (
	"fmt"
	"strings"
)

// maxTableEntries is the most entries a table may grow to, unless its
// declared minimum is larger (it then cannot grow at all); and
// maxModuleTableEntries bounds the entries of all of a module's tables
// together. A table entry costs the host 8 bytes, and wazero lets a table
// without a declared maximum grow to 2^32-1 entries: a few bytes of guest
// code (table.grow with a large delta) would make it allocate and zero
// tens of gigabytes. Go, Rust and C programs make one function table of a
// fixed size and never grow it.
const (
	maxTableEntries       = 1 << 16
	maxModuleTableEntries = 1 << 22
)

// limitTables returns the module with a maximum on each table that it
// defines: the declared maximum or maxTableEntries, whichever is smaller,
// but never below the declared minimum. A guest's table.grow beyond it
// returns -1, which the WebAssembly specification allows a host to
// answer. It refuses a module whose tables would hold more than
// maxModuleTableEntries entries in all, and a module that imports a
// table: the runtime provides none (and could not bound its growth).
//
// wasm must have passed precheck, which makes every section's structure
// exact; only the table section is re-encoded, the others are copied.
func limitTables(wasm []byte) ([]byte, error) {
	out := make([]byte, 0, len(wasm)+16)
	out = append(out, wasm[:8]...)
	r := reader{b: wasm[8:]}
	for len(r.b) > 0 {
		rest := r.b
		id, _ := r.byte()
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(len(r.b)) {
			return nil, fmt.Errorf("a section (id %d) is longer than the bytes that remain", id)
		}
		body := r.b[:size]
		r.b = r.b[size:]
		switch id {
		case 2:
			if err := refuseTableImports(body); err != nil {
				return nil, err
			}
		case 4:
			tables, err := limitTableSection(body)
			if err != nil {
				return nil, err
			}
			out = append(out, id)
			out = appendU32(out, uint32(len(tables)))
			out = append(out, tables...)
			continue
		}
		out = append(out, rest[:len(rest)-len(r.b)]...)
	}
	return out, nil
}

// limitTableSection returns the body of a table section with the limits
// of each table rewritten as limitTables describes.
func limitTableSection(body []byte) ([]byte, error) {
	s := sectionReader{reader: reader{b: body}, id: 4}
	n, err := s.count("tables")
	if err != nil {
		return nil, err
	}
	// The rewritten limits (flag, minimum and maximum) take at most 11
	// bytes where they took at least 2.
	out := make([]byte, 0, len(body)+9*int(n))
	out = append(out, body[:len(body)-len(s.b)]...)
	var mins, maxes uint64
	for i := uint32(0); i < n; i++ {
		// The table type up to its limits: an optional 0x40 0x00 (a
		// table with an initial value) and the reference type.
		from := s.b
		init := len(s.b) >= 2 && s.b[0] == 0x40 && s.b[1] == 0x00
		if init {
			s.b = s.b[2:]
		}
		if err := s.valueType(); err != nil {
			return nil, err
		}
		out = append(out, from[:len(from)-len(s.b)]...)

		flags, ok := s.byte()
		if !ok {
			return nil, errTruncated
		}
		if flags > 0x01 {
			// 0x02 and 0x03 mark shared limits, which no table has.
			return nil, fmt.Errorf("table %d has the limits 0x%02x; a table's are 0x00 (a minimum) or 0x01 (a minimum and a maximum)", i, flags)
		}
		lo, ok := s.u32()
		if !ok {
			return nil, errTruncated
		}
		hi := uint32(maxTableEntries)
		if flags == 0x01 {
			declared, ok := s.u32()
			if !ok {
				return nil, errTruncated
			}
			hi = min(hi, declared)
		}
		hi = max(hi, lo)
		mins += uint64(lo)
		maxes += uint64(hi)
		out = append(out, 0x01)
		out = appendU32(out, lo)
		out = appendU32(out, hi)

		if init {
			from = s.b
			if err := s.expr(); err != nil {
				return nil, err
			}
			out = append(out, from[:len(from)-len(s.b)]...)
		}
	}
	if len(s.b) > 0 {
		return nil, fmt.Errorf("%d bytes remain after the section's items", len(s.b))
	}
	switch {
	case mins > maxModuleTableEntries:
		return nil, fmt.Errorf("the module's tables declare %d entries in all, more than the %d the runtime allows", mins, maxModuleTableEntries)
	case maxes > maxModuleTableEntries:
		return nil, fmt.Errorf("the module's %d tables could grow to %d entries in all, more than the %d the runtime allows (a table without a smaller maximum may grow to %d entries, or stays at its minimum if that is larger)", n, maxes, maxModuleTableEntries, maxTableEntries)
	}
	return out, nil
}

// refuseTableImports reports the first table or global that an import
// section imports: the runtime provides neither, and a global import would
// otherwise compile and fail only when a call instantiates the module.
func refuseTableImports(body []byte) error {
	s := sectionReader{reader: reader{b: body}, id: 2}
	n, err := s.count("imports")
	if err != nil {
		return err
	}
	for i := uint32(0); i < n; i++ {
		mod, err := s.name("a module name")
		if err != nil {
			return err
		}
		name, err := s.name("an import name")
		if err != nil {
			return err
		}
		if len(s.b) > 0 && s.b[0] == 0x01 {
			return fmt.Errorf("the module imports the table %s.%s; the runtime provides no tables, only the functions of %s (WASI preview 1)", mod, name, wasiModule)
		}
		if len(s.b) > 0 && s.b[0] == 0x03 {
			return fmt.Errorf("the module imports the global %s.%s; the runtime provides no globals, only the functions of %s (WASI preview 1)", mod, name, wasiModule)
		}
		if err := s.importKind(); err != nil {
			return err
		}
	}
	return nil
}

// name reads a length-prefixed name, with its invalid UTF-8 replaced so
// that it can be quoted in a message.
func (s *sectionReader) name(what string) (string, error) {
	n, err := s.count("bytes of " + what)
	if err != nil {
		return "", err
	}
	v := strings.ToValidUTF8(string(s.b[:n]), "\uFFFD")
	s.b = s.b[n:]
	return v, nil
}

// appendU32 appends v as an unsigned LEB128 number.
func appendU32(b []byte, v uint32) []byte {
	for ; v >= 0x80; v >>= 7 {
		b = append(b, byte(v)|0x80)
	}
	return append(b, byte(v))
}
