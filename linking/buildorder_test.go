package linking

import (
	"slices"
	"testing"

	"wap5/trace"
)

// TestBuildChildOrder: buildPattern sorts a step's children by their mean
// send offset from the parent (stably; a child without offset samples
// counts as 0) and returns the depth-first permutation, with and without
// reuse.
func TestBuildChildOrder(t *testing.T) {
	const none = 1e300 // no offset sample
	cases := []struct {
		name string
		par  []int32
		off  []float64 // samples per position (none: left out)
		to   []string  // each child's receiver, in final order
		perm []int32   // nil: unchanged
	}{
		{"sorted", []int32{-1, 0, 0, 0}, []float64{0, 1, 2, 3}, []string{"n1", "n2", "n3"}, nil},
		{"reversed", []int32{-1, 0, 0, 0}, []float64{0, 3, 2, 1}, []string{"n3", "n2", "n1"}, []int32{0, 3, 2, 1}},
		{"no samples is 0", []int32{-1, 0, 0, 0}, []float64{0, 0.5, none, -0.5}, []string{"n3", "n2", "n1"}, []int32{0, 3, 2, 1}},
		{"ties stay", []int32{-1, 0, 0, 0}, []float64{0, 2, 1, 1}, []string{"n2", "n3", "n1"}, []int32{0, 2, 3, 1}},
		{"subtree moves", []int32{-1, 0, 1, 0}, []float64{0, 5, 1, 1}, []string{"n3", "n1"}, []int32{0, 3, 1, 2}},
	}
	for _, reuse := range []bool{false, true} {
		for _, c := range cases {
			a := newAggregator(0)
			n := len(c.par)
			p := &pattern{par: c.par, count: 1, expected: 1, maxProb: 1,
				from: make([]int32, n), to: make([]int32, n), kind: make([]trace.Kind, n), closer: make([]int32, n)}
			for j := range c.par {
				p.from[j] = a.label("n0")
				p.to[j] = a.label("n" + string(rune('0'+j)))
				p.closer[j] = -1
			}
			p.acc = newPatAcc(n, false)
			for j, x := range c.off {
				if x != none {
					p.acc.off[j].Add(x, 1)
				}
			}
			tp, perm := a.buildPattern(p, reuse)
			var to []string
			for _, s := range tp.Root.Children {
				to = append(to, s.To)
			}
			if !slices.Equal(to, c.to) || !slices.Equal(perm, c.perm) {
				t.Errorf("%s (reuse %v): children %v perm %v, want %v %v", c.name, reuse, to, perm, c.to, c.perm)
			}
		}
	}
}
