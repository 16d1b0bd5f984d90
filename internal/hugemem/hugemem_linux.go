//go:build linux

package hugemem

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
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
// a time. The bytes must hold no Go pointers. While memory is kept (Keep,
// KeepUpTo), Map takes it from what earlier mappings gave back first,
// clearing only the pages that are resident (the others read as zero), and
// gives it back there.
func Map(n int) ([]byte, func()) {
	if off || n < small {
		return make([]byte, n), func() {}
	}
	if b, ok := mapKept(n); ok {
		return b, func() { release(unsafe.Pointer(unsafe.SliceData(b))) }
	}
	// Fresh memory: as much of what is kept idle goes back, so that
	// keeping does not raise the process's memory.
	kept.Lock()
	shedLocked(kept.res - n)
	kept.Unlock()
	return MapFresh(n)
}

// MapFresh is Map in memory never touched, whether memory is kept or not:
// for an array sized for the most that may be written, of which only the
// pages written are to cost memory (kept memory is resident all through).
func MapFresh(n int) ([]byte, func()) {
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
	size := (n + huge - 1) &^ (huge - 1)
	full, err := mmapAnon(size + huge)
	if err != nil {
		return make([]byte, n), func() {}
	}
	// The mapping is cut to the huge pages b starts and ends in: what is
	// kept and unmapped later is whole pages.
	start := uintptr(unsafe.Pointer(unsafe.SliceData(full)))
	skip := int(((start + huge - 1) &^ (huge - 1)) - start)
	if skip > 0 {
		munmap(full[:skip])
	}
	if tail := full[skip+size:]; len(tail) > 0 {
		munmap(tail)
	}
	b := full[skip : skip+n : skip+n]
	madvise(unsafe.Pointer(unsafe.SliceData(b)), uintptr(adv))
	a := unsafe.Pointer(unsafe.SliceData(b))
	kept.Lock()
	kept.live[a] = uintptr(size)
	kept.Unlock()
	return b, func() { release(a) }
}

// MapZero returns n zero bytes outside the Go heap in memory never
// touched and not advised for huge pages, and the function that unmaps
// them: each 4 KB page costs memory only once written (read untouched, it
// is the kernel's shared zero page). For a large table of which a few
// entries are written and the rest read as zero. Never from kept memory
// (Keep), which is resident. The bytes must hold no Go pointers to memory
// the collector frees (the collector does not see them).
func MapZero(n int) ([]byte, func()) {
	if n <= 0 {
		return nil, func() {}
	}
	b, err := mmapAnon(n)
	if err != nil {
		return make([]byte, n), func() {}
	}
	return b, func() { munmap(b) }
}

// page is the size of a small page: kept memory is handed out in whole ones.
const page = 4 << 10

// span is a range of n bytes of whole pages from p.
type span struct {
	p unsafe.Pointer
	n uintptr
}

func (s span) len() int       { return int(s.n) }
func (s span) start() uintptr { return uintptr(s.p) }
func (s span) end() uintptr   { return uintptr(s.p) + s.n }
func (s span) bytes() []byte  { return unsafe.Slice((*byte)(s.p), s.n) }

// kept holds the memory Map's mappings gave back while keeping is on
// (Keep, KeepUpTo), at most limit bytes of it, for Map and Spare to hand
// out again, and the mappings handed out (live, by first byte: their
// length in bytes). free is sorted and its spans never touch: neighbours
// are merged. res is the bytes of free's pages that are resident (as
// mincore found them when they were kept), at most idle: beyond, pages
// are discarded (shedLocked).
var kept struct {
	sync.Mutex
	on    bool
	input bool // Keep, not KeepUpTo: see KeepsInput
	limit int
	idle  int
	free  []span
	bytes int
	res   int
	live  map[unsafe.Pointer]uintptr
}

func init() { kept.live = map[unsafe.Pointer]uintptr{} }

const keepMax = 64 << 20

// Keep makes the functions Map returns keep the memory they give back
// (up to 64 MB in all) for Map and Spare instead of unmapping it: for a
// command whose next large buffers can live in the memory of those it is
// done with (wap5 nest: the pass's arrays in what the input was read and
// decompressed into), memory the process has touched already and needs
// no page faults. Keep(false) unmaps what is kept and stops keeping.
func Keep(on bool) {
	kept.Lock()
	defer kept.Unlock()
	kept.on, kept.input, kept.limit, kept.idle = on, on, keepMax, keepMax
	if !on {
		trimLocked()
	}
}

// KeepUpTo is Keep(true) with at most limit bytes kept, of which at most
// idle resident (the resident pages beyond are discarded, the largest
// spans' last pages first: Map hands out spans from their start), and the
// input's memory kept as it is read where input is set (KeepsInput): for
// a command whose steps give
// back and take large arrays in turn (wap5 link), where each would
// otherwise fault in memory the step before gave back. What is kept
// counts towards the process's memory until Map hands it out again: idle
// bounds that, and Trim gives it all back before a step that needs memory
// of another kind (the Go heap's).
func KeepUpTo(limit, idle int, input bool) {
	kept.Lock()
	defer kept.Unlock()
	kept.on, kept.input, kept.limit, kept.idle = true, input, limit, idle
	shedLocked(kept.res)
}

