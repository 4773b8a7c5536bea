package wasm

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// pageSize is the size of a WebAssembly memory page: 64 KiB.
const pageSize = 65536

// limitAllocator backs one instance's linear memory with a byte slice that
// never grows beyond limit bytes. wazero asks it for the memory's initial
// size at instantiation and for each memory.grow; a grow beyond the limit
// fails the way the WebAssembly specification allows (memory.grow returns
// -1), and the allocator remembers it so that the program's failure can be
// reported as a lack of memory.
type limitAllocator struct {
	limit uint64
	// refused is the size of the largest grow that was refused, 0 if none.
	refused atomic.Uint64
	// size is the memory's current size.
	size atomic.Uint64
	// over is set when the initial size was beyond the limit; the call
	// then fails before the program runs.
	over atomic.Bool
}

// Allocate implements experimental.MemoryAllocator.
func (a *limitAllocator) Allocate(_, _ uint64) experimental.LinearMemory {
	return &limitedMemory{a: a}
}

// limitedMemory is a linear memory that limitAllocator hands out.
type limitedMemory struct {
	a   *limitAllocator
	buf []byte
}

// Reallocate implements experimental.LinearMemory. Memory never shrinks,
// and bytes beyond len(buf) were never written (accesses are checked
// against the length), so a grow within the capacity is zeroed as the
// specification requires.
func (m *limitedMemory) Reallocate(size uint64) []byte {
	if size > m.a.limit {
		if m.buf == nil {
			// wazero needs the initial memory: give it, and let the call
			// fail before the program runs. NewTool checks the declared
			// minimum against the limit, so this is a safety net.
			m.a.over.Store(true)
		} else {
			if size > m.a.refused.Load() {
				m.a.refused.Store(size)
			}
			return nil
		}
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
	} else {
		// Double the capacity, up to the limit, so that a program that
		// grows page by page does not copy its memory each time.
		c := max(size, 2*uint64(cap(m.buf)))
		if c > m.a.limit {
			c = max(size, m.a.limit)
		}
		b := make([]byte, size, c)
		copy(b, m.buf)
		m.buf = b
	}
	m.a.size.Store(size)
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *limitedMemory) Free() { m.buf = nil }

// memoryMinimum reads the minimum size, in pages, of the memory that a
// valid WebAssembly binary defines in its memory section; ok is false when
// it defines none. wazero does not report the minimum of a memory the
// module does not export, and the minimum is allocated whatever the limit,
// so it is checked before any instance is made.
func memoryMinimum(wasm []byte) (pages uint32, ok bool) {
	if len(wasm) < 8 {
		return 0, false
	}
	r := reader{b: wasm[8:]}
	for len(r.b) > 0 {
		id, ok1 := r.byte()
		size, ok2 := r.u32()
		if !ok1 || !ok2 || uint64(size) > uint64(len(r.b)) {
			return 0, false
		}
		body := reader{b: r.b[:size]}
		r.b = r.b[size:]
		if id != 5 { // the memory section
			continue
		}
		count, ok := body.u32()
		if !ok || count == 0 {
			return 0, false
		}
		flags, ok1 := body.byte()
		n, ok2 := body.u32()
		if !ok1 || !ok2 || flags&0x04 != 0 { // 0x04: a 64-bit memory, which wazero does not run
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// reader reads the primitive values of the WebAssembly binary format.
type reader struct{ b []byte }

func (r *reader) byte() (byte, bool) {
	if len(r.b) == 0 {
		return 0, false
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c, true
}

// u32 reads an unsigned LEB128 number of at most 32 bits.
func (r *reader) u32() (uint32, bool) {
	var v uint32
	for i := 0; i < 5; i++ {
		c, ok := r.byte()
		if !ok {
			return 0, false
		}
		if i == 4 && c > 0x0f {
			return 0, false
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, true
		}
	}
	return 0, false
}
