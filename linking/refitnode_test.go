package linking

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"wap5/trace"
)

// TestRefitNodeByNode checks refit (each node's classes fitted from its own
// links' and its sweep's delays, in small arrays) against the refit it
// replaced, rebuilt here with maps: every class's delays and the certain
// ones grouped by class over the whole trace, then pooled and fitted. Every
// class's density, transition probability and fit flag, and every fan-out
// model, must be the same to the bit, from the unambiguous links (the first
// refit) and from all (the later ones), on traces with concurrency, loss
// and untraced nodes.
func TestRefitNodeByNode(t *testing.T) {
	cases := refitCases
	defer func() { afterJoint = nil }()
	for _, tc := range cases {
		for _, useCertain := range []bool{true, false} {
			checked := 0
			afterJoint = func(j *joint) {
				// 1. A sweep pass from the final models, then its
				// refit both ways from the same state.
				j.pass(j.reverseEdges(), false, false)
				saved := j.saveState()
				cls, val := append([]int32(nil), j.certain.cls...), append([]float32(nil), j.certain.val...)
				j.refit(useCertain, false)
				got := j.saveState()
				j.restoreState(saved)
				j.certain.cls, j.certain.val = cls, val
				refitReference(j, useCertain)
				want := j.saveState()
				// 2. The same classes and models.
				if len(got.classes) != len(want.classes) {
					t.Fatalf("%s (certain %v): %d classes, want %d", tc.name, useCertain, len(got.classes), len(want.classes))
				}
				for k := range want.classes {
					g, w := &got.classes[k], &want.classes[k]
					if g.d != w.d || g.fit != w.fit || math.Float64bits(g.logTrans) != math.Float64bits(w.logTrans) {
						t.Errorf("%s (certain %v): class %d: %+v fit %v trans %v, want %+v fit %v trans %v",
							tc.name, useCertain, k, g.d, g.fit, g.logTrans, w.d, w.fit, w.logTrans)
					}
					if w.fit {
						checked++
					}
				}
				for f, w := range want.fan {
					if g := got.fan[f]; g != w {
						t.Errorf("%s (certain %v): fan model %v, want %v", tc.name, useCertain, g, w)
					}
				}
			}
			if _, err := Link(simulate(tc.cfg), Options{Window: 200 * time.Millisecond, Top: 0}); err != nil {
				t.Fatal(err)
			}
			if checked == 0 {
				t.Errorf("%s (certain %v): no class fitted", tc.name, useCertain)
			}
		}
	}
}

// refitReference is refit (not last) as it was until 2026-11-27: the
// delays of the chosen links looked up node by node, then every class's
// delays and certain delays grouped over the trace.
func refitReference(j *joint, useCertain bool) {
	for i := range j.kids {
		j.kids[i] = 0
	}
	for _, p := range j.parent {
		if p >= 0 {
			j.kids[p] = min(j.kids[p]+1, 255)
		}
	}
	samples, certain := map[int32][]float32{}, map[int32][]float32{}
	for b := range j.t.Nodes {
		for _, i := range j.outsOf(trace.NodeID(b)) {
			p := j.parent[i]
			if p < 0 {
				continue
			}
			if m, q := &j.hot[i], &j.hot[p]; q.recv != trace.Unknown && j.edgeDst[q.edge] == j.edgeSrc[m.edge] {
				c := j.classOf(p, i)
				samples[c.idx] = append(samples[c.idx], float32(float64(m.send-q.recv)/1e9))
				j.touch(c)
			}
		}
	}
	j.refitCounts()
	for k, ci := range j.certain.cls {
		certain[ci] = append(certain[ci], j.certain.val[k])
	}
	pool := map[int32][]float32{}
	for _, c := range j.active {
		pool[c.pool] = append(pool[c.pool], certain[c.idx]...)
	}
	certainN, allN, kinds := map[int32]float64{}, map[int32]float64{}, map[int32]float64{}
	for _, c := range j.active {
		pc := pool[c.pool]
		s, ce := samples[c.idx], certain[c.idx]
		switch {
		case !useCertain && len(s) >= 30:
			c.d, c.fit = robustFit(s, j.o.DelayModel), true
		case len(ce) >= 30:
			c.d, c.fit = robustFit(ce, j.o.DelayModel), true
		case c.peak != 0:
			c.d, c.fit = j.mod.peaks[c.peak-1], true
		case len(pc) >= 30:
			c.d, c.fit = robustFit(append([]float32(nil), pc...), j.o.DelayModel), true
		case len(s) >= 3 && !(c.fit && j.carried != nil):
			c.d, c.fit = robustFit(s, j.o.DelayModel), true
		}
		certainN[c.trig] += float64(len(ce))
		allN[c.trig] += float64(len(s))
		kinds[c.trig]++
	}
	for _, c := range j.active {
		n, tot := float64(len(certain[c.idx])), certainN[c.trig]
		if tot < 30 || !useCertain {
			n, tot = float64(len(samples[c.idx])), allN[c.trig]
		}
		if tot > 0 && !(j.carried != nil && tot < 30) {
			c.logTrans = math.Log((n + 0.5) / (tot + 0.5*kinds[c.trig]))
		}
	}
	j.certain.reset()
	j.candN = nil
	for i := range j.mod.fan.len() {
		_, f := j.mod.fan.at(i)
		f.hist = [4]float64{}
	}
	for i := range j.hot {
		if j.hot[i].recv == trace.Unknown {
			continue
		}
		j.fanOf(int32(i)).hist[min(int(j.kids[i]), 3)]++
	}
	for i := range j.mod.fan.len() {
		_, f := j.mod.fan.at(i)
		f.fitCosts()
	}
}

// TestSortDelays: sortDelays gives slices.Sort's array, bit for bit, by
// radix and by its fallbacks.
func TestSortDelays(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name string
		n    int
		gen  func() float32
	}{
		{"few", 100, func() float32 { return rng.Float32() }},
		{"uniform", 5000, func() float32 { return rng.Float32() }},
		{"ties and zeros", 3000, func() float32 { return float32(rng.IntN(7)) / 1000 }},
		{"wide", 20000, func() float32 { return float32(rng.ExpFloat64() * math.Pow(10, float64(rng.IntN(12)-9))) }},
		{"one value", 1000, func() float32 { return 0.25 }},
		{"a negative (fallback)", 1000, func() float32 {
			if rng.IntN(500) == 0 {
				return -rng.Float32()
			}
			return rng.Float32()
		}},
	}
	var tmp []uint32
	for _, c := range cases {
		xs := make([]float32, c.n)
		for i := range xs {
			xs[i] = c.gen()
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		sortDelays(xs, &tmp)
		for i := range xs {
			if math.Float32bits(xs[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: at %d: %v, want %v", c.name, i, xs[i], want[i])
			}
		}
	}
}

// refitCases are the traces the refit tests compare on: concurrency, loss
// and an untraced node.
var refitCases = []struct {
	name string
	cfg  simConfig
}{
	{"multitier", simConfig{clients: 8, perClient: 150, think: gauss{ms(30), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(8, false), seed: 3, clientName: "CLIENT"}},
	{"children-d/cc with loss", simConfig{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: pathological("children-d/cc"), seed: 8, loss: 0.02, clientName: "CLIENT"}},
	{"cdn with an untraced origin", simConfig{clients: 5, perClient: 120, think: gauss{ms(40), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: cdn(), seed: 4, untraced: []string{"ORIGIN"}, clientName: "CLIENT"}},
}
