//go:build linux

package hugemem

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestKeptMemory: with keeping on, Map hands out memory given back before
// (by Map's functions, Release and Shrink), zero, and what is kept stays
// within the limit; neighbours given back apart are handed out as one.
func TestKeptMemory(t *testing.T) {
	if off {
		t.Skip("advice off: Map makes Go slices")
	}
	fill := func(b []byte) {
		for i := range b {
			b[i] = byte(i%251 + 1)
		}
	}
	for _, tc := range []struct {
		name  string
		limit int
		// give makes memory and gives it back; it returns the memory's
		// first byte.
		give func() *byte
		// n is then asked of Map; reuse: whether the memory is handed out
		// again (its first byte on).
		n     int
		reuse bool
	}{
		{"freed mapping", 64 << 20, func() *byte {
			b, free := Map(9 << 20)
			fill(b)
			free()
			return unsafe.SliceData(b)
		}, 5 << 20, true},
		{"freed mapping, larger asked", 64 << 20, func() *byte {
			b, free := Map(5 << 20)
			fill(b)
			free()
			return unsafe.SliceData(b)
		}, 7 << 20, false},
		{"over the limit", 8 << 20, func() *byte {
			b, free := Map(9 << 20)
			fill(b)
			free()
			return unsafe.SliceData(b)
		}, 5 << 20, false},
		{"released", 64 << 20, func() *byte {
			b, _ := Map(6 << 20)
			fill(b)
			if !Release(b) || Release(b) {
				t.Fatal("Release: not once")
			}
			return unsafe.SliceData(b)
		}, 6 << 20, true},
		{"shrunk, then freed: one span", 64 << 20, func() *byte {
			b, free := Map(12 << 20)
			fill(b)
			Shrink(b, 3<<20+5) // the tail from 3 MB + 4 KB is kept now
			free()             // and the head next to it
			return unsafe.SliceData(b)
		}, 12 << 20, true},
	} {
		KeepUpTo(tc.limit, tc.limit, false)
		p := tc.give()
		b, free := Map(tc.n)
		if !Mapped(b) || Mapped(b[1:]) {
			t.Errorf("%s: Mapped: not the mapping's start alone", tc.name)
		}
		if len(b) != tc.n || cap(b) != tc.n {
			t.Fatalf("%s: Map(%d): len %d cap %d", tc.name, tc.n, len(b), cap(b))
		}
		if got := unsafe.SliceData(b) == p; got != tc.reuse {
			t.Errorf("%s: memory given back handed out again: %v, want %v", tc.name, got, tc.reuse)
		}
		for i, v := range b {
			if v != 0 {
				t.Fatalf("%s: byte %d is %d, want 0", tc.name, i, v)
			}
		}
		free()
		Keep(false)
	}
}

// TestShrinkHeap: Shrink of a Go slice discards its pages after keep.
func TestShrinkHeap(t *testing.T) {
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = 1
	}
	Shrink(b, 10_000)
	if b[9_999] != 1 || b[10_000] != 1 { // (the page 10,000 is in stays)
		t.Fatal("Shrink changed the bytes it keeps")
	}
	if !off && b[len(b)-1] != 0 {
		t.Fatal("Shrink of a heap slice: the last page not discarded")
	}
}

// TestClearResident: only resident pages are cleared, and the others stay
// out of memory.
func TestClearResident(t *testing.T) {
	if off {
		t.Skip("advice off")
	}
	b, free := Map(8 << 20)
	defer free()
	_ = syscall.Madvise(b, 15) // MADV_NOHUGEPAGE: 4 KB pages, countable
	for i := 0; i < len(b)/2; i++ {
		b[i] = 3
	}
	clearResident(b)
	vec := make([]byte, len(b)/page)
	if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Skip("no mincore")
	}
	res := 0
	for _, v := range vec {
		res += int(v & 1)
	}
	if res > len(vec)/2+1 {
		t.Errorf("%d of %d pages resident after clearResident, want the %d written", res, len(vec), len(vec)/2)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("byte %d is %d after clearResident", i, v)
		}
	}
}

// TestKeptIdle: what is kept stays resident up to the idle bound given,
// no more; fresh memory taken gives back as much of what is kept idle.
func TestKeptIdle(t *testing.T) {
	if off {
		t.Skip("advice off: Map makes Go slices")
	}
	defer Keep(false)
	for _, tc := range []struct {
		name         string
		idle         int
		fresh        int // then mapped fresh (no kept span is large enough)
		wantResident int // at most, after
	}{
		{"no bound", 64 << 20, 0, 16 << 20},
		{"bound", 6 << 20, 0, 6 << 20},
		{"fresh memory taken", 64 << 20, 40 << 20, 0},
	} {
		KeepUpTo(1<<30, tc.idle, false)
		b, free := Map(16 << 20)
		for i := range b {
			b[i] = 1
		}
		free()
		if tc.fresh > 0 {
			_, freeFresh := Map(tc.fresh)
			defer freeFresh()
		}
		if _, res, _ := Kept(); res > tc.wantResident {
			t.Errorf("%s: %d MB kept resident, want at most %d", tc.name, res>>20, tc.wantResident>>20)
		}
		Keep(false)
	}
}
