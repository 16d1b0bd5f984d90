package linking

import "testing"

// TestSlotIndexes: entIndex and tagIndex find every key put, through their
// growths (from 1024 slots), and none that was not.
func TestSlotIndexes(t *testing.T) {
	var mem offHeap
	defer mem.free()
	for _, n := range []int{1, 511, 512, 5000} {
		ei := entIndex{mem: &mem}
		ti := tagIndex{mem: &mem}
		var ents []patEntry
		for i := 0; i < n; i++ {
			h := mix(uint64(i) + 1)
			if _, e := ei.find(h, ents); e >= 0 {
				t.Fatalf("n %d: hash %d found before it was added", n, i)
			}
			ents = append(ents, patEntry{hash: h})
			ei.add(h, int32(i), ents)
			ti.put(uint32(h), int32(i))
		}
		for i := 0; i < n; i++ {
			h := mix(uint64(i) + 1)
			if _, e := ei.find(h, ents); e != int32(i) {
				t.Errorf("n %d: entry %d found as %d", n, i, e)
			}
			if r, ok := ti.get(uint32(h)); !ok || r != int32(i) {
				t.Errorf("n %d: tag %d found as %d, %v", n, i, r, ok)
			}
		}
		if _, e := ei.find(mix(uint64(n)+1), ents); e >= 0 {
			t.Errorf("n %d: an absent hash found", n)
		}
		if _, ok := ti.get(uint32(mix(uint64(n) + 1))); ok {
			t.Errorf("n %d: an absent tag found", n)
		}
	}
}
