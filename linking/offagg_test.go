package linking

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"wap5/internal/hugemem"
	"wap5/trace"
)

// TestKeptAggregation: where the process keeps the memory given back
// (hugemem.Keeping, as wap5 link does), J6's instances (wap5 link --json:
// Lean, DropMessages, NoInstances) and the aggregation's arrays live
// outside the heap, in memory other arrays gave back: the result is the
// one from the heap, pattern by pattern as OnPattern hands them over,
// with every array of the aggregation outside the heap (aggMemFrom 1).
func TestKeptAggregation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  simConfig
	}{
		{"multitier", simConfig{clients: 6, perClient: 120, think: gauss{ms(30), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: multiTier(6, false), seed: 3, clientName: "CLIENT"}},
		{"children-d/cc loss", simConfig{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: pathological("children-d/cc"), seed: 8, loss: 0.02, clientName: "CLIENT"}},
		{"cdn untraced", simConfig{clients: 5, perClient: 120, think: gauss{ms(40), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: cdn(), seed: 4, untraced: []string{"ORIGIN"}, clientName: "CLIENT"}},
	} {
		for _, method := range []string{MethodJoint, MethodWAP5} {
			// The patterns as handed over (new ones each: not
			// ReusePatterns, which only reuses the built ones).
			link := func(keep bool) ([]*trace.Pattern, *Result) {
				if keep {
					hugemem.KeepUpTo(math.MaxInt, math.MaxInt, true)
					defer hugemem.Keep(false)
					from := aggMemFrom
					aggMemFrom = 1
					defer func() { aggMemFrom = from }()
				}
				var got []*trace.Pattern
				o := Options{Method: method, Top: 0, NoInstances: true, Lean: true, DropMessages: true,
					OnPattern: func(p *trace.Pattern) error {
						got = append(got, p)
						return nil
					}}
				res, err := Link(simulate(tc.cfg), o)
				if err != nil {
					t.Fatal(err)
				}
				return got, res
			}
			want, wres := link(false)
			got, gres := link(true)
			if len(want) == 0 {
				t.Fatalf("%s %s: no patterns", tc.name, method)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: kept memory changed the patterns (%d, want %d)", tc.name, method, len(got), len(want))
			}
			if !reflect.DeepEqual(gres, wres) {
				t.Errorf("%s %s: kept memory changed the result", tc.name, method)
			}
		}
	}
}

// TestInstancesOffHeap: J6's instances outside the heap are the ones in it.
func TestInstancesOffHeap(t *testing.T) {
	tr := simulate(simConfig{clients: 6, perClient: 120, think: gauss{ms(30), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(6, false), seed: 3, clientName: "CLIENT"})
	defer func() { afterJoint = nil }()
	var heap, off *instances
	afterJoint = func(j *joint) {
		heap = j.instances(nil)
		mem := &offHeap{from: 1}
		off = j.instances(mem)
		// (Copied before mem gives the arrays back.)
		off = &instances{start: slices.Clone(off.start), msgs: slices.Clone(off.msgs), par: slices.Clone(off.par), prob: slices.Clone(off.prob)}
		if len(mem.frees) == 0 {
			t.Error("no array outside the heap")
		}
		mem.free()
	}
	if _, err := Link(tr, Options{}); err != nil {
		t.Fatal(err)
	}
	if heap == nil || heap.len() == 0 {
		t.Fatal("no instances")
	}
	if !reflect.DeepEqual(heap, off) {
		t.Error("the instances outside the heap differ")
	}
}
