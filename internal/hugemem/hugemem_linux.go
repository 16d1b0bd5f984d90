//go:build linux

package hugemem

import (
	"os"
	"syscall"
	"unsafe"
)

// off: WAP5_NOHUGEPAGES=1 turns Advise off (to measure what it gives).
var off = os.Getenv("WAP5_NOHUGEPAGES") == "1"

const madvHugepage = 14 // MADV_HUGEPAGE

// Advise asks the kernel to back the whole 2 MB pages of s's memory with
// transparent huge pages when they are first touched (MADV_HUGEPAGE). Call
// it on a large slice just made, before writing to it: each 2 MB page then
// costs one page fault instead of 512, and on a virtual machine a page fault
// costs microseconds. Small slices (< 4 MB) are left alone; where the kernel
// cannot (THP disabled, older kernels, no huge page free) nothing changes:
// errors are ignored.
func Advise[T any](s []T) {
	var z T
	n := uintptr(cap(s)) * unsafe.Sizeof(z)
	if off || n < 4<<20 {
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
}
