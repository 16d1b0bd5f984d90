package linking

import (
	"slices"
	"testing"
	"time"
)

// TestSettle: J5c ends a whole trace's run after the first repair pass when
// that pass changed fewer than Options.Settle of the links (serial clients:
// nothing is ambiguous, the repair changes nothing), and never where the
// repair still moves many (requests in flight); Settle < 0 always runs the
// second repair pass. Where it stops, the paths are the second pass's.
func TestSettle(t *testing.T) {
	cases := []struct {
		clients int
		think   float64 // ms
		settles bool
	}{
		{1, 500, true},
		{10, 5, false},
	}
	for _, c := range cases {
		tr := simulate(simConfig{clients: c.clients, perClient: 150, think: gauss{ms(c.think), ms(c.think / 3)},
			net: gauss{ms(0.3), ms(0.05)}, tracelets: multiTier(c.clients, false), seed: 1, clientName: "CLIENT"})
		run := func(settle float64) *Result {
			res, err := Link(tr, Options{Window: 100 * time.Millisecond, Settle: settle})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		def, never := run(0), run(-1)
		want := 4
		if c.settles {
			want = 3
		}
		if def.Iterations != want || never.Iterations != 4 {
			t.Errorf("clients=%d: %d passes by default (want %d), %d with Settle −1 (want 4)", c.clients,
				def.Iterations, want, never.Iterations)
		}
		if c.settles && (!def.Fit.Settled || def.Fit.Change >= 1e-3) {
			t.Errorf("clients=%d: settled %v at change %g", c.clients, def.Fit.Settled, def.Fit.Change)
		}
		// The same instances (message sets and probabilities) and the
		// same patterns either way.
		if len(def.Instances) != len(never.Instances) {
			t.Fatalf("clients=%d: %d instances against %d", c.clients, len(def.Instances), len(never.Instances))
		}
		for i := range def.Instances {
			a, b := def.Instances[i], never.Instances[i]
			if !slices.Equal(a.Messages, b.Messages) || a.Prob != b.Prob || a.Pattern != b.Pattern {
				t.Fatalf("clients=%d: instance %d differs: %+v against %+v", c.clients, i, a, b)
			}
		}
		if len(def.Patterns) != len(never.Patterns) {
			t.Fatalf("clients=%d: %d patterns against %d", c.clients, len(def.Patterns), len(never.Patterns))
		}
		for i := range def.Patterns {
			a, b := def.Patterns[i], never.Patterns[i]
			if a.Count != b.Count || a.Expected != b.Expected || shape(a.Root) != shape(b.Root) {
				t.Errorf("clients=%d: pattern %d differs: %d/%g %s against %d/%g %s", c.clients, i,
					a.Count, a.Expected, shape(a.Root), b.Count, b.Expected, shape(b.Root))
			}
		}
	}
}