// KeepsInput reports whether a reader should keep the memory of an input
// it has read (its pages resident) until it is done with all of it, for
// what follows (Keep, KeepUpTo with input), rather than give it back as
// it goes (keeping off, or KeepUpTo without: the process's peak would be
// while the input is read).
func KeepsInput() bool {
	kept.Lock()
	defer kept.Unlock()
	return kept.on && kept.input
}

// Trim unmaps what is kept (keeping stays on).
func Trim() {
	kept.Lock()
	defer kept.Unlock()
	trimLocked()
}

func trimLocked() {
	for _, s := range kept.free {
		unmap(s)
	}
	kept.free, kept.bytes, kept.res = nil, 0, 0
}

// shedLocked discards resident pages kept beyond to bytes (and kept.idle):
// from the end of the largest span on (then the next largest), 2 MB at a
// time.
func shedLocked(to int) {
	to = max(0, min(to, kept.idle))
	if kept.res <= to {
		return
	}
	order := make([]int, len(kept.free))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return int(kept.free[j].n) - int(kept.free[i].n) })
	for _, i := range order {
		s := kept.free[i]
		for e := s.end(); e > s.start() && kept.res > to; {
			a := max(s.start(), (e-1)&^(huge-1))
			b := unsafe.Slice((*byte)(unsafe.Add(s.p, a-s.start())), e-a)
			if r := resident(b); r > 0 {
				_ = syscall.Madvise(b, syscall.MADV_DONTNEED)
				kept.res -= r
			}
			e = a
		}
		if kept.res <= to {
			return
		}
	}
	kept.res = max(0, kept.res)
}

// Keeping reports whether keeping is on: whether memory a Map's function
// gives back may be handed out again by Map or Spare, its bytes as they
// were left.
func Keeping() bool {
	kept.Lock()
	defer kept.Unlock()
	return kept.on
}

// release gives back the mapping that starts at a (handed out by Map or
// Spare): kept where keeping is on and there is room, else unmapped.
func release(a unsafe.Pointer) {
	kept.Lock()
	defer kept.Unlock()
	n, ok := kept.live[a]
	if !ok {
		panic("hugemem: memory given back twice, or not Map's")
	}
	delete(kept.live, a)
	keepLocked(span{a, n})
}

// keepLocked keeps s (merged with its neighbours) or unmaps it.
func keepLocked(s span) {
	if s.n == 0 {
		return
	}
	if !kept.on || kept.bytes+s.len() > kept.limit {
		unmap(s)
		return
	}
	kept.res += resident(s.bytes())
	keepSpanLocked(s)
	shedLocked(kept.res)
}

// keepSpanLocked adds s to the spans kept, merged with its neighbours.
func keepSpanLocked(s span) {
	kept.bytes += s.len()
	i := sort.Search(len(kept.free), func(i int) bool { return kept.free[i].start() >= s.end() })
	if i > 0 && kept.free[i-1].end() == s.start() {
		i--
		kept.free[i].n += s.n
	} else {
		kept.free = slices.Insert(kept.free, i, s)
	}
	if i+1 < len(kept.free) && kept.free[i+1].start() == kept.free[i].end() {
		kept.free[i].n += kept.free[i+1].n
		kept.free = slices.Delete(kept.free, i+1, i+2)
	}
}

func unmap(s span) {
	munmap(s.bytes())
}

// mmapAnon maps n bytes of anonymous memory. (munmap, not syscall.Munmap,
// unmaps it: that takes only a whole mapping, and kept memory is unmapped
// in parts.)
func mmapAnon(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
}

// munmap unmaps the whole pages of b, which mmapAnon mapped (all or part).
func munmap(b []byte) {
	if len(b) > 0 {
		_, _, _ = syscall.Syscall(syscall.SYS_MUNMAP, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 0)
	}
}

