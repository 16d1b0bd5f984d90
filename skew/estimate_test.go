package skew

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"wap5/trace"
)

func mesh(names []string, ab, ba, jitter float64, rt int) []link {
	var ls []link
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			ls = append(ls, link{a: names[i], b: names[j], ab: ab, ba: ba, jitter: jitter, roundTrips: rt})
		}
	}
	return ls
}

func TestEstimate(t *testing.T) {
	type check struct {
		node string
		max  float64 // s, worst error over the run
	}
	tests := []struct {
		name string
		sc   scenario
		opts Options
		ref  string
		want []check
		// asymmetric nodes: the reported Error must cover the true error
		honest  []string
		steps   int
		warning string
	}{
		{
			name: "two nodes, 3 min offset, symmetric 20 ms",
			sc: scenario{nodes: map[string]clock{"a": {}, "b": {offset: 180}},
				links: []link{{a: "a", b: "b", ab: 0.020, ba: 0.020, jitter: 0.002, roundTrips: 2000}}, span: 600, seed: 1},
			ref: "a", want: []check{{"b", 0.0002}},
		},
		{
			name: "wide area mesh, offsets of minutes, 100 ppm drift",
			sc: scenario{nodes: map[string]clock{"a": {}, "b": {offset: -240, drift: 100}, "c": {offset: 75, drift: -40},
				"d": {offset: 3.5, drift: 20}, "e": {offset: 600, drift: -100}},
				links: mesh([]string{"a", "b", "c", "d", "e"}, 0.030, 0.030, 0.005, 1500), t0: 100, span: 600, seed: 2},
			ref: "a", want: []check{{"b", 0.001}, {"c", 0.001}, {"d", 0.001}, {"e", 0.001}},
		},
		{
			name: "tree with one asymmetric pair: bound is honest",
			sc: scenario{nodes: map[string]clock{"web": {}, "app": {offset: 60}, "db": {offset: -30, drift: 50}},
				links: []link{
					{a: "web", b: "app", ab: 0.040, ba: 0.010, jitter: 0.002, roundTrips: 2000},
					{a: "app", b: "db", ab: 0.015, ba: 0.015, jitter: 0.002, roundTrips: 2000}},
				span: 300, seed: 3},
			ref: "web", want: []check{{"app", 0.0155}, {"db", 0.0155}}, honest: []string{"app", "db"},
		},
		{
			name: "mesh with one asymmetric pair: the others stay within 1 ms",
			sc: scenario{nodes: map[string]clock{"a": {}, "b": {offset: 10}, "c": {offset: -20}, "d": {offset: 30}, "e": {offset: 5}},
				links: append(mesh([]string{"a", "b", "c", "d"}, 0.020, 0.020, 0.002, 1000),
					link{a: "a", b: "e", ab: 0.020, ba: 0.020, jitter: 0.002, roundTrips: 1000},
					link{a: "d", b: "e", ab: 0.050, ba: 0.010, jitter: 0.002, roundTrips: 1000}),
				span: 300, seed: 4},
			ref: "a", want: []check{{"b", 0.001}, {"c", 0.001}, {"d", 0.001}, {"e", 0.001}},
		},
		{
			name: "NTP step of 250 ms in one node of a mesh",
			sc: scenario{nodes: map[string]clock{"a": {}, "b": {offset: 2}, "c": {offset: -1.5, steps: []struct{ at, jump float64 }{{200, 0.25}}},
				"d": {offset: 0.7}},
				links: mesh([]string{"a", "b", "c", "d"}, 0.001, 0.001, 0.0002, 3000), span: 400, seed: 5},
			ref: "a", want: []check{{"b", 0.001}, {"c", 0.001}, {"d", 0.001}}, steps: 1,
		},
		{
			name: "node with one-way traffic only is uncorrectable",
			sc: scenario{nodes: map[string]clock{"a": {}, "b": {offset: 1}, "log": {offset: 9}},
				links: []link{{a: "a", b: "b", ab: 0.001, ba: 0.001, jitter: 0.0001, roundTrips: 200},
					{a: "b", b: "log", ab: 0.001, jitter: 0.0001, roundTrips: 50, oneWay: true}},
				span: 60, seed: 6},
			ref: "a", want: []check{{"b", 0.0001}}, warning: "node log: no messages both ways",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := tc.sc.build()
			opts := tc.opts
			opts.Reference = tc.ref
			res, err := Estimate(tr, opts)
			if err != nil {
				t.Fatal(err)
			}
			cr := NewCorrector(res.Corrections())
			for _, c := range tc.want {
				got := tc.sc.worstError(cr, tr, tc.ref, c.node)
				if got > c.max {
					t.Errorf("node %s: worst error %.6f s > %.6f s", c.node, got, c.max)
				}
				t.Logf("node %s: worst error %.6f s", c.node, got)
			}
			for _, n := range tc.honest {
				id, _ := tr.LookupNode(n)
				ne := res.Nodes[id]
				got := tc.sc.worstError(cr, tr, tc.ref, n)
				if float64(ne.Error)/1e9 < got {
					t.Errorf("node %s: reported error bound %.6f s < true error %.6f s", n, float64(ne.Error)/1e9, got)
				}
				t.Logf("node %s: bound %.6f s, true %.6f s", n, float64(ne.Error)/1e9, got)
			}
			if len(res.Steps) != tc.steps {
				t.Errorf("found %d clock steps %+v, want %d", len(res.Steps), res.Steps, tc.steps)
			}
			if tc.warning != "" && !strings.Contains(strings.Join(res.Warnings, "\n"), tc.warning) {
				t.Errorf("warnings %q lack %q", res.Warnings, tc.warning)
			}
		})
	}
}

