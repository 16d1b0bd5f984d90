package hugemem

import (
	"testing"
	"unsafe"
)

type rec struct {
	a, b, c int64
	d, e    int32
	f       [40]byte
} // 72 bytes: not a divisor of 2 MB

func TestMake(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 60000, 100000, 1 << 20} {
		for _, c := range []int{n, n + 7, 2 * n} {
			s := Make[rec](n, c)
			if len(s) != n || cap(s) < c {
				t.Fatalf("Make(%d, %d): len %d cap %d", n, c, len(s), cap(s))
			}
			for i := range s[:cap(s)] {
				if s[:cap(s)][i] != (rec{}) {
					t.Fatalf("Make(%d, %d): element %d not zero", n, c, i)
				}
			}
			s = s[:cap(s)]
			if len(s) > 0 {
				s[len(s)-1].a = 1 // the whole capacity is usable
			}
			if off || uintptr(c)*unsafe.Sizeof(rec{}) < small {
				continue
			}
			if p := uintptr(unsafe.Pointer(&s[0])); p%huge >= unsafe.Sizeof(rec{}) {
				t.Errorf("Make(%d, %d): starts %d bytes into a huge page", n, c, p%huge)
			}
		}
	}
	b := Make[byte](5<<20, 5<<20)
	if p := uintptr(unsafe.Pointer(&b[0])); !off && p%huge != 0 {
		t.Errorf("byte slice starts %d bytes into a huge page", p%huge)
	}
}

func TestMap(t *testing.T) {
	for _, n := range []int{0, 100, 5 << 20, 9<<20 + 123, 4<<20 + 4096, 6<<20 - 1, 6 << 20, 5<<20 + 300<<10} {
		b, release := Map(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Map(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i := 0; i < n; i += 4096 {
			if b[i] != 0 {
				t.Fatalf("Map(%d): byte %d not zero", n, i)
			}
			b[i] = 1
		}
		if n > 0 {
			b[n-1] = 2
		}
		release()
	}
}

// TestCollapseKeepsData: collapsing the pages of a filled array into huge
// pages must leave every value as it was, whatever the array's alignment
// and size, and whether or not the kernel obliges.
func TestCollapseKeepsData(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int // int32 elements
		off  int // start the slice this far into the allocation
	}{
		{"small", 1000, 0},
		{"below threshold", 1 << 20, 0},
		{"8 MB", 2 << 20, 0},
		{"unaligned 12 MB", 3<<20 + 17, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := make([]int32, tc.n+tc.off)
			s := buf[tc.off:]
			for i := range s {
				s[i] = int32(i*2654435761) ^ 0x5a5a
			}
			Collapse(s)
			for i := range s {
				if want := int32(i*2654435761) ^ 0x5a5a; s[i] != want {
					t.Fatalf("element %d: %d, want %d", i, s[i], want)
				}
			}
			for i := range buf[:tc.off] {
				if buf[i] != 0 {
					t.Fatalf("before the slice, element %d changed: %d", i, buf[i])
				}
			}
		})
	}
}

func TestKeepSpare(t *testing.T) {
	if _, _, ok := Spare(1); ok {
		t.Fatal("Spare before Keep: got a mapping")
	}
	b, free := Map(5 << 20)
	b[0], b[len(b)-1] = 7, 9
	free() // not kept: unmapped
	if _, _, ok := Spare(1); ok {
		t.Fatal("Spare of a mapping freed before Keep: got one")
	}
	Keep(true)
	defer Keep(false)
	b, free = Map(9<<20 + 123)
	b[0], b[len(b)-1] = 7, 9
	p := unsafe.SliceData(b)
	free()
	if off {
		if _, _, ok := Spare(1); ok {
			t.Fatal("Spare with advice off: got a mapping")
		}
		return
	}
	if _, _, ok := Spare(64 << 20); ok {
		t.Fatal("Spare(64 MB): got a mapping larger than any kept")
	}
	s, freeS, ok := Spare(5 << 20)
	if !ok || unsafe.SliceData(s) != p || len(s) < 9<<20+123 || s[0] != 7 || s[9<<20+122] != 9 {
		t.Fatalf("Spare(5 MB): ok %v, len %d, not the 9 MB mapping with its bytes", ok, len(s))
	}
	if _, _, ok := Spare(1); ok {
		t.Fatal("Spare with none left: got a mapping")
	}
	s[len(s)-1] = 1 // the whole length is usable
	freeS()
	if _, freeS, ok = Spare(9 << 20); !ok {
		t.Fatal("a spare given back is not kept again")
	}
	freeS()
	Keep(false)
	if _, _, ok := Spare(1); ok {
		t.Fatal("Spare after Keep(false): got a mapping")
	}
}
