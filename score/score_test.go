package score

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"wap5/render"
	"wap5/trace"
	"wap5/tracegen"
)

func readTrace(t *testing.T, text string) *trace.Trace {
	t.Helper()
	tr, err := trace.ReadText(strings.NewReader("# wap5 message trace v1\n"+text), "truth")
	if err != nil || len(tr.Warnings) > 0 {
		t.Fatalf("truth trace: %v %v", err, tr.Warnings)
	}
	return tr
}

func readResult(t *testing.T, js string) *trace.Paths {
	t.Helper()
	p, err := render.ReadJSON(strings.NewReader(js))
	if err != nil {
		t.Fatalf("result: %v", err)
	}
	return p
}

// Project 5 §7.5.1's example: the system ran A→B→C→D twice; the algorithm
// found one A→B→C→D, one A→B and one C→D (files shared with cmd/wap5's tests).
var chainTruth, chainResult = exampleFile("p5-example.trace"), exampleFile("p5-example.json")

func exampleFile(name string) string {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "score", name))
	if err != nil {
		panic(err) // the repository's own test data
	}
	return string(b)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestProject5Example(t *testing.T) {
	tr := readTrace(t, chainTruth)
	p := readResult(t, chainResult)
	p.Instances = []trace.Instance{
		{Pattern: 1, Prob: 1, Messages: []int32{0, 1, 2}},
		{Pattern: 2, Prob: 1, Messages: []int32{3}},
		{Pattern: 3, Prob: 1, Messages: []int32{5}},
	}
	r := Score(tr, p, Options{Top: 3})
	tests := []struct {
		name string
		got  Counts
		want Counts
	}{
		{"patterns: no false negatives, two false positives", r.Patterns, Counts{TP: 1, FP: 2, FN: 0}},
		{"instances: one false negative, two false positives", r.InstancesByCount, Counts{TP: 1, FP: 2, FN: 1}},
		{"messages: 3 of 6 not on the correct path", r.MessagesByCount, Counts{TP: 3, FP: 2, FN: 3}},
	}
	for _, tc := range tests {
		if !near(tc.got.TP, tc.want.TP) || !near(tc.got.FP, tc.want.FP) || !near(tc.got.FN, tc.want.FN) {
			t.Errorf("%s: got %+v", tc.name, tc.got)
		}
	}
	in := r.Instances
	if in == nil || in.Correct != 1 || in.TruthFound != 1 || !near(in.Precision, 1.0/3) || !near(in.Recall, 0.5) ||
		in.MessagesCorrect != 3 || in.MessagesTotal != 6 {
		t.Errorf("instances by sets: %+v", in)
	}
	if r.Truth.Instances != 2 || r.Truth.Patterns != 1 || r.Inferred.Patterns != 3 {
		t.Errorf("sizes: %+v %+v", r.Truth, r.Inferred)
	}
	// B waits 9 ms and C 9 ms; inferred 9 ms and 9.9 ms.
	if len(r.Matched) != 1 || len(r.Matched[0].Steps) != 2 {
		t.Fatalf("matched: %+v", r.Matched)
	}
	errs := []float64{*r.Matched[0].Steps[0].RelErr, *r.Matched[0].Steps[1].RelErr}
	if !near(errs[0], 0) || !near(errs[1], 0.1) || !near(r.Delays.MeanRelErr, 0.05) || !near(r.Delays.MaxRelErr, 0.1) {
		t.Errorf("delay errors %v, summary %+v", errs, r.Delays)
	}
	if len(r.False) != 2 || r.False[0].Key != "A>B()" || r.False[1].Key != "C>D()" || len(r.Missing) != 0 {
		t.Errorf("false %+v missing %+v", r.False, r.Missing)
	}
}

// RPC truth: two instances A→B→C→B→A, one A→B→A; B waits 10 ms before
// calling C, C 5 ms before returning.
const rpcTruth = `
1.000 A a:40000 1.001 B b:80 10 id=1 kind=call call=1 truth=1
1.011 B b:40001 1.012 C c:90 10 id=2 kind=call call=2 truth=1
1.017 C c:90 1.018 B b:40001 10 id=3 kind=return call=2 truth=1
1.020 B b:80 1.021 A a:40000 10 id=4 kind=return call=1 truth=1
2.000 A a:40002 2.001 B b:80 10 id=5 kind=call call=3 truth=2
2.011 B b:40003 2.012 C c:90 10 id=6 kind=call call=4 truth=2
2.017 C c:90 2.018 B b:40003 10 id=7 kind=return call=4 truth=2
2.020 B b:80 2.021 A a:40002 10 id=8 kind=return call=3 truth=2
3.000 A a:40004 3.001 B b:80 10 id=9 kind=call call=5 truth=3
3.003 B b:80 3.004 A a:40004 10 id=10 kind=return call=5 truth=3
`

