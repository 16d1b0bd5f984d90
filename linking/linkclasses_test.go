package linking

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"wap5/trace"
)

// TestLinkClassesOrder checks linkClasses (links node by node, the classes
// not made yet in message order) against the lookups in message order it
// replaces: the same class index for every link, the same classes made,
// and the same moments of every class's delays (summed in message order:
// compare's fit line reads them to the last digit), when none, some or all
// of the links' classes were made before.
func TestLinkClassesOrder(t *testing.T) {
	multi := simConfig{clients: 8, perClient: 100, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(8, false), seed: 3, clientName: "CLIENT"}
	lossy := simConfig{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: pathological("children-d/cc"), seed: 8, loss: 0.02, clientName: "CLIENT"}
	cdnUntraced := simConfig{clients: 5, perClient: 120, think: gauss{ms(40), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: cdn(), seed: 4, untraced: []string{"ORIGIN"}, clientName: "CLIENT"}
	cases := []struct {
		name  string
		sim   simConfig
		share float64 // of the links' classes made first (their links in a random order)
	}{
		{"multitier, none made", multi, 0},
		{"multitier, a tenth made", multi, 0.1},
		{"multitier, half made", multi, 0.5},
		{"multitier, all made", multi, 1},
		{"children-d/cc with loss, a third made", lossy, 0.3},
		{"cdn with an untraced origin, a fifth made", cdnUntraced, 0.2},
	}
	defer func() { afterJoint = nil }()
	for _, c := range cases {
		var got, want []int32
		var gotM, wantM []moments
		var gotN, wantN, links, pending int
		afterJoint = func(j *joint) {
			// 1. The links, and the share of them whose classes are made
			// before linkClasses runs.
			// (Chosen by class: each class's links all or none.)
			type key struct {
				src trace.NodeID
				fk  uint64
			}
			chosen := map[key]bool{}
			var pre []int32
			rng := rand.New(rand.NewPCG(7, uint64(c.share*1000)))
			for i, p := range j.parent {
				if p < 0 {
					continue
				}
				links++
				src, fk, _, _ := j.classTableKey(p, int32(i))
				k := key{src, fk}
				in, ok := chosen[k]
				if !ok {
					in = rng.Float64() < c.share
					chosen[k] = in
				}
				if in {
					pre = append(pre, int32(i))
				}
			}
			rng.Shuffle(len(pre), func(a, b int) { pre[a], pre[b] = pre[b], pre[a] })
			for v := range 2 {
				// 2. Fresh class tables, the same classes made first.
				j.initCaches()
				for _, i := range pre {
					j.classOf(j.parent[i], i)
				}
				made := len(j.classes)
				if v == 0 {
					j.linkClasses()
					gotN, gotM = len(j.classes), nil
					for m := range j.classMoments {
						gotM = append(gotM, *m)
					}
					pending = gotN - made
					// The class each link has now (made already:
					// found, nothing made).
					got = make([]int32, len(j.parent))
					for i, p := range j.parent {
						got[i] = -1
						if p < 0 {
							continue
						}
						if m, q := &j.hot[i], &j.hot[p]; m.send != trace.Unknown && q.recv != trace.Unknown && j.edgeDst[q.edge] == j.edgeSrc[m.edge] {
							if c := j.findClassOf(p, int32(i)); c != nil {
								got[i] = c.idx
							} else {
								got[i] = -2
							}
						}
					}
					continue
				}
				// 3. The lookups in message order, and the moments
				// summed in message order, by class.
				want = make([]int32, len(j.parent))
				var moms []moments
				for i, p := range j.parent {
					want[i] = -1
					if p < 0 {
						continue
					}
					if m, q := &j.hot[i], &j.hot[p]; m.send != trace.Unknown && q.recv != trace.Unknown && j.edgeDst[q.edge] == j.edgeSrc[m.edge] {
						c := j.classOf(p, int32(i)).idx
						want[i] = c
						if int(c) >= len(moms) {
							moms = append(moms, make([]moments, int(c)+1-len(moms))...)
						}
						moms[c].add(float64(m.send-q.recv) / 1e9)
					}
				}
				wantN = len(j.classes)
				wantM = nil
				for c := range moms {
					if moms[c].n >= 2 {
						wantM = append(wantM, moms[c])
					}
				}
			}
		}
		tr := simulate(c.sim)
		if _, err := Link(tr, Options{Window: 200 * time.Millisecond, Top: 0}); err != nil {
			t.Fatal(err)
		}
		if links == 0 || want == nil {
			t.Fatalf("%s: no links", c.name)
		}
		if c.share < 1 && pending == 0 {
			t.Errorf("%s: no class made by linkClasses", c.name)
		}
		if gotN != wantN {
			t.Errorf("%s: %d classes, want %d", c.name, gotN, wantN)
		}
		if len(wantM) == 0 {
			t.Errorf("%s: no class with two delays", c.name)
		}
		if !slices.Equal(gotM, wantM) {
			n := 0
			for k := range min(len(gotM), len(wantM)) {
				if gotM[k] != wantM[k] {
					n++
				}
			}
			t.Errorf("%s: moments of %d classes, want %d; %d of the first differ", c.name, len(gotM), len(wantM), n)
		}
		if !slices.Equal(got, want) {
			n := 0
			for i := range got {
				if got[i] != want[i] {
					n++
				}
			}
			t.Errorf("%s: %d of %d links' classes differ from the lookups in message order", c.name, n, len(got))
		}
	}
}
