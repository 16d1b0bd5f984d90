package linking

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"wap5/trace"
)

// TestOnPattern: patterns handed over one at a time (Options.OnPattern) are
// the patterns Link returns otherwise, in rank order, with the same
// warnings, fit and instances; BeforePatterns comes first and sees the
// warnings; an error from OnPattern ends Link with it.
func TestOnPattern(t *testing.T) {
	tr := simulate(simConfig{clients: 5, perClient: 120, think: gauss{ms(100), ms(30)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(5, false), seed: 9, clientName: "CLIENT"})
	for _, method := range []string{MethodJoint, MethodWAP5} {
		for _, top := range []int{0, 3} {
			o := Options{Method: method, Window: 200 * time.Millisecond, Top: top, HistTop: 2}
			all, err := Link(tr, o)
			if err != nil {
				t.Fatal(err)
			}
			var got []*trace.Pattern
			var before *Result
			o.BeforePatterns = func(r *Result) {
				if got != nil || before != nil {
					t.Errorf("%s top %d: BeforePatterns after a pattern or twice", method, top)
				}
				before = &Result{Paths: trace.Paths{Warnings: r.Warnings}, Fit: r.Fit, Iterations: r.Iterations}
			}
			o.OnPattern = func(p *trace.Pattern) error {
				got = append(got, p)
				return nil
			}
			one, err := Link(tr, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(all.Patterns) < 3 {
				t.Fatalf("%s top %d: %d patterns, want several", method, top, len(all.Patterns))
			}
			if len(one.Patterns) != 0 {
				t.Errorf("%s top %d: %d patterns kept", method, top, len(one.Patterns))
			}
			if !reflect.DeepEqual(got, all.Patterns) {
				t.Errorf("%s top %d: the patterns handed over differ from those returned", method, top)
			}
			if before == nil || !reflect.DeepEqual(before.Warnings, all.Warnings) || !reflect.DeepEqual(one.Warnings, all.Warnings) {
				t.Errorf("%s top %d: warnings %v / %v, want %v", method, top, before, one.Warnings, all.Warnings)
			}
			// Both methods sum their fits in a fixed order: equal to the bit.
			if !reflect.DeepEqual(before.Fit, all.Fit) {
				t.Errorf("%s top %d: fit %+v, want %+v", method, top, before.Fit, all.Fit)
			}
			if !reflect.DeepEqual(one.Instances, all.Instances) {
				t.Errorf("%s top %d: instances differ", method, top)
			}
			checkStops(t, fmt.Sprintf("%s top %d", method, top), tr, o)
		}
	}
}

// TestStreamOnPattern: with Stream, Close hands over the patterns it would
// have returned (the top Top of them, without Top's warning), the counts
// only from Shown on unless instances need their step order, calls
// BeforePatterns once first, and stops at OnPattern's error (Stream.Err).
func TestStreamOnPattern(t *testing.T) {
	tr := simulate(simConfig{clients: 5, perClient: 120, think: gauss{ms(100), ms(30)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(5, false), seed: 9, clientName: "CLIENT"})
	for _, method := range []string{MethodJoint, MethodWAP5} {
		for _, c := range []struct {
			top, shown int
			inst       bool
		}{{0, 0, false}, {3, 0, false}, {0, 2, false}, {4, 2, false}, {0, 2, true}} {
			name := fmt.Sprintf("%s top %d shown %d instances %v", method, c.top, c.shown, c.inst)
			o := Options{Method: method, Window: 200 * time.Millisecond, Stream: 5 * time.Second}
			var inst []StreamInstance
			if c.inst {
				o.OnInstance = func(in StreamInstance) { inst = append(inst, in) }
			}
			all, err := Link(tr, o)
			if err != nil {
				t.Fatal(err)
			}
			nAll := len(inst)
			want := all.Patterns
			if len(want) < 5 {
				t.Fatalf("%s: %d patterns, want several", name, len(want))
			}
			if c.top > 0 {
				want = want[:c.top]
			}
			o.Top, o.Shown = c.top, c.shown
			var got []*trace.Pattern
			var before *Result
			o.BeforePatterns = func(r *Result) {
				if got != nil || before != nil {
					t.Errorf("%s: BeforePatterns after a pattern or twice", name)
				}
				before = &Result{Paths: trace.Paths{Warnings: r.Warnings}, Fit: r.Fit, Iterations: r.Iterations}
			}
			o.OnPattern = func(p *trace.Pattern) error {
				got = append(got, p)
				return nil
			}
			inst = nil
			one, err := Link(tr, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(one.Patterns) != 0 || len(got) != len(want) {
				t.Fatalf("%s: %d patterns kept, %d handed over; want 0, %d", name, len(one.Patterns), len(got), len(want))
			}
			for r, p := range got {
				w := want[r]
				if c.shown > 0 && r >= c.shown && !c.inst {
					w = &trace.Pattern{Rank: w.Rank, Count: w.Count, Expected: w.Expected, MaxProb: w.MaxProb}
				}
				if !reflect.DeepEqual(p, w) {
					t.Errorf("%s: pattern %d differs from the one returned", name, r+1)
				}
			}
			if before == nil || !reflect.DeepEqual(before.Warnings, all.Warnings) || !reflect.DeepEqual(one.Warnings, all.Warnings) || !reflect.DeepEqual(before.Fit, all.Fit) {
				t.Errorf("%s: warnings or fit handed over differ", name)
			}
			if c.inst && (len(inst) != nAll || !reflect.DeepEqual(one.StreamPatterns, all.StreamPatterns)) {
				t.Errorf("%s: %d instances, stream patterns equal %v; want %d, true", name, len(inst), reflect.DeepEqual(one.StreamPatterns, all.StreamPatterns), nAll)
			}
			checkStops(t, name, tr, o)
		}
	}
}

// checkStops: an error OnPattern returns for the second pattern stops the
// hand-over there, and Link returns it.
func checkStops(t *testing.T, name string, tr *trace.Trace, o Options) {
	t.Helper()
	o.BeforePatterns = nil
	stop := errors.New("stop")
	n := 0
	o.OnPattern = func(p *trace.Pattern) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	}
	if _, err := Link(tr, o); err != stop || n != 2 {
		t.Errorf("%s: err %v after %d patterns, want stop after 2", name, err, n)
	}
}