func TestViews(t *testing.T) {
	tests := []struct {
		name       string
		result     string
		keys       []string // truth keys by rank
		patterns   Counts
		topFN      []int
		delaySteps int
	}{
		{
			name: "linking message trees",
			result: `{"algorithm":"linking","patterns":[
 {"rank":1,"count":2,"expected":1.8,"max_prob":1,"root":{"from":"A","to":"B","net_s":0.001,"wait_s":null,"count":2,"children":[
   {"from":"B","to":"C","net_s":0.001,"wait_s":0.010,"count":2,"children":[
     {"from":"C","to":"B","net_s":0.001,"wait_s":0.005,"count":2,"children":[
       {"from":"B","to":"A","net_s":0.001,"wait_s":0.002,"count":2,"children":[]}]}]}]}},
 {"rank":2,"count":1,"expected":1,"max_prob":1,"root":{"from":"A","to":"B","net_s":0.001,"wait_s":null,"count":1,"children":[
   {"from":"B","to":"A","net_s":0.001,"wait_s":0.002,"count":1,"children":[]}]}}],"warnings":[]}`,
			keys:       []string{"A>B(B>C(C>B(B>A())))", "A>B(B>A())"},
			patterns:   Counts{TP: 2},
			topFN:      []int{0, 0},
			delaySteps: 4,
		},
		{
			name: "nesting call trees",
			result: `{"algorithm":"nesting","patterns":[
 {"rank":1,"count":1,"root":{"from":"A","to":"B","call_delay_s":null,"latency_s":0.004,"count":1,"children":[]}},
 {"rank":2,"count":2,"root":{"from":"A","to":"B","call_delay_s":null,"latency_s":0.021,"count":2,"children":[
   {"from":"B","to":"C","call_delay_s":0.010,"latency_s":0.0069,"count":2,"children":[]}]}}],"warnings":[]}`,
			keys:       []string{"A>B(B>C())", "A>B()"},
			patterns:   Counts{TP: 2},
			topFN:      []int{1, 0}, // the ranking is upside down
			delaySteps: 4,
		},
		{
			name: "convolution chains",
			result: `{"algorithm":"convolution","patterns":[
 {"rank":1,"count":2,"nodes":["A","B","C","B","A"],"edges":[{"delays_s":[],"count":2},{"delays_s":[0.010],"count":2},
   {"delays_s":[0.005],"count":2},{"delays_s":[0.002],"count":2}]},
 {"rank":2,"count":5,"nodes":["A","B","D"],"edges":[{"delays_s":[],"count":5},{"delays_s":[0.001],"count":5}]}],"warnings":[]}`,
			keys:       []string{"A>B>C>B>A", "A>B>A"},
			patterns:   Counts{TP: 1, FP: 1, FN: 1},
			topFN:      []int{0, 1},
			delaySteps: 3,
		},
	}
	tr := readTrace(t, rpcTruth)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Score(tr, readResult(t, tc.result), Options{Top: 2})
			var keys []string
			for _, m := range r.Matched {
				keys = append(keys, m.Key)
			}
			for _, m := range r.Missing {
				keys = append(keys, m.Key)
			}
			slices.Sort(keys)
			want := slices.Clone(tc.keys)
			slices.Sort(want)
			if !slices.Equal(keys, want) {
				t.Errorf("truth keys %q, want %q", keys, want)
			}
			if r.Patterns.TP != tc.patterns.TP || r.Patterns.FP != tc.patterns.FP || r.Patterns.FN != tc.patterns.FN {
				t.Errorf("patterns %+v, want %+v", r.Patterns, tc.patterns)
			}
			var fn []int
			for _, p := range r.TopN {
				fn = append(fn, p.FN)
			}
			if !slices.Equal(fn, tc.topFN) {
				t.Errorf("top-N false negatives %v, want %v", fn, tc.topFN)
			}
			if (r.ChainsContained != nil) != (tc.name == "convolution chains") ||
				r.ChainsContained != nil && (r.ChainsContained.Found != 1 || r.ChainsContained.Recall != 0.5) {
				t.Errorf("chains contained: %+v", r.ChainsContained)
			}
			if r.Delays.Steps != tc.delaySteps || r.Delays.MeanRelErr > 0.011 {
				t.Errorf("delays %+v (want %d steps, small errors); matched %+v", r.Delays, tc.delaySteps, r.Matched)
			}
		})
	}
}

