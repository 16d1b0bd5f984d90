package reconcile

import (
	"math/rand"
	"testing"
)

// TestSockTable checks the socket table against a map under the uses the
// matcher makes of it (ids mostly increasing, ends retired about in
// order, a few long-lived, ids reused after retirement, ids far apart)
// and that its slice follows the ids in use instead of every id seen.
func TestSockTable(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewSource(seed))
		var tab sockTable
		want := map[uint64]*end{}
		var live []uint64
		next := uint64(1)
		ends := make([]end, 64)
		for step := 0; step < 200000; step++ {
			switch op := r.Intn(100); {
			case op < 40: // a new socket
				id := next
				next++
				if r.Intn(1000) == 0 {
					id = uint64(r.Int63()) // far off: the map
				}
				e := &ends[r.Intn(len(ends))]
				tab.set(id, e)
				want[id] = e
				live = append(live, id)
			case op < 75 && len(live) > 0: // the oldest retired, mostly
				k := 0
				if r.Intn(10) == 0 {
					k = r.Intn(len(live))
				}
				if r.Intn(50) == 0 && k == 0 && len(live) > 1 {
					k = 1 // the oldest stays a while (long-lived)
				}
				id := live[k]
				live = append(live[:k], live[k+1:]...)
				tab.set(id, nil)
				delete(want, id)
			case op < 80 && next > 1: // an id seen before, again (a retired end's socket used again)
				id := uint64(r.Int63n(int64(next-1))) + 1
				e := &ends[r.Intn(len(ends))]
				if _, ok := want[id]; !ok {
					live = append(live, id)
				}
				tab.set(id, e)
				want[id] = e
			default: // a look-up
				var id uint64
				if len(live) > 0 && r.Intn(2) == 0 {
					id = live[r.Intn(len(live))]
				} else {
					id = uint64(r.Int63n(int64(next + 10)))
				}
				if got := tab.get(id); got != want[id] {
					t.Fatalf("seed %d step %d: get(%d) = %p, want %p", seed, step, id, got, want[id])
				}
			}
		}
		for id, e := range want {
			if got := tab.get(id); got != e {
				t.Fatalf("seed %d: get(%d) = %p, want %p", seed, id, got, e)
			}
		}
	}
	// An id kept in the map (below the span when set) stays found once
	// the span has moved below it and grown past it.
	var tab sockTable
	var e, e2 end
	tab.set(100, &e)
	tab.set(50, &e2) // below the span: the map
	tab.set(100, nil)
	tab.set(40, &e) // the span was empty: it starts at 40
	tab.set(60, &e) // and now covers 50, as a gap
	if got := tab.get(50); got != &e2 {
		t.Errorf("get(50) = %p, want %p (kept in the map)", got, &e2)
	}
	// Sockets opened and retired in order: the slice stays short.
	tab = sockTable{}
	for id := uint64(1); id <= 1e6; id++ {
		tab.set(id, &e)
		if id > 100 {
			tab.set(id-100, nil)
		}
	}
	if cap(tab.dense) > 1024 {
		t.Errorf("100 sockets in use of 1e6 opened: slice of %d (len %d), want ≤ 1024", cap(tab.dense), len(tab.dense))
	}
}
