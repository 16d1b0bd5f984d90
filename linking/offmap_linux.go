//go:build linux

package linking

import (
	"sync/atomic"
	"syscall"

	"wap5/internal/hugemem"
)

// mapAnon is n zero bytes outside the Go heap, whatever n (hugemem.Map from
// 4 MB, a plain anonymous mapping below), and the function that gives them
// back; the bytes must hold no Go pointers to memory the collector frees.
func mapAnon(n int) ([]byte, func()) { return mapAnonFrom(n, hugemem.Map) }

// mapAnonFresh is mapAnon in memory never touched (hugemem.MapFresh).
func mapAnonFresh(n int) ([]byte, func()) { return mapAnonFrom(n, hugemem.MapFresh) }

func mapAnonFrom(n int, mapHuge func(int) ([]byte, func())) ([]byte, func()) {
	if n >= 4<<20 {
		b, free := mapHuge(n)
		offMapped.Add(int64(n))
		return b, func() { offMapped.Add(-int64(n)); free() }
	}
	b, err := syscall.Mmap(-1, 0, max(n, 1), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, n), func() {}
	}
	offMapped.Add(int64(n))
	return b[:n:n], func() { offMapped.Add(-int64(n)); syscall.Munmap(b) }
}

// offMapped is the bytes mapAnon has mapped and not given back (the
// process's, all linkers together): heapCap counts them with the Go memory.
var offMapped atomic.Int64
