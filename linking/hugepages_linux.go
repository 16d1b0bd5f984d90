//go:build linux

package linking

import (
	"os"
	"syscall"
	"unsafe"
)

// noHuge: WAP5_NOHUGEPAGES=1 turns hugePages off (to measure what it gives).
var noHuge = os.Getenv("WAP5_NOHUGEPAGES") == "1"

// Linux madvise advice values (not all in package syscall).
const (
	madvHugepage = 14 // MADV_HUGEPAGE
	madvCollapse = 25 // MADV_COLLAPSE (Linux ≥ 6.1)
)

// hugePages asks the kernel to back the whole 2 MB pages of s's memory with
// transparent huge pages, now (MADV_COLLAPSE: the data is copied once) and
// from then on (MADV_HUGEPAGE). The joint linker reads its per-message
// arrays at random (a node's messages are spread over the whole trace):
// with 4 KB pages nearly every such load also misses the TLB, and a page
// walk on a virtual machine is expensive. Where the kernel cannot (older
// kernels, THP disabled, no memory to spare) nothing changes: errors are
// ignored. Small arrays (< 4 MB) are left alone.
func hugePages[T any](s []T) {
	var z T
	n := uintptr(len(s)) * unsafe.Sizeof(z)
	if noHuge || n < 4<<20 {
		return
	}
	const huge = 2 << 20
	p := unsafe.Pointer(unsafe.SliceData(s))
	start := uintptr(p)
	a := (start + huge - 1) &^ (huge - 1)
	e := (start + n) &^ (huge - 1)
	if e <= a {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Add(p, a-start)), e-a)
	_ = syscall.Madvise(b, madvHugepage)
	_ = syscall.Madvise(b, madvCollapse)
}
