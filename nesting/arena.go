package nesting

import (
	"unsafe"

	"wap5/internal/hugemem"
)

// arena hands out the pass's scratch slices from large blocks in
// transparent huge pages (hugemem.Make). On a virtual machine a page fault
// costs microseconds, and the dozen slices of 0.1–10 MB the pass needs
// would take thousands of 4 KB faults from the Go heap; from the arena they
// take one per 2 MB. Slices come zeroed, are never reused within a pass,
// and must be of types without pointers (the blocks are []uint64, which
// the garbage collector does not scan).
type arena struct{ free []uint64 }

// arenaBlock is the smallest block, in words (8 MB).
const arenaBlock = 1 << 20

// grab returns a zeroed slice of n Ts (T without pointers, alignment ≤ 8)
// from a.
func grab[T any](a *arena, n int) []T {
	var z T
	if n <= 0 {
		return nil
	}
	words := (n*int(unsafe.Sizeof(z)) + 7) / 8
	if len(a.free) < words {
		b := hugemem.Make[uint64](0, max(words, arenaBlock))
		a.free = b[:cap(b)]
	}
	p := unsafe.Pointer(unsafe.SliceData(a.free))
	a.free = a.free[words:]
	return unsafe.Slice((*T)(p), n)
}
