package wasm

import "fmt"

// Hooks for the tests of package wasm_test.
var (
	LimitTables = limitTables
	Precheck    = precheck
)

// The table caps, for the tests.
const (
	MaxTableEntries       = maxTableEntries
	MaxModuleTableEntries = maxModuleTableEntries
)

// TableLimit is the limits of a table that a module defines; Max is -1
// when the table declares no maximum.
type TableLimit struct {
	Min uint32
	Max int64
}

// TableLimits returns the limits of the tables that a module, which has
// passed precheck, defines in its table section.
func TableLimits(wasm []byte) ([]TableLimit, error) {
	var limits []TableLimit
	r := reader{b: wasm[8:]}
	for len(r.b) > 0 {
		id, _ := r.byte()
		size, ok := r.u32()
		if !ok || uint64(size) > uint64(len(r.b)) {
			return nil, fmt.Errorf("section %d is malformed", id)
		}
		s := sectionReader{reader: reader{b: r.b[:size]}, id: id}
		r.b = r.b[size:]
		if id != 4 {
			continue
		}
		err := s.vector("tables", func() error {
			init := len(s.b) >= 2 && s.b[0] == 0x40 && s.b[1] == 0x00
			if init {
				s.b = s.b[2:]
			}
			if err := s.valueType(); err != nil {
				return err
			}
			flags, _ := s.byte()
			lo, ok := s.u32()
			if !ok {
				return errTruncated
			}
			l := TableLimit{Min: lo, Max: -1}
			if flags&0x01 != 0 {
				hi, ok := s.u32()
				if !ok {
					return errTruncated
				}
				l.Max = int64(hi)
			}
			limits = append(limits, l)
			if init {
				return s.expr()
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("section 4: %v", err)
		}
	}
	return limits, nil
}
