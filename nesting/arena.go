package nesting

import (
	"unsafe"

	"wap5/internal/hugemem"
)

// arena hands out the pass's scratch slices from large blocks in
// transparent huge pages (hugemem.Make). On a virtual machine a page fault
// costs microseconds, and fresh memory is dear even in huge pages (the
// kernel zeroes every page first touched), so the pass keeps its memory
// small and reuses it: slices are taken like a stack, and release hands
// back everything taken since a mark, for the next step to reuse. Slices
// must be of types without pointers (the blocks are []uint64, which the
// garbage collector does not scan) and alignment ≤ 8.
type arena struct {
	buf  []uint64 // the current block
	off  int      // words of buf taken
	used int      // words of buf ever taken (beyond: still zero)
}

// arenaBlock is the smallest block, in words (8 MB).
const arenaBlock = 1 << 20

// reserve makes sure the current block has at least words more words
// free, starting a block of that size if it does not.
func (a *arena) reserve(words int) {
	if len(a.buf)-a.off < words {
		b := hugemem.Make[uint64](0, max(words, arenaBlock))
		a.buf, a.off, a.used = b[:cap(b)], 0, 0
	}
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
