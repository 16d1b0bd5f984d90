package prefetch

import (
	"testing"
	"unsafe"
)

// A prefetch is a hint: addresses outside any object, unmapped or null,
// must not fault (a load in its place would crash here).
func TestNeverFaults(t *testing.T) {
	s := make([]uint64, 16)
	end := uintptr(unsafe.Pointer(&s[0])) + 16*8
	for _, p := range []uintptr{0, 8, 1 << 47, ^uintptr(0) - 64, end} {
		Line(p)
		Two(p, p+64)
		Four(p, p+1, p+2, p+3)
		Lines(p, 256)
	}
	Lines(0, 0)
	At(s, 15)
}
