package callroom

import (
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/trellis-go/trellis/internal/callctx"
	"github.com/trellis-go/trellis/internal/runctx"
	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// Room is the storage a node lends for one batch. The node holds it as the
// Extra of its runctx.Working, so that it comes with the node's run
// context, and gives it to the executor through that context. The zero
// Room lends nothing. It is kept small: it adds to the node's one
// allocation.
//
// A node lends a room only for a batch of calls taken from its run state,
// whose memory nothing writes in place: an executor that takes the room
// may let the tools share the calls' arguments where they reach them
// unchanged (see callctx.Frame.ShareArguments).
type Room struct {
	frame [1]callctx.Frame
	owner any                       // the executor the storage is lent to
	buf   atomic.Pointer[resultBuf] // the results' storage, once taken
}

// Lend lends the room to the executor owner, for the batch the node is
// about to run with it. A room is lent once.
func (r *Room) Lend(owner any) { r.owner = owner }

// LendPart gives the frame of a single call, the one Take hands out,
// room for the call's result part (see callctx.Frame.LendPart), for a
// lender that allocates it along with storage of its own: the part then
// is the lender's, and outlives the room.
func (r *Room) LendPart(p *model.Part) { r.frame[0].LendPart(p) }

// Take returns the storage lent to owner, the executor that runs a batch
// of n calls with ctx: room for n results, and for a single call the
// frame of its context. It returns nothing when the context lends nothing
// to owner, or when the storage was taken already. The results' storage
// is the lender's again once owner's Execute returns; what it held before
// does not matter, every result being written whole.
func Take(ctx context.Context, owner any, n int) (results []tool.Result, frames []callctx.Frame) {
	r := runctx.Extra[Room](ctx)
	if r == nil || n == 0 || !sameWords(r.owner, owner) || r.buf.Load() != nil {
		return nil, nil
	}
	b := takeResults(n)
	if !r.buf.CompareAndSwap(nil, b) {
		b.release() // taken meanwhile, by another batch in the same context
		return nil, nil
	}
	if n == 1 {
		frames = r.frame[:]
	}
	return b.r[:n:n], frames
}

// Taken returns the results' storage the executor took, nil when it took
// none.
func (r *Room) Taken() []tool.Result {
	if b := r.buf.Load(); b != nil {
		return b.r[:b.used]
	}
	return nil
}

// Release gives the results' storage back to the pool once the lender has
// read the results. Not after a panic of the lender: calls may still be
// answering into it.
func (r *Room) Release() {
	if b := r.buf.Swap(nil); b != nil {
		b.release()
	}
}

// sameWords reports whether a and b hold the same dynamic type and data
// word: for the executors of this module, pointers, that is a == b,
// without the runtime's general comparison. For other types it may say
// false where a == b (their executor then allocates its own storage),
// never true where a != b.
func sameWords(a, b any) bool {
	wa, wb := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return wa[0] == wb[0] && wa[1] == wb[1]
}

// resultBuf is storage for the results of a batch, kept in resultBufs
// between batches. Only its first used results may hold anything.
type resultBuf struct {
	r    []tool.Result
	used int
}

// resultBufs holds result storage to use again.
var resultBufs = sync.Pool{New: func() any { return new(resultBuf) }}

// maxPooledResults is the most results a pooled buffer keeps room for; a
// larger batch's storage is left to the collector.
const maxPooledResults = 256

// smallClear is the most results release clears one at a time.
const smallClear = 8

// takeResults returns storage for n results.
func takeResults(n int) *resultBuf {
	b := resultBufs.Get().(*resultBuf)
	if cap(b.r) < n {
		b.r = make([]tool.Result, n)
	}
	b.used = n
	return b
}

// release clears the results the storage holds and returns it to the
// pool.
func (b *resultBuf) release() {
	if cap(b.r) > maxPooledResults {
		return
	}
	if b.used <= smallClear {
		// One at a time: a small batch costs less so than through the
		// runtime's clear of memory with pointers.
		for i := range b.r[:b.used] {
			b.r[i] = tool.Result{}
		}
	} else {
		clear(b.r[:b.used])
	}
	b.used = 0
	resultBufs.Put(b)
}
