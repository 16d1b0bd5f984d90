package reconcile

import (
	"math/rand"
	"slices"
	"testing"
)

// TestConnIndex drives the open-addressing connection table through
// growth, deletions and reused deleted slots against a map of lists, with
// colliding hashes (few distinct values, so probe runs cross each other)
// and aliases (a connection also listed under another hash): every list
// must hold the same connections in the same order, and every live
// connection's slot must be its own list's (what retirement relies on).
func TestConnIndex(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var tab connIndex
	ref := map[uint64][]*conn{}
	own := map[*conn]uint64{}
	alias := map[*conn][]uint64{}
	var live []*conn
	for step := 0; step < 200000; step++ {
		switch r := rng.Intn(10); {
		case r < 5 || len(live) == 0: // a new connection
			h := uint64(rng.Intn(3000)) << uint(rng.Intn(3)*20) // colliding low bits too
			c := &conn{serial: int32(step)}
			c.slot = tab.add(h, c)
			ref[h] = append(ref[h], c)
			own[c] = h
			live = append(live, c)
		case r < 6: // listed under another hash too (step 6's alias)
			c := live[rng.Intn(len(live))]
			h := uint64(rng.Intn(3000))
			if h == own[c] || slices.Contains(ref[h], c) {
				continue
			}
			tab.add(h, c)
			ref[h] = append(ref[h], c)
			alias[c] = append(alias[c], h)
		default: // retire one: drop it from its own list, then from the others
			i := rng.Intn(len(live))
			c := live[i]
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			tab.drop(c)
			ref[own[c]] = slices.DeleteFunc(ref[own[c]], func(x *conn) bool { return x == c })
			for _, h := range alias[c] {
				tab.dropKey(h, c)
				ref[h] = slices.DeleteFunc(ref[h], func(x *conn) bool { return x == c })
			}
			delete(own, c)
			delete(alias, c)
		}
		if step%5000 != 0 {
			continue
		}
		n := 0
		for h, l := range ref {
			if len(l) == 0 {
				if tab.get(h) != nil {
					t.Fatalf("step %d: hash %x: deleted list still found", step, h)
				}
				continue
			}
			n++
			if got := tab.get(h); !slices.Equal(got, l) {
				t.Fatalf("step %d: hash %x: list %v, want %v", step, h, serials(got), serials(l))
			}
		}
		m := 0
		tab.each(func([]*conn) { m++ })
		if m != n {
			t.Fatalf("step %d: each saw %d lists, want %d", step, m, n)
		}
		for _, c := range live {
			s := tab.slots[c.slot]
			if s.h != own[c] || !slices.Contains(s.list, c) {
				t.Fatalf("step %d: connection %d: slot %d is not its list", step, c.serial, c.slot)
			}
		}
	}
	if len(tab.slots) > 4*16384 {
		t.Errorf("table of %d slots for at most a few thousand lists: deleted slots not reclaimed", len(tab.slots))
	}
}

func serials(l []*conn) []int32 {
	var out []int32
	for _, c := range l {
		out = append(out, c.serial)
	}
	return out
}
