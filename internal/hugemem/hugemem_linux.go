//go:build linux

package hugemem

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"unsafe"
)

// off: WAP5_NOHUGEPAGES=1 turns Advise and Make's advice off (to measure
// what they give).
var off = os.Getenv("WAP5_NOHUGEPAGES") == "1"

const (
	madvHugepage = 14      // MADV_HUGEPAGE
	madvCollapse = 25      // MADV_COLLAPSE (Linux ≥ 6.1)
	huge         = 2 << 20 // bytes in a transparent huge page
	small        = 4 << 20 // slices below this are left alone
	mapTail      = 256 << 10
)

// Advise asks the kernel to back the whole 2 MB pages of s's memory (up to
// its capacity) with transparent huge pages when they are first touched
// (MADV_HUGEPAGE). Call it on a large slice just made, before writing to
// it: each 2 MB page then costs one page fault instead of 512, and on a
// virtual machine a page fault costs microseconds. Small slices (< 4 MB) are
// left alone; where the kernel cannot (THP disabled, older kernels, no huge
// page free) nothing changes: errors are ignored.
func Advise[T any](s []T) {
	if b := wholePages(s, cap(s)); b != nil {
		_ = syscall.Madvise(b, madvHugepage)
	}
}

// Collapse is Advise for a slice already written: it asks the kernel to
// copy the whole 2 MB pages of s's memory into transparent huge pages now
// (MADV_COLLAPSE: the data is copied once) and to keep them so
// (MADV_HUGEPAGE). For arrays that are then read at random (the joint
// linker's per-message arrays): with 4 KB pages nearly every such load also
// misses the TLB, and a page walk on a virtual machine is expensive. The
// values are unchanged; where the kernel cannot, nothing changes.
func Collapse[T any](s []T) {
	if b := wholePages(s, len(s)); b != nil {
		_ = syscall.Madvise(b, madvHugepage)
		_ = syscall.Madvise(b, madvCollapse)
	}
}

// wholePages is the memory of the whole 2 MB pages inside s's first n
// elements, or nil when there are none, s is small (< 4 MB) or advice is off.
func wholePages[T any](s []T, n int) []byte {
	var z T
	size := uintptr(n) * unsafe.Sizeof(z)
	if off || size < small {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(s))
	start := uintptr(p)
	a := (start + huge - 1) &^ (huge - 1)
	e := (start + size) &^ (huge - 1)
	if e <= a {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, a-start)), e-a)
}

// Make is make([]T, n, c) (c ≥ n) with the slice's memory in whole huge
// pages: it makes up to 2 MB more, starts the slice at the first element in
// a 2 MB page and extends its capacity to the end of the last such page,
// and advises all of them (Advise covers only the whole pages inside a
// slice, and the partial ones at its ends are up to 1,024 small page
// faults). The memory before the slice is never touched, so it costs
// address space only. Small slices (< 4 MB) are plain makes.
func Make[T any](n, c int) []T { return makeFrom[T](n, c, small) }

// MakeSmall is Make for slices from 256 KB up: where the slice is written
// all over once (a fresh process touching it first), one or two huge pages
// cost less than the 64 to 1,024 small page faults.
func MakeSmall[T any](n, c int) []T { return makeFrom[T](n, c, 256<<10) }

func makeFrom[T any](n, c int, least uintptr) []T {
	var z T
	size := unsafe.Sizeof(z)
	if off || size == 0 || uintptr(c)*size < least {
		return make([]T, n, c)
	}
	pad := int((2*huge + size - 1) / size)
	all := make([]T, c+pad)
	p := unsafe.Pointer(unsafe.SliceData(all))
	start := uintptr(p)
	a := (start + huge - 1) &^ (huge - 1)
	skip := int((a - start + size - 1) / size)
	end := (start + uintptr(skip+c)*size + huge - 1) &^ (huge - 1)
	cp := min(int((end-start)/size), len(all)) - skip
	madvise(unsafe.Add(p, a-start), min(end, start+uintptr(len(all))*size)-a)
	return all[skip : skip+n : skip+cp]
}

