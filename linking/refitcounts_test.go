package linking

import (
	"testing"
	"time"

	"wap5/trace"
)

// TestRefitCountsReference: refitCounts' counts per count model (spans of
// its class with 0, 1, 2, 3 or more calls to its destination) are those of a
// plain recomputation from the final assignment (calls by span through maps),
// on traces with repeated and parallel calls, loss and untraced nodes.
func TestRefitCountsReference(t *testing.T) {
	cases := []struct {
		name string
		cfg  simConfig
	}{
		{"multitier", simConfig{clients: 8, perClient: 150, think: gauss{ms(30), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: multiTier(8, false), seed: 3, clientName: "CLIENT"}},
		{"children-parallel", simConfig{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: pathological("children-parallel"), seed: 6, clientName: "CLIENT"}},
		{"children-0/2 with loss", simConfig{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: pathological("children-0/2"), seed: 8, loss: 0.02, clientName: "CLIENT"}},
		{"cdn", simConfig{clients: 5, perClient: 120, think: gauss{ms(40), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: cdn(), seed: 4, untraced: []string{"ORIGIN"}, clientName: "CLIENT"}},
	}
	defer func() { afterJoint = nil }()
	for _, tc := range cases {
		tr := simulate(tc.cfg)
		checked, multi := 0, 0
		afterJoint = func(j *joint) {
			// 1. The reference: every span's count class, and its calls'
			// destinations counted per span.
			type key struct {
				ci  int32
				dst trace.NodeID
			}
			tot := map[int32]float64{}
			perSpan := map[int32]map[trace.NodeID]int{}
			for c := range j.hot {
				hc := &j.hot[c]
				if hc.role != roleRequest || hc.recv == trace.Unknown {
					continue
				}
				if hp := &j.hot[hc.peer]; hp.send == trace.Unknown || j.edgeSrc[hp.edge] != j.edgeDst[hc.edge] {
					continue
				}
				if ci, ok := j.cntCls.get(j.spanClass(int32(c))); ok {
					tot[ci]++
					perSpan[int32(c)] = map[trace.NodeID]int{}
				}
			}
			for k, c := range j.callSpan {
				if c < 0 {
					continue
				}
				hk, hc := &j.hot[k], &j.hot[c]
				if hk.role != roleRequest || hk.send == trace.Unknown || hc.role != roleRequest || j.edgeDst[hc.edge] != j.edgeSrc[hk.edge] {
					continue
				}
				if m := perSpan[c]; m != nil {
					m[j.edgeDst[hk.edge]]++
				}
			}
			want := map[key][4]float64{}
			for c, m := range perSpan {
				ci, _ := j.cntCls.get(j.spanClass(c))
				for d, n := range m {
					w := want[key{ci, d}]
					w[min(n, 3)]++
					want[key{ci, d}] = w
					if n > 1 {
						multi++
					}
				}
			}
			// 2. refitCounts on the same assignment (idempotent), and
			// every model's counts against the reference.
			j.refitCounts()
			for i := range j.mod.count.len() {
				k, cm := j.mod.count.at(i)
				ci, _ := j.cntCls.get(classOfKey(k))
				if tot[ci] == 0 {
					continue
				}
				w := want[key{ci, k.dst}]
				w[0] = tot[ci] - w[1] - w[2] - w[3]
				if cm.seen != w {
					t.Errorf("%s: model %+v: seen %v, reference %v", tc.name, k, cm.seen, w)
				}
				checked++
			}
		}
		if _, err := Link(tr, Options{Window: 200 * time.Millisecond, Top: 0}); err != nil {
			t.Fatal(err)
		}
		if checked == 0 {
			t.Errorf("%s: no count model checked", tc.name)
		}
		t.Logf("%s: %d models checked, %d (span, destination) pairs with two calls or more", tc.name, checked, multi)
	}
}
