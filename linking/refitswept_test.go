package linking

import (
	"math"
	"testing"
	"time"
)

// TestRefitSwept checks a pass with fuse set (each node's classes refitted
// right after its sweep, refitSwept, from the links the sweep recorded)
// against the same pass without it (refit's step 2 over every node after
// the pass), then refit(true, false) both: the same links and children
// (refit counts them again only after a repair), classes (none
// made in addition), densities, transition probabilities, fit flags,
// active classes and fan-out and count models, to the bit; in a first pass
// (candidate delays and peaks) and in a later one.
func TestRefitSwept(t *testing.T) {
	cases := refitCases
	defer func() { afterJoint = nil }()
	for _, tc := range cases {
		for _, first := range []bool{false, true} {
			checked := 0
			afterJoint = func(j *joint) {
				// 1. The pass and its refit from the final state, fused
				// and not.
				saved := j.saveState()
				run := func(fuse bool) *jointState {
					j.restoreState(saved)
					j.first, j.fuse = first, fuse
					j.pass(j.reverseEdges(), false, false)
					j.refit(true, false)
					j.first = false
					if j.fuse {
						t.Fatalf("%s: fuse still set after refit", tc.name)
					}
					return j.saveState()
				}
				want := run(false)
				got := run(true)
				j.restoreState(saved)
				// 2. The same links and models.
				for i := range want.parent {
					if got.parent[i] != want.parent[i] || math.Float32bits(got.prob[i]) != math.Float32bits(want.prob[i]) || got.kids[i] != want.kids[i] {
						t.Fatalf("%s (first %v): message %d: parent %d prob %v children %d, want %d %v %d", tc.name, first, i,
							got.parent[i], got.prob[i], got.kids[i], want.parent[i], want.prob[i], want.kids[i])
					}
				}
				if len(got.classes) != len(want.classes) {
					t.Fatalf("%s (first %v): %d classes, want %d", tc.name, first, len(got.classes), len(want.classes))
				}
				for k := range want.classes {
					g, w := &got.classes[k], &want.classes[k]
					if g.d != w.d || g.fit != w.fit || g.active != w.active || math.Float64bits(g.logTrans) != math.Float64bits(w.logTrans) {
						t.Errorf("%s (first %v): class %d: %+v fit %v active %v trans %v, want %+v fit %v active %v trans %v",
							tc.name, first, k, g.d, g.fit, g.active, g.logTrans, w.d, w.fit, w.active, w.logTrans)
					}
					if w.fit {
						checked++
					}
				}
				if len(got.active) != len(want.active) {
					t.Errorf("%s (first %v): %d active classes, want %d", tc.name, first, len(got.active), len(want.active))
				}
				for f, w := range want.fan {
					if g := got.fan[f]; g != w {
						t.Errorf("%s (first %v): fan model %v, want %v", tc.name, first, g, w)
					}
				}
				for c, w := range want.count {
					if g := got.count[c]; g != w {
						t.Errorf("%s (first %v): count model %+v, want %+v", tc.name, first, g, w)
					}
				}
			}
			if _, err := Link(simulate(tc.cfg), Options{Window: 200 * time.Millisecond, Top: 0}); err != nil {
				t.Fatal(err)
			}
			if checked == 0 {
				t.Errorf("%s (first %v): no class fitted", tc.name, first)
			}
		}
	}
}
