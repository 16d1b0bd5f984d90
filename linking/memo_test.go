package linking

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestRepairMemosExact: the repair's memos (termMemo, costMemo) and the
// second assignment round's blocks taken as the first's by their stamps
// (roundRec.stamp; off with noMemos) change nothing: every value the memos
// return is what they would compute (memoCheck; which also checks every
// call's admissible spans, found once per node, against all spans, that a
// call the moves pass over fits no other span, and the assignment's slots
// against the count models' bound, slotBounds), and every message's parent and probability after the last pass, the fit,
// the instances and patterns are those of the same run without them, on
// traces with concurrency, repeated and parallel calls, loss and untraced
// nodes.
func TestRepairMemosExact(t *testing.T) {
	type run struct {
		parent []int32
		prob   []float32
		res    *Result
	}
	cases := []simConfig{
		{clients: 8, perClient: 150, think: gauss{ms(30), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: multiTier(8, false), seed: 3, clientName: "CLIENT"},
		{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: pathological("penalty-breaker"), seed: 5, clientName: "CLIENT"},
		{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: pathological("children-parallel"), seed: 6, clientName: "CLIENT"},
		{clients: 6, perClient: 150, think: gauss{ms(20), ms(5)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: pathological("children-d/cc"), seed: 8, loss: 0.02, clientName: "CLIENT"},
		{clients: 5, perClient: 120, think: gauss{ms(40), ms(10)}, net: gauss{ms(0.3), ms(0.05)},
			tracelets: cdn(), seed: 4, untraced: []string{"ORIGIN"}, clientName: "CLIENT"},
	}
	defer func() { afterJoint, noMemos, memoCheck = nil, false, false }()
	stampReused = 0
	for ci, c := range cases {
		tr := simulate(c)
		var runs [2]run
		for v, off := range []bool{false, true} {
			noMemos = off
			afterJoint = func(j *joint) {
				runs[v].parent, runs[v].prob = slices.Clone(j.parent), slices.Clone(j.prob)
			}
			res, err := Link(tr, Options{Window: 200 * time.Millisecond, Top: 0})
			if err != nil {
				t.Fatal(err)
			}
			runs[v].res = res
		}
		noMemos = false
		name := fmt.Sprintf("case %d (%d messages)", ci, len(tr.Messages))
		// Every value the memos return, against its recomputation.
		memoCheck, memoChecked = true, 0
		func() {
			defer func() { memoCheck = false }()
			if _, err := Link(tr, Options{Window: 200 * time.Millisecond, Top: 0}); err != nil {
				t.Fatal(err)
			}
		}()
		if memoChecked == 0 {
			t.Errorf("%s: no memoised value was read", name)
		}
		if runs[0].parent == nil || !slices.Equal(runs[0].parent, runs[1].parent) {
			t.Errorf("%s: parents differ with the memos", name)
		}
		if !slices.Equal(runs[0].prob, runs[1].prob) {
			t.Errorf("%s: probabilities differ with the memos", name)
		}
		if !reflect.DeepEqual(runs[0].res.Fit, runs[1].res.Fit) || !reflect.DeepEqual(runs[0].res.Instances, runs[1].res.Instances) ||
			!reflect.DeepEqual(runs[0].res.Patterns, runs[1].res.Patterns) {
			t.Errorf("%s: fit, instances or patterns differ with the memos", name)
		}
	}
	if stampReused == 0 {
		t.Errorf("no second-round block was taken by its stamps")
	}
}
