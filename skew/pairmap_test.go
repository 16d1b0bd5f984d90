package skew

import (
	"math/rand"
	"testing"

	"wap5/trace"
)

// TestPairIndexSparse: the sparse pair index (pairMap) gives every pair
// a < b the index it was given first, new pairs the next index, as a Go
// map does, through the table's doublings.
func TestPairIndexSparse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int32 // pairs among these nodes
		looks int   // lookups
	}{
		{"none", 2, 0},
		{"one pair", 2, 10},
		{"below a doubling", 9, 40},
		{"many doublings", 3000, 200000},
	} {
		acc := NewAccumulator(0)
		want := map[uint64]int32{}
		r := rand.New(rand.NewSource(int64(tc.nodes)))
		for range tc.looks {
			a, b := trace.NodeID(r.Int31n(tc.nodes)), trace.NodeID(r.Int31n(tc.nodes))
			if a == b {
				continue
			}
			if b < a {
				a, b = b, a
			}
			k := uint64(a)<<32 | uint64(uint32(b))
			w, ok := want[k]
			if !ok {
				w = int32(len(want))
				want[k] = w
			}
			if got := acc.pairIndex(a, b, 0); got != w {
				t.Fatalf("%s: pair %d-%d has index %d, want %d", tc.name, a, b, got, w)
			}
			if s := acc.pairs[w]; s.a != a || s.b != b {
				t.Fatalf("%s: pair %d is %d-%d, want %d-%d", tc.name, w, s.a, s.b, a, b)
			}
		}
		if len(acc.pairs) != len(want) || acc.sparse.n != len(want) {
			t.Errorf("%s: %d pairs (%d in the table), want %d", tc.name, len(acc.pairs), acc.sparse.n, len(want))
		}
	}
}