// takeLocked takes a kept span of at least n bytes out of the kept
// memory and marks it live: whole (its whole length), the smallest such
// span; else its first n bytes rounded up to whole pages, from the span
// whose first n bytes have the most pages resident (the smallest of
// those): what is resident and kept idle is the memory to use first. ok
// is false when none is large enough.
func takeLocked(n int, whole bool) (span, bool) {
	m := uintptr((n + page - 1) &^ (page - 1))
	best, bestRes := -1, -1
	for i, s := range kept.free {
		if s.len() < n {
			continue
		}
		r := 0
		if !whole {
			r = resident(s.bytes()[:min(m, s.n)])
		}
		if best < 0 || r > bestRes || r == bestRes && s.len() < kept.free[best].len() {
			best, bestRes = i, r
		}
	}
	if best < 0 {
		return span{}, false
	}
	s := kept.free[best]
	if !whole && m < s.n {
		kept.free[best] = span{unsafe.Add(s.p, m), s.n - m}
		s.n = m
	} else {
		kept.free = slices.Delete(kept.free, best, best+1)
		bestRes = resident(s.bytes())
	}
	kept.bytes -= s.len()
	kept.res = max(0, kept.res-bestRes)
	kept.live[s.p] = s.n
	if !whole {
		// What the caller touches of the rest is fresh memory: as much
		// of what is kept idle goes back (see Map).
		shedLocked(kept.res - (s.len() - bestRes))
	}
	return s, true
}

// mapKept is Map's n bytes from the memory kept, cleared, or ok false.
func mapKept(n int) ([]byte, bool) {
	kept.Lock()
	s, ok := takeLocked(n, false)
	kept.Unlock()
	if !ok {
		return nil, false
	}
	b := s.bytes()[:n:n]
	clearResident(b)
	return b, true
}

// clearResident zeroes b's resident pages (mincore): the others read as
// zero when touched, and clearing them would fault them in. b starts on a
// page. Where mincore fails, all of b is cleared.
func clearResident(b []byte) {
	np := (len(b) + page - 1) / page
	vec := make([]byte, np)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); e != 0 {
		clear(b)
		return
	}
	for i := 0; i < np; {
		if vec[i]&1 == 0 {
			i++
			continue
		}
		j := i + 1
		for j < np && vec[j]&1 != 0 {
			j++
		}
		clear(b[i*page : min(j*page, len(b))])
		i = j
	}
}

// Spare returns the smallest kept span (see Keep) of at least n bytes,
// whole (its length may be larger than n: one or more mappings given
// back), and the function that gives it back (kept again, or unmapped);
// ok is false when there is none. Its bytes are whatever its last users
// left: the caller clears what it needs zero. The bytes must hold no Go
// pointers.
func Spare(n int) (b []byte, free func(), ok bool) {
	kept.Lock()
	s, ok := takeLocked(n, true)
	kept.Unlock()
	if !ok {
		return nil, nil, false
	}
	return s.bytes(), func() { release(s.p) }, true
}

// Release gives back now the memory of s where s starts a mapping Map (or
// Spare) handed out and not given back yet, as that mapping's function
// would (and that function must then not be called); it reports whether
// it did. For memory whose owner cannot hold the function (a trace's
// messages, made by its reader and dropped by the linker).
func Release[T any](s []T) bool {
	a := unsafe.Pointer(unsafe.SliceData(s))
	kept.Lock()
	defer kept.Unlock()
	n, ok := kept.live[a]
	if !ok || a == nil {
		return false
	}
	delete(kept.live, a)
	keepLocked(span{a, n})
	return true
}

// Mapped reports whether s starts memory Map (or Spare) handed out and
// not given back yet.
func Mapped[T any](s []T) bool {
	a := unsafe.Pointer(unsafe.SliceData(s))
	kept.Lock()
	defer kept.Unlock()
	_, ok := kept.live[a]
	return ok && a != nil
}

// Shrink gives back the memory of s from byte keep on (the whole pages
// after it): where s starts a mapping Map handed out, that memory is kept
// (Keep) or unmapped, and the mapping then ends there; else, in the Go
// heap, its pages are discarded (Discard). s's first keep bytes stay as
// they are; the rest must not be used any more. s must hold no Go pointers.
func Shrink[T any](s []T, keep int) {
	var z T
	size := len(s) * int(unsafe.Sizeof(z))
	if keep >= size {
		return
	}
	a := unsafe.Pointer(unsafe.SliceData(s))
	kept.Lock()
	if n, ok := kept.live[a]; ok && a != nil {
		cut := uintptr((keep + page - 1) &^ (page - 1)) // (a is on a page)
		if cut < n {
			kept.live[a] = cut
			keepLocked(span{unsafe.Add(a, cut), n - cut})
		}
		kept.Unlock()
		return
	}
	kept.Unlock()
	Discard(unsafe.Slice((*byte)(a), size)[keep:])
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

// Kept is the bytes kept (Keep), those of them resident, and the bytes of the mappings Map has
// handed out and not taken back, in whole pages: for tests and
// diagnostics.
func Kept() (keptBytes, residentBytes, liveBytes int) {
	kept.Lock()
	defer kept.Unlock()
	for _, n := range kept.live {
		liveBytes += int(n)
	}
	for _, s := range kept.free {
		residentBytes += resident(s.bytes())
	}
	return kept.bytes, residentBytes, liveBytes
}

// resident is the bytes of b's pages that are resident (mincore).
func resident(b []byte) int {
	vec := make([]byte, (len(b)+page-1)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); e != 0 {
		return 0
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n * page
}
