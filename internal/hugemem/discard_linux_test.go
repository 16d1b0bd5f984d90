//go:build linux

package hugemem

import (
	"testing"
	"unsafe"
)

// TestDiscard: the whole 4 KB pages inside the slice read zero afterwards
// and every byte outside them keeps its value, in the Go heap and in a
// mapping.
func TestDiscard(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int
		from, to  int
		wantZeros bool
	}{
		{"heap, several pages", 1 << 20, 1000, 300_000, true},
		{"heap, within a page", 1 << 20, 10, 4000, false},
		{"mapping, from a page boundary", 8 << 20, 4096, 8 << 20, true},
		{"mapping, empty", 8 << 20, 5000, 5000, false},
	} {
		var b []byte
		if tc.size >= small {
			m, free := Map(tc.size)
			defer free()
			b = m
		} else {
			b = make([]byte, tc.size)
		}
		for i := range b {
			b[i] = byte(i%251 + 1)
		}
		Discard(b[tc.from:tc.to])
		base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		zeros := 0
		for i := range b {
			a := base + uintptr(i)
			inside := i >= tc.from && i < tc.to && a >= (base+uintptr(tc.from)+4095)&^4095 && a < (base+uintptr(tc.to))&^4095
			switch {
			case inside && b[i] != 0:
				t.Fatalf("%s: byte %d is %d after Discard, want 0", tc.name, i, b[i])
			case !inside && b[i] != byte(i%251+1):
				t.Fatalf("%s: byte %d outside the discarded pages changed to %d", tc.name, i, b[i])
			case inside:
				zeros++
			}
		}
		if (zeros > 0) != tc.wantZeros {
			t.Errorf("%s: %d bytes discarded", tc.name, zeros)
		}
	}
}
