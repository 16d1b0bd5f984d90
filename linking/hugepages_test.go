package linking

import "testing"

// TestHugePagesKeepsData: asking for huge pages (collapsing the pages of a
// filled array) must leave every value as it was, whatever the array's
// alignment and size, and whether or not the kernel obliges.
func TestHugePagesKeepsData(t *testing.T) {
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
			hugePages(s)
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