func TestTopNTolerance(t *testing.T) {
	// Truth: X (3 instances) ranks above Y (2); the result ranks Y first with
	// 100 against X's 99: a near-tie.
	truth := readTrace(t, `
1 A a:1 1.1 X x:1 1 truth=1
2 A a:1 2.1 X x:1 1 truth=2
3 A a:1 3.1 X x:1 1 truth=3
4 A a:1 4.1 Y y:1 1 truth=4
5 A a:1 5.1 Y y:1 1 truth=5
`)
	res := `{"algorithm":"nesting","patterns":[
 {"rank":1,"count":100,"root":{"from":"A","to":"Y","call_delay_s":null,"latency_s":null,"count":100,"children":[]}},
 {"rank":2,"count":99,"root":{"from":"A","to":"X","call_delay_s":null,"latency_s":null,"count":99,"children":[]}}],"warnings":[]}`
	// Nesting needs calls; score the same result as linking message trees.
	p := readResult(t, strings.Replace(res, `"nesting"`, `"linking"`, 1))
	for _, tc := range []struct {
		tol       float64
		fn, fnTol int
	}{{0.02, 1, 0}, {-1, 1, 1}, {0.001, 1, 1}} {
		r := Score(truth, p, Options{Top: 1, Tolerance: tc.tol})
		if r.TopN[0].FN != tc.fn || r.TopN[0].FNTol != tc.fnTol {
			t.Errorf("tolerance %g: %+v", tc.tol, r.TopN[0])
		}
	}
}

func TestClientAlias(t *testing.T) {
	truth := readTrace(t, `
1.0 c1 10.0.0.1:40001 1.1 S 10.0.1.1:80 1 kind=call call=1 truth=1
1.2 S 10.0.1.1:80 1.3 c1 10.0.0.1:40001 1 kind=return call=1 truth=1
2.0 c2 10.0.0.2:40002 2.1 S 10.0.1.1:80 1 kind=call call=2 truth=2
2.2 S 10.0.1.1:80 2.3 c2 10.0.0.2:40002 1 kind=return call=2 truth=2
3.0 c3 10.0.0.3:40003 3.1 S 10.0.1.1:80 1 kind=call call=3 truth=3
3.2 S 10.0.1.1:80 3.3 c3 10.0.0.3:40003 1 kind=return call=3 truth=3
`)
	res := readResult(t, `{"algorithm":"linking","patterns":[{"rank":1,"count":3,"expected":3,"max_prob":1,
 "root":{"from":"CLIENT","to":"S","net_s":0.1,"wait_s":null,"count":3,"children":[{"from":"S","to":"CLIENT","net_s":0.1,"wait_s":0.1,"count":3,"children":[]}]}}],"warnings":[]}`)
	r := Score(truth, res, Options{})
	if r.Patterns.TP != 1 || r.Patterns.FN != 0 || r.Aliases[ClientName] != 3 || r.InstancesByCount.TP != 3 {
		t.Fatalf("CLIENT aggregation: %+v aliases %v", r.Patterns, r.Aliases)
	}
	r = Score(truth, res, Options{NoClientAlias: true})
	if r.Patterns.TP != 0 || r.Patterns.FN != 3 {
		t.Fatalf("without aliasing: %+v", r.Patterns)
	}
	r = Score(truth, res, Options{NoClientAlias: true, Aliases: map[string]string{"c1": "CLIENT", "c2": "CLIENT", "c3": "CLIENT"}})
	if r.Patterns.TP != 1 {
		t.Fatalf("explicit aliases: %+v", r.Patterns)
	}
}

// The latest-received rule and the generator's exact parents give the same
// truth for tracelets without parallel blocks, untraced nodes included.
func TestCauseRuleMatchesParents(t *testing.T) {
	for _, file := range []string{"multitier.gen", "cdn.gen", "children-d-cc.gen"} {
		cfg, err := tracegen.ParseConfigFile("../testdata/gen/" + file)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Duration, cfg.Messages, cfg.Parents = 0, 4000, true
		tr, err := tracegen.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		groups := truthGroups(tr)
		exact := causes(tr, groups)
		plain := *tr
		plain.Extra = nil
		rule := causes(&plain, groups)
		for i := range exact {
			if exact[i] != rule[i] {
				t.Fatalf("%s: message %s: parent= says %d, the rule %d", file, render.MessageID(tr, i), exact[i], rule[i])
			}
		}
	}
}