func TestApplyRoundTrip(t *testing.T) {
	sc := scenario{nodes: map[string]clock{"a": {}, "b": {offset: 42, drift: 80}},
		links: []link{{a: "a", b: "b", ab: 0.002, ba: 0.002, jitter: 0.0005, roundTrips: 500}}, span: 120, seed: 9}
	tr := sc.build()
	res, err := Estimate(tr, Options{Reference: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(tr, res.Corrections()); err != nil {
		t.Fatal(err)
	}
	for i, m := range tr.Messages {
		if d := float64(m.Recv-m.Send) / 1e9; d < 0.002-0.0002 || d > 0.1 {
			t.Fatalf("message %d: corrected delay %.6f s, want ≥ 2 ms", i, d)
		}
	}
	if err := Apply(tr, res.Corrections()); err != ErrApplied {
		t.Fatalf("second Apply: %v, want ErrApplied", err)
	}
	again, err := Estimate(tr, Options{Reference: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := tr.LookupNode("b")
	if off := again.Nodes[b].Offset; math.Abs(float64(off)) > 2e5 {
		t.Errorf("residual offset after Apply %d ns, want ~0", off)
	}
}

func TestToLocalInvertsToReference(t *testing.T) {
	for _, c := range []trace.Correction{
		{Offset: 180e9, DriftPPM: 100, At: 1_700_000_180e9},
		{Offset: -3e9, DriftPPM: -250.5, At: 1_700_000_000e9},
		{},
	} {
		for _, ref := range []int64{1_700_000_000e9, 1_700_000_600e9 + 123, 1_699_999_000e9} {
			if got := ToReference(c, ToLocal(c, ref)); got < ref-1 || got > ref+1 {
				t.Errorf("%+v: ToReference(ToLocal(%d)) = %d", c, ref, got)
			}
		}
	}
}

// TestAddAllMatchesAdd checks that the bulk path builds the same series as
// streaming messages one by one, also when both are mixed.
func TestAddAllMatchesAdd(t *testing.T) {
	sc := scenario{nodes: map[string]clock{"a": {}, "b": {offset: 1}, "c": {offset: -2}},
		links: mesh([]string{"a", "b", "c"}, 0.001, 0.002, 0.0005, 300), span: 60, seed: 3}
	tr := sc.build()
	one := NewAccumulator(len(tr.Nodes))
	for i := range tr.Messages {
		one.Add(&tr.Messages[i])
	}
	mixed := NewAccumulator(0) // sparse index
	half := len(tr.Messages) / 2
	for i := range tr.Messages[:half] {
		mixed.Add(&tr.Messages[i])
	}
	mixed.AddAll(tr.Messages[half:])
	if len(one.pairs) != len(mixed.pairs) || one.n != mixed.n {
		t.Fatalf("pairs %d/%d, messages %d/%d", len(one.pairs), len(mixed.pairs), one.n, mixed.n)
	}
	for k := range one.pairs {
		p, q := one.pairs[k], mixed.pairs[k]
		for d := 0; d < 2; d++ {
			if len(p.dir[d]) != len(q.dir[d]) {
				t.Fatalf("pair %d dir %d: %d vs %d samples", k, d, len(p.dir[d]), len(q.dir[d]))
			}
			for i := range p.dir[d] {
				if p.dir[d][i] != q.dir[d][i] {
					t.Fatalf("pair %d dir %d sample %d: %+v vs %+v", k, d, i, p.dir[d][i], q.dir[d][i])
				}
			}
		}
	}
}

func TestComparable(t *testing.T) {
	u := trace.Unknown
	cases := []struct {
		name string
		msgs []trace.Message
		want bool
	}{
		{"empty", nil, false},
		{"within one node", []trace.Message{{Send: 1, Recv: 2, Src: 0, Dst: 0}}, false},
		{"untraced receiver", []trace.Message{{Send: 1, Recv: u, Src: 0, Dst: 1}}, false},
		{"untraced sender", []trace.Message{{Send: u, Recv: 2, Src: 1, Dst: 0}}, false},
		{"two traced nodes", []trace.Message{{Send: 1, Recv: 2, Src: 0, Dst: 0}, {Send: 1, Recv: 2, Src: 0, Dst: 1}}, true},
	}
	for _, c := range cases {
		if got := Comparable(&trace.Trace{Messages: c.msgs}); got != c.want {
			t.Errorf("%s: Comparable %v, want %v", c.name, got, c.want)
		}
	}
}

// TestEnvelopesMatchMessages: the series, the estimate and Comparable are
// the same from a trace's envelopes as from its messages, with the sparse
// pair index too and with messages no series takes (within one node,
// untraced ends).
func TestEnvelopesMatchMessages(t *testing.T) {
	u := trace.Unknown
	for _, tc := range []struct {
		name  string
		nodes int // NewAccumulator's hint: 0 takes the sparse index
		extra []trace.Message
	}{
		{"dense", -1, nil},
		{"sparse", 0, nil},
		{"ignored", -1, []trace.Message{{Send: 5e9, Recv: 5e9 + 1e6, Src: 0, Dst: 0}, {Send: u, Recv: 7e9, Src: 1, Dst: 2}, {Send: 8e9, Recv: u, Src: 2, Dst: 1}}},
	} {
		sc := scenario{nodes: map[string]clock{"a": {}, "b": {offset: 1, drift: 20}, "c": {offset: -2}},
			links: mesh([]string{"a", "b", "c"}, 0.001, 0.002, 0.0005, 300), span: 60, seed: 3}
		tr := sc.build()
		tr.Messages = append(tr.Messages, tc.extra...)
		nodes := tc.nodes
		if nodes < 0 {
			nodes = len(tr.Nodes)
		}
		env := trace.Envelopes(tr.Messages)
		a, b := NewAccumulator(nodes), NewAccumulator(nodes)
		a.AddAll(tr.Messages)
		b.AddAllEnvelopes(env)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: AddAllEnvelopes' series differ from AddAll's", tc.name)
		}
		want, err := Estimate(tr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := EstimateEnvelopes(tr, env, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: EstimateEnvelopes %+v, want %+v", tc.name, got, want)
		}
	}
	for _, c := range []struct {
		name string
		msgs []trace.Message
	}{
		{"empty", nil},
		{"within one node", []trace.Message{{Send: 1, Recv: 2, Src: 0, Dst: 0}}},
		{"untraced receiver", []trace.Message{{Send: 1, Recv: u, Src: 0, Dst: 1}}},
		{"untraced sender", []trace.Message{{Send: u, Recv: 2, Src: 1, Dst: 0}}},
		{"two traced nodes", []trace.Message{{Send: 1, Recv: 2, Src: 0, Dst: 0}, {Send: 1, Recv: 2, Src: 0, Dst: 1}}},
	} {
		if got, want := ComparableEnvelopes(trace.Envelopes(c.msgs)), Comparable(&trace.Trace{Messages: c.msgs}); got != want {
			t.Errorf("%s: ComparableEnvelopes %v, Comparable %v", c.name, got, want)
		}
	}
}
