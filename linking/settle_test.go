package linking

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestSettle: J5c. With serial clients nothing is ambiguous: the first
// repair pass changes nothing, so it is the last (Settle), and where the
// first sweep was sure enough of its choices (SettleSweep; 2 % of them are
// less likely than 0.99 here), the second sweep is skipped. With requests
// in flight neither happens. Negative values turn either off. Where passes
// are skipped, the paths are the same as with every pass.
func TestSettle(t *testing.T) {
	if d := (Options{}).Defaults(); d.Settle != 1e-3 || d.SettleSweep != 0.01 {
		t.Errorf("defaults Settle %g, SettleSweep %g", d.Settle, d.SettleSweep)
	}
	serial := simConfig{clients: 1, perClient: 150, think: gauss{ms(500), ms(150)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(1, false), seed: 1, clientName: "CLIENT"}
	busy := simConfig{clients: 10, perClient: 150, think: gauss{ms(5), ms(5.0 / 3)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(10, false), seed: 1, clientName: "CLIENT"}
	cases := []struct {
		name          string
		sim           simConfig
		settle, sweep float64
		want          int // passes
	}{
		{"serial", serial, 0, 0, 3},
		{"serial", serial, -1, 0.05, 3},
		{"serial", serial, 0, 0.05, 2},
		{"serial", serial, -1, -1, 4},
		{"busy", busy, 0, 0, 4},
		{"busy", busy, 0, 0.05, 4},
	}
	traces := map[string]*Result{}
	for _, c := range cases {
		tr := simulate(c.sim)
		run := func(settle, sweep float64) *Result {
			res, err := Link(tr, Options{Window: 100 * time.Millisecond, Settle: settle, SettleSweep: sweep})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		never := traces[c.name]
		if never == nil {
			never = run(-1, -1)
			traces[c.name] = never
		}
		res := run(c.settle, c.sweep)
		if res.Iterations != c.want || never.Iterations != 4 {
			t.Errorf("%s, Settle %g, SettleSweep %g: %d passes, want %d (%d with both off)", c.name, c.settle, c.sweep,
				res.Iterations, c.want, never.Iterations)
		}
		if c.want < 4 && (!res.Fit.Settled || res.Fit.Change >= 1e-3) {
			t.Errorf("%s: settled %v at change %g", c.name, res.Fit.Settled, res.Fit.Change)
		}
		same(t, c.name, res, never)
	}
}

// same fails the test where two results' instances or patterns differ.
func same(t *testing.T, name string, def, never *Result) {
	t.Helper()
	{
		// The same instances (message sets and probabilities) and the
		// same patterns.
		if len(def.Instances) != len(never.Instances) {
			t.Fatalf("%s: %d instances against %d", name, len(def.Instances), len(never.Instances))
		}
		for i := range def.Instances {
			a, b := def.Instances[i], never.Instances[i]
			if !slices.Equal(a.Messages, b.Messages) || a.Prob != b.Prob || a.Pattern != b.Pattern {
				t.Fatalf("%s: instance %d differs: %+v against %+v", name, i, a, b)
			}
		}
		if len(def.Patterns) != len(never.Patterns) {
			t.Fatalf("%s: %d patterns against %d", name, len(def.Patterns), len(never.Patterns))
		}
		for i := range def.Patterns {
			a, b := def.Patterns[i], never.Patterns[i]
			if a.Count != b.Count || a.Expected != b.Expected || shape(a.Root) != shape(b.Root) {
				t.Errorf("%s: pattern %d differs: %d/%g %s against %d/%g %s", name, i,
					a.Count, a.Expected, shape(a.Root), b.Count, b.Expected, shape(b.Root))
			}
		}
	}
}

// TestSettleDoubt: where J5b doubts a count model, a settled repair pass is
// not the last: the pass is refitted in full and the structure test runs as
// without J5c (children-0/2 with Settle 1, which settles any pass: the same
// passes, paths and fit as with Settle −1).
func TestSettleDoubt(t *testing.T) {
	tr := genScenario(t, "children-0-2", 30)
	saved := keepAlternative
	defer func() { keepAlternative = saved }()
	ran := 0
	keepAlternative = func(cost, alt float64) bool {
		ran++
		return saved(cost, alt)
	}
	run := func(settle float64) *Result {
		res, err := Link(tr, Options{AggregateClients: true, Settle: settle, SettleSweep: -1})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	always, never := run(1), run(-1)
	if ran != 2 {
		t.Fatalf("the structure test ran %d times, want 2", ran)
	}
	if always.Iterations != never.Iterations || !reflect.DeepEqual(always.Fit, never.Fit) {
		t.Errorf("%d passes, fit %+v; without J5c %d, %+v", always.Iterations, always.Fit, never.Iterations, never.Fit)
	}
	same(t, "children-0/2", always, never)
}
