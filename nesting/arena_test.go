package nesting

import "testing"

// TestArenaSmallBlock: a small request gets a block of its own size on the
// Go heap (nothing to unmap), a large one a mapped block of at least
// arenaBlock words; slices taken from either are zero and do not overlap,
// and a release hands the memory back for reuse, cleared by grab.
func TestArenaSmallBlock(t *testing.T) {
	var a arena
	defer a.free()
	a.reserve(1000)
	if len(a.buf) != 1000 || len(a.frees) != 0 {
		t.Fatalf("small request: block of %d words, %d to free; want 1000, 0", len(a.buf), len(a.frees))
	}
	m := a.mark()
	x := grab[uint64](&a, 600)
	for i := range x {
		x[i] = uint64(i) + 1
	}
	a.release(m)
	y := grab[uint64](&a, 1000)
	for i, v := range y {
		if v != 0 {
			t.Fatalf("grab after release: word %d is %d, want 0", i, v)
		}
	}
	if len(a.buf) != 1000 {
		t.Fatalf("1000 words fit the small block, yet a new one (%d words) was taken", len(a.buf))
	}
	// The next request does not fit: a new block, mapped when large.
	z := grab[uint64](&a, smallBlock)
	if len(a.frees) != 1 || len(a.buf) < arenaBlock {
		t.Fatalf("large request: block of %d words, %d to free; want ≥ %d, 1", len(a.buf), len(a.frees), arenaBlock)
	}
	z[0], z[len(z)-1] = 7, 7
	for i, v := range y {
		if v != 0 {
			t.Fatalf("the small block's word %d changed to %d", i, v)
		}
	}
}
