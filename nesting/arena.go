package nesting

import (
	"unsafe"

	"wap5/internal/hugemem"
)

// arena hands out the pass's scratch slices from large blocks outside the
// Go heap, in transparent huge pages (hugemem.Map, or a mapping kept by
// hugemem.Keep); a small pass's one block is on the Go heap. On a virtual
// machine a
// page fault costs microseconds, and fresh memory is dear even in huge
// pages (the kernel zeroes every page first touched), so the pass keeps
// its memory small and reuses it: slices are taken like a stack, and
// release hands back everything taken since a mark, for the next step to
// reuse. free gives the blocks back to the system: nothing taken may be
// used after it (Nest's results are on the Go heap). Slices must be of
// types without pointers, and alignment ≤ 8.
type arena struct {
	buf   []uint64 // the current block
	off   int      // words of buf taken
	used  int      // words of buf ever taken (beyond: still zero)
	frees []func() // of every block
}

// arenaBlock is the smallest block, in words (8 MB).
const arenaBlock = 1 << 20

// smallBlock is the largest request served in small pages, in words (1 MB).
const smallBlock = 1 << 17

// reserve makes sure the current block has at least words more words
// free, starting a block of that size if it does not.
func (a *arena) reserve(words int) {
	if len(a.buf)-a.off < words {
		// A mapping another part of the process is done with (see
		// hugemem.Keep), if one is large enough: touched already, but
		// holding anything.
		if b, free, ok := hugemem.Spare(8 * words); ok {
			n := len(b) / 8
			a.buf, a.off, a.used = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n), 0, n
			a.frees = append(a.frees, free)
			return
		}
		// A small pass (a short trace) takes a block of its own size in
		// small pages: it touches a few of them, where the first touch of
		// a huge page would have the kernel zero 2 MB.
		if words < smallBlock {
			a.buf, a.off, a.used = mapSmall(words), 0, 0
			return
		}
		n := max(words, arenaBlock)
		b, free := hugemem.Map(8 * n)
		a.buf, a.off, a.used = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n), 0, 0
		a.frees = append(a.frees, free)
	}
}

// free gives back every block.
func (a *arena) free() {
	for _, f := range a.frees {
		f()
	}
	*a = arena{}
}

// mark is a point to release back to.
type mark struct {
	buf *uint64
	off int
}

func (a *arena) mark() mark { return mark{unsafe.SliceData(a.buf), a.off} }

// release hands back everything taken since m (when the block is still
// m's: what was taken from a later block stays taken).
func (a *arena) release(m mark) {
	if m.buf == unsafe.SliceData(a.buf) {
		a.off = m.off
	}
}

// adopt makes mem the current block when it has more room than what is
// left of the current block's touched memory: memory its owner no longer
// needs (the envelopes, once step 1 is done), already touched, so that the
// steps after take their scratch from it rather than from fresh memory.
// mem may hold anything (grab clears what it hands out). What was taken
// before stays valid; free does not give mem back (its owner does), and
// mem must stay mapped until the arena is done with it.
func (a *arena) adopt(mem []uint64) {
	if len(mem) > a.used-a.off {
		a.buf, a.off, a.used = mem, 0, len(mem)
	}
}

// wordsOf is s's memory as words (whole words only).
func wordsOf[T any](s []T) []uint64 {
	var z T
	n := len(s) * int(unsafe.Sizeof(z)) / 8
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(s))), n)
}

// take returns n Ts from a; zero says they must be zero (else they may
// hold what an earlier, released slice left there).
func take[T any](a *arena, n int, zero bool) []T {
	var z T
	if n <= 0 {
		return nil
	}
	words := (n*int(unsafe.Sizeof(z)) + 7) / 8
	a.reserve(words)
	w := a.buf[a.off : a.off+words]
	if zero && a.off < a.used {
		clear(w[:min(words, a.used-a.off)])
	}
	a.off += words
	a.used = max(a.used, a.off)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// grab returns n zero Ts from a.
func grab[T any](a *arena, n int) []T { return take[T](a, n, true) }

// grabDirty returns n Ts from a that the caller overwrites before reading.
func grabDirty[T any](a *arena, n int) []T { return take[T](a, n, false) }

// mapSmall returns words zero words in small pages, on the Go heap: a
// trace of a few thousand messages touches a few of them. Its slices keep
// the block alive; free has nothing to give back.
func mapSmall(words int) []uint64 { return make([]uint64, words) }