// Discard gives the memory of the whole 4 KB pages inside s back to the
// system (MADV_DONTNEED): its values are lost, and the pages read as zero
// until written again, when they are faulted in anew. For the part of a
// large array (in the Go heap or not) that holds nothing for a while: its
// pages then count no more towards the process's memory, and later
// arrays can use them. s must hold no Go pointers. Where the kernel
// cannot, nothing changes (the values stay): a caller may not rely on
// the zeros.
func Discard[T any](s []T) {
	var z T
	size := uintptr(len(s)) * unsafe.Sizeof(z)
	if size == 0 {
		return
	}
	const page = 4 << 10
	start := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	a := (start + page - 1) &^ (page - 1)
	e := (start + size) &^ (page - 1)
	if e <= a {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), a-start)), e-a), syscall.MADV_DONTNEED)
}

func madvise(p unsafe.Pointer, n uintptr) {
	_ = syscall.Madvise(unsafe.Slice((*byte)(p), n), madvHugepage)
}

// Reserve grows the Go heap by n bytes of memory advised for transparent
// huge pages and leaves them free for the allocations that follow: Go's
// page allocator serves the lowest free pages first, so small and large
// objects alike are carved from the reserve until it is used up, and a
// fresh process's heap is faulted in 2 MB at a time instead of 4 KB (on a
// virtual machine a 4 KB fault costs ~15 µs: 30 MB of heap touched once
// is ~0.1 CPU-s). For what no caller can advise itself (a library's
// buffers: the zstd encoder's 16 MB window) and for many small objects.
// The reserve costs address space only until it is used; it is freed by
// a collection, so call Reserve once, early, while the heap is small.
// Small reserves (< 4 MB) and advice off: nothing. Under a memory limit
// (GOMEMLIMIT) the reserve is at most a quarter of it: free heap counts
// against the limit, and the runtime would work to give it back. Under
// strict overcommit (vm.overcommit_memory 2) there is none: the address
// space would be charged as if used; and it is at most half the memory
// available (a mapping the kernel refuses is fatal to the Go runtime).
func Reserve(n int) {
	if lim := debug.SetMemoryLimit(-1); lim != math.MaxInt64 {
		n = int(min(int64(n), lim/4))
	}
	if off || n < small || strictOvercommit() {
		return
	}
	if avail := memAvailable(); avail > 0 {
		n = int(min(int64(n), avail/2))
	}
	if n < small {
		return
	}
	// 1. No collection while b is made and advised: one started by the
	// make itself (the heap is far over its goal) would find b live
	// or dead depending on when it scans the stack.
	old := debug.SetGCPercent(-1)
	b := make([]byte, n) // fresh from the system: untouched
	if w := wholePages(b, n); w != nil {
		_ = syscall.Madvise(w, madvHugepage)
	}
	// 2. One collection frees b, and a second one on the empty heap
	// starts a new generation for the scavenger: it passes over chunks
	// that were dense in the current or the last generation, and with
	// b's chunks in the last one the peak RSS of `wap5 link --method wap5
	// --json` on the CoDeeN-sized trace was 504 MB instead of 442 (in
	// every run where b outlived the first collection, before this
	// function made the sequence fixed).
	runtime.GC()
	runtime.GC()
	debug.SetGCPercent(old)
}

// strictOvercommit reports whether the kernel charges mapped memory as used
// (vm.overcommit_memory 2).
func strictOvercommit() bool {
	b, err := os.ReadFile("/proc/sys/vm/overcommit_memory")
	return err == nil && string(bytes.TrimSpace(b)) == "2"
}

// memAvailable is /proc/meminfo's MemAvailable in bytes, 0 when unknown.
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("MemAvailable:")); ok {
			f := bytes.Fields(rest)
			if len(f) == 2 && string(f[1]) == "kB" {
				if kb, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
					return kb << 10
				}
			}
			return 0
		}
	}
	return 0
}

