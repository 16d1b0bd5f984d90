package linking

import (
	"unsafe"

	"wap5/internal/hugemem"
)

// offHeap owns arrays of pointer-free values made outside the Go heap
// (hugemem.Map), given back to the system together by free. The linker's
// per-message arrays live from the start of a run to its end: in the Go
// heap they count twice towards the peak (the collector lets the heap grow
// to twice what is live before it collects), outside it once.
type offHeap struct{ frees []func() }

// offMake is make([]T, n) for a T without pointers: outside the Go heap
// where the array is large (≥ 4 MB), in o until o.free.
func offMake[T any](o *offHeap, n int) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if n*size < 4<<20 {
		return make([]T, n)
	}
	b, free := hugemem.Map(n * size)
	o.frees = append(o.frees, free)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// free gives o's arrays back; nothing may refer to them any more.
func (o *offHeap) free() {
	for _, f := range o.frees {
		f()
	}
	o.frees = nil
}
