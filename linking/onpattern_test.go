package linking

import (
	"errors"
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
				t.Errorf("%s top %d: err %v after %d patterns, want stop after 2", method, top, err, n)
			}
		}
	}
}
