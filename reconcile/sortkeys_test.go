package reconcile

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortByTime: sortByTime is the stable sort by time, on keys in order
// but for late ones, in reverse, with ties, and in random order.
func TestSortByTime(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, mk := range []func(i int) int64{
		func(i int) int64 { return int64(i) },
		func(i int) int64 { return int64(-i) },
		func(i int) int64 { return int64(i / 7) },
		func(i int) int64 { return r.Int64N(50) },
		func(i int) int64 {
			if r.IntN(4) == 0 {
				return int64(i) - r.Int64N(1000)
			}
			return int64(i)
		},
		func(i int) int64 {
			if i == 0 {
				return 1 << 40 // an early maximum: every other key is late
			}
			return int64(i)
		},
		// Nanosecond times, a third decided a window (30 s) late: the
		// late keys take 3 or 4 radix passes (odd and even counts).
		func(i int) int64 {
			t := int64(i) * 1e5
			if r.IntN(3) == 0 {
				t -= 3e10 + r.Int64N(1e6)
			}
			return t
		},
		func(i int) int64 {
			t := int64(i) * 1e6
			if r.IntN(3) == 0 {
				t -= 3e12 + r.Int64N(1e9)
			}
			return t
		},
		// Spans too wide for the radix passes, and negative times.
		func(i int) int64 {
			if r.IntN(2) == 0 {
				return -r.Int64N(1 << 62)
			}
			return r.Int64N(1 << 62)
		},
	} {
		for _, n := range []int{0, 1, 2, 3, 100, 5000, 40000} {
			keys := make([]sortKey, n)
			for i := range keys {
				keys[i] = sortKey{mk(i), int32(i)}
			}
			want := slices.Clone(keys)
			slices.SortStableFunc(want, func(a, b sortKey) int { return cmp.Compare(a.t, b.t) })
			sortByTime(keys)
			if !slices.Equal(keys, want) {
				t.Fatalf("n=%d: not the stable order", n)
			}
		}
	}
}