// Map returns n zero bytes outside the Go heap, in transparent huge pages
// where the kernel can, and the function that gives them back to the
// system, which must be called once nothing refers to them any more. For
// large buffers with a clear end of life (an input read whole, what it
// decompresses to): freed through the garbage collector, such memory would
// wait for a collection, and the heap's returning it to the system piece by
// piece splits the huge pages that later allocations then fault in 4 KB at
// a time. The bytes must hold no Go pointers.
func Map(n int) ([]byte, func()) {
	if off || n < small {
		return make([]byte, n), func() {}
	}
	// The advice covers the partial huge page at the end too when it is
	// at least mapTail: touched, one huge page costs less than 64 or more
	// small page faults (an input read whole is touched to its end).
	adv := n &^ (huge - 1)
	if n-adv >= mapTail {
		adv += huge
	}
	full, err := syscall.Mmap(-1, 0, (n+huge-1)&^(huge-1)+huge, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, n), func() {}
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(full)))
	skip := int(((start + huge - 1) &^ (huge - 1)) - start)
	b := full[skip : skip+n : skip+n]
	madvise(unsafe.Pointer(unsafe.SliceData(b)), uintptr(adv))
	// Touched to its end, b's memory is resident up to the end of the
	// advised huge pages: that is what a kept mapping offers.
	return b, func() { keepOrUnmap(spare{b: full[skip : skip+max(n, adv)]}, full) }
}

// spare is a mapping Map made, given back while keeping is on: b is its
// memory from the first byte Map handed out (to the end of the advised
// huge pages), full the whole mapping.
type spare struct{ b, full []byte }

// spares holds the mappings kept (Keep), at most keepMax bytes of them.
var spares struct {
	sync.Mutex
	on    bool
	list  []spare
	bytes int
}

const keepMax = 64 << 20

// Keep makes the functions Map returns keep the memory they give back
// (up to 64 MB in all) for Spare instead of unmapping it: for a command
// whose next large buffers can live in the memory of those it is done
// with (wap5 nest: the pass's arrays in what the input was read and
// decompressed into), memory the process has touched already and needs
// no page faults. Keep(false) unmaps what is kept and stops keeping.
func Keep(on bool) {
	spares.Lock()
	defer spares.Unlock()
	spares.on = on
	if !on {
		for _, sp := range spares.list {
			_ = syscall.Munmap(sp.full[:cap(sp.full)])
		}
		spares.list, spares.bytes = nil, 0
	}
}

// Keeping reports whether Keep is on: whether memory a Map's function gives
// back may be handed out again by Spare, its bytes as they were left.
func Keeping() bool {
	spares.Lock()
	defer spares.Unlock()
	return spares.on
}

// keepOrUnmap keeps sp when keeping is on and there is room, else unmaps
// full.
func keepOrUnmap(sp spare, full []byte) {
	spares.Lock()
	defer spares.Unlock()
	if spares.on && spares.bytes+len(sp.b) <= keepMax {
		sp.full = full
		spares.list = append(spares.list, sp)
		spares.bytes += len(sp.b)
		return
	}
	_ = syscall.Munmap(full)
}

// Spare returns the smallest kept mapping (see Keep) of at least n bytes,
// whole (its length may be larger than n), and the function that gives it
// back (kept again, or unmapped); ok is false when there is none. Its
// bytes are whatever its last user left: the caller clears what it needs
// zero. The bytes must hold no Go pointers.
func Spare(n int) (b []byte, free func(), ok bool) {
	spares.Lock()
	defer spares.Unlock()
	best := -1
	for i, sp := range spares.list {
		if len(sp.b) >= n && (best < 0 || len(sp.b) < len(spares.list[best].b)) {
			best = i
		}
	}
	if best < 0 {
		return nil, nil, false
	}
	sp := spares.list[best]
	spares.list = append(spares.list[:best], spares.list[best+1:]...)
	spares.bytes -= len(sp.b)
	return sp.b, func() { keepOrUnmap(sp, sp.full) }, true
}

// MapFile maps the first n bytes of f read-only (the file's pages in the
// page cache, read ahead in one call): an input read whole without a copy
// into n bytes of fresh memory, which a fresh process pays for in page
// faults. It returns the bytes and the function that unmaps them, or ok
// false (then nothing is mapped). A read of the bytes past the file's end
// after it shrank faults: see debug.SetPanicOnFault.
func MapFile(f *os.File, n int) (b []byte, unmap func(), ok bool) {
	if n <= 0 {
		return nil, nil, false
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil, false
	}
	return b, func() { _ = syscall.Munmap(b) }, true
}