// A perfect result: patterns built from the truth itself score 1.
func TestPerfect(t *testing.T) {
	cfg, err := tracegen.ParseConfigFile("../testdata/gen/children-parallel.gen")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Duration, cfg.Messages, cfg.Parents = 0, 3000, true
	tr, err := tracegen.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := perfectNesting(t, tr)
	aliases := map[string]string{}
	for _, n := range tr.Nodes {
		if strings.HasPrefix(n.Name, "A") {
			aliases[n.Name] = "A"
		}
	}
	r := Score(tr, p, Options{Aliases: aliases})
	if r.Patterns.Precision != 1 || r.Patterns.Recall != 1 || r.Instances.Precision != 1 || r.Instances.Recall != 1 ||
		r.InstancesByCount.FP != 0 || r.Delays.MeanRelErr > 1e-9 || r.TopN[0].FN != 0 {
		t.Fatalf("perfect result scored %+v %+v %+v", r.Patterns, r.Instances, r.Delays)
	}
}

// perfectNesting builds nesting paths from the call ids: every instance is
// A→B with two parallel B→C calls; wait and latency from the timestamps.
func perfectNesting(t *testing.T, tr *trace.Trace) *trace.Paths {
	t.Helper()
	byTruth := map[int32][]int32{}
	for i := range tr.Messages {
		byTruth[tr.Messages[i].Truth] = append(byTruth[tr.Messages[i].Truth], int32(i))
	}
	var root, c1, c2, w1, w2 trace.Accumulator
	p := &trace.Paths{Algorithm: "nesting"}
	for _, msgs := range byTruth {
		if len(msgs) != 6 {
			t.Fatalf("instance of %d messages", len(msgs))
		}
		ret := map[int32]int32{}
		var calls []int32
		for _, i := range msgs {
			if tr.Messages[i].Kind == trace.KindReturn {
				ret[tr.Messages[i].Call] = i
			} else {
				calls = append(calls, i)
			}
		}
		top := calls[0]
		m := func(i int32) *trace.Message { return &tr.Messages[i] }
		root.Add(float64(m(ret[m(top).Call]).Recv-m(top).Send)/1e9, 1)
		for k, c := range calls[1:] {
			acc, wacc := &c1, &w1
			if k == 1 {
				acc, wacc = &c2, &w2
			}
			acc.Add(float64(m(ret[m(c).Call]).Recv-m(c).Send)/1e9, 1)
			wacc.Add(float64(m(c).Send-m(top).Recv)/1e9, 1)
		}
		p.Instances = append(p.Instances, trace.Instance{Pattern: 1, Prob: 1, Messages: msgs})
	}
	// Identical siblings align in send order, as the algorithms sort
	// children by mean send time.
	n := len(byTruth)
	step := func(lat, wait trace.Stats) *trace.Step {
		return &trace.Step{From: "B", To: "C", Kind: trace.KindCall, Count: n, Latency: lat, Wait: wait}
	}
	p.Patterns = []*trace.Pattern{{Rank: 1, Count: n, Expected: float64(n), MaxProb: 1, Root: &trace.Step{From: "A", To: "B",
		Kind: trace.KindCall, Count: n, Latency: root.Stats(),
		Children: []*trace.Step{step(c1.Stats(), w1.Stats()), step(c2.Stats(), w2.Stats())}}}}
	return p
}

func TestWriteText(t *testing.T) {
	tr := readTrace(t, chainTruth)
	p := readResult(t, chainResult)
	r := Score(tr, p, Options{Top: 2})
	var b bytes.Buffer
	if err := WriteText(&b, &r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"linking (message trees) against 2 truth instances in 1 patterns", "patterns", "top-N false negatives",
		"inferred patterns that are not in the truth", "A>B(B>C(C>D()))", "B>C", "error 10.0%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, b.String())
		}
	}
}

func TestNoTruth(t *testing.T) {
	tr := readTrace(t, "1 A a:1 2 B b:1 1\n")
	r := Score(tr, readResult(t, chainResult), Options{})
	if len(r.Warnings) == 0 || r.Truth.Instances != 0 || r.Patterns.FP != 3 {
		t.Fatalf("%+v", r)
	}
}
