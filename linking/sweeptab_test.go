package linking

import (
	"math/rand"
	"testing"
)

// TestRetTable checks retTable and idSet against maps over random puts,
// takes and lookups: keys from small ranges (long probe runs, wrapping at
// the table's end, growth) and large ones, with resets between rounds.
func TestRetTable(t *testing.T) {
	for _, tc := range []struct {
		name        string
		keys, ops   int
		takeShare   float64
		rounds      int
		clusterBits int  // keys k<<clusterBits: many share a home slot's neighbourhood
		wrap        bool // keys whose home slot is among the last 4 of 64 (runs wrap around the end)
	}{
		{"runs wrapping at the end", 30, 6000, 0.5, 3, 0, true},
		{"few keys, mostly takes", 40, 4000, 0.6, 3, 0, false},
		{"many keys, few takes", 5000, 20000, 0.2, 2, 0, false},
		{"clustered keys", 300, 10000, 0.45, 3, 6, false},
		{"large keys", 1 << 30, 5000, 0.5, 2, 0, false},
		{"one key", 1, 100, 0.5, 2, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(tc.keys)))
			key := func() int32 { return int32(rng.Intn(tc.keys) << tc.clusterBits) }
			if tc.wrap {
				// (At most 30 keys: the table stays at 64 slots.)
				var ks []int32
				for k := int32(0); len(ks) < tc.keys; k++ {
					if retSlot(k, 63) >= 60 {
						ks = append(ks, k)
					}
				}
				key = func() int32 { return ks[rng.Intn(len(ks))] }
			}
			var rt retTable
			var set idSet
			for round := 0; round < tc.rounds; round++ {
				rt.reset()
				set.reset()
				want := map[int32]retEnt{}
				wantSet := map[int32]bool{}
				for op := 0; op < tc.ops; op++ {
					k := key()
					if rng.Float64() < tc.takeShare {
						sp, cl, ok := rt.take(k)
						w, wok := want[k]
						if ok != wok || ok && (sp != w.sp || cl != w.close) {
							t.Fatalf("round %d op %d: take(%d) = %d %d %v, want %d %d %v", round, op, k, sp, cl, ok, w.sp, w.close, wok)
						}
						delete(want, k)
					} else {
						e := retEnt{key: k, sp: int32(rng.Intn(1000)) - 2, close: rng.Int63()}
						rt.put(k, e.sp, e.close)
						want[k] = e
						set.add(k)
						wantSet[k] = true
					}
					if rt.n != len(want) {
						t.Fatalf("round %d op %d: %d entries, want %d", round, op, rt.n, len(want))
					}
					q := key()
					if set.has(q) != wantSet[q] {
						t.Fatalf("round %d op %d: has(%d) = %v", round, op, q, !wantSet[q])
					}
				}
				// Every entry left is found once, and nothing else.
				for k, w := range want {
					if sp, cl, ok := rt.take(k); !ok || sp != w.sp || cl != w.close {
						t.Fatalf("round %d: left %d: %d %d %v, want %d %d", round, k, sp, cl, ok, w.sp, w.close)
					}
				}
				if rt.n != 0 {
					t.Fatalf("round %d: %d entries after taking all", round, rt.n)
				}
			}
		})
	}
}
