package linking

import "testing"

// TestSlotIndexes: patIndex and tagIndex find every key put, through their
// growths (patIndex from 1024 slots, tagIndex's parts from 512), and none
// that was not; patIndex also where many patterns share a tag.
func TestSlotIndexes(t *testing.T) {
	var mem offHeap
	defer mem.free()
	for _, tc := range []struct {
		n    int
		tags uint32 // patIndex tags keep these bits
	}{{1, ^uint32(0)}, {716, ^uint32(0)}, {717, ^uint32(0)}, {5000, ^uint32(0)}, {300000, ^uint32(0)}, {3000, 7}, {500, 0}} {
		n := tc.n
		pi := patIndex{mem: &mem}
		ti := tagIndex{mem: &mem}
		tag := func(i int) uint32 { return uint32(mix(uint64(i)+1)>>32) & tc.tags }
		// tagIndex's tags are distinct (classSpill puts a tag once).
		ttag := func(i int) uint32 { return uint32(i+1) * 0x9e3779b1 }
		for i := 0; i < n; i++ {
			if pi.find(tag(i), uint32(i)+1) >= 0 {
				t.Fatalf("n %d: pattern %d found before it was added", n, i)
			}
			pi.add(tag(i), uint32(i)+1)
			ti.put(ttag(i), int32(i))
		}
		if 10*pi.n > 7*len(pi.slots) {
			t.Errorf("n %d: %d slots, more than 70 %% full", n, len(pi.slots))
		}
		sum := 0
		for _, p := range ti.parts {
			if sum += p.n; 10*p.n > 7*len(p.slots) {
				t.Errorf("n %d: a tag part of %d slots holds %d", n, len(p.slots), p.n)
			}
		}
		if sum != n || ti.n != n {
			t.Errorf("n %d: %d tags in the parts, %d in all", n, sum, ti.n)
		}
		for i := 0; i < n; i++ {
			if s := pi.find(tag(i), uint32(i)+1); s < 0 || pi.slots[s] != patSlot(tag(i), uint32(i)+1) {
				t.Fatalf("n %d: pattern %d not found (slot %d)", n, i, s)
			}
			if r, ok := ti.get(ttag(i)); !ok || r != int32(i) {
				t.Errorf("n %d: tag %d found as %d, %v", n, i, r, ok)
			}
		}
		if pi.find(tag(n), uint32(n)+1) >= 0 || pi.find(tag(0), uint32(n)+1) >= 0 {
			t.Errorf("n %d: an absent pattern found", n)
		}
		if _, ok := ti.get(ttag(n)); ok {
			t.Errorf("n %d: an absent tag found", n)
		}
		pi.free()
	}
}
