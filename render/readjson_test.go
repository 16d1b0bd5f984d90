package render

import (
	"bytes"
	"strings"
	"testing"

	"wap5/trace"
)

func samplePaths() []*trace.Paths {
	acc := func(xs ...float64) trace.Stats {
		var a trace.Accumulator
		for _, x := range xs {
			a.Add(x, 1)
		}
		return a.Stats()
	}
	tree := func() *trace.Step {
		return &trace.Step{From: "A", To: "B", Count: 3, Net: acc(0.001, 0.002), Latency: acc(0.03),
			Children: []*trace.Step{
				{From: "B", To: "C", Count: 3, Net: acc(0.001), Wait: acc(0.01, 0.012), Latency: acc(0.005)},
				{From: "B", To: "A", Count: 3, Wait: acc(0.002)},
			}}
	}
	chain := &trace.Step{From: "A", To: "B", Count: 9, Delays: []float64{}, Children: []*trace.Step{
		{From: "B", To: "C", Count: 7, Delays: []float64{0.01, 0.05}}}}
	return []*trace.Paths{
		{Algorithm: "linking", Patterns: []*trace.Pattern{{Rank: 1, Count: 3, Expected: 2.5, MaxProb: 0.9, Root: tree(),
			Metrics: map[string]float64{"depth": 2}}}, Warnings: []string{"w"}},
		{Algorithm: "nesting", Patterns: []*trace.Pattern{{Rank: 1, Count: 3, Expected: 3, MaxProb: 1, Root: tree()}}},
		{Algorithm: "convolution", Patterns: []*trace.Pattern{{Rank: 1, Count: 7, Expected: 7, MaxProb: 1, Root: chain}}},
	}
}

// JSON → ReadJSON → JSON is the identity.
func TestReadJSONRoundTrip(t *testing.T) {
	for _, p := range samplePaths() {
		var a, b bytes.Buffer
		if err := JSON(&a, p); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", p.Algorithm, err)
		}
		if err := JSON(&b, back); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s round trip differs:\n%s\n---\n%s", p.Algorithm, a.String(), b.String())
		}
	}
}

func TestReadJSONErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"algorithm":"linking","patterns":[`, "offset"},
		{`{"patterns":[]}`, "no \"algorithm\""},
		{`{"algorithm":"magic","patterns":[]}`, "unknown algorithm"},
		{`{"algorithm":"linking","patterns":[{"rank":1}]}`, "pattern 1: no root"},
		{`{"algorithm":"linking","patterns":[{"rank":1,"root":{"from":"A"}}]}`, "without from/to"},
		{`{"algorithm":"convolution","patterns":[{"nodes":["A","B"],"edges":[]}]}`, "needs 1 edges"},
		{`{"algorithm":"linking","patterns":[{"rank":"x"}]}`, "pattern 1"},
		{"{\n\"algorithm\": 5}", "line 2"},
	}
	for _, tc := range tests {
		_, err := ReadJSON(strings.NewReader(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestReadInstances(t *testing.T) {
	tr := trace.New()
	a, b := tr.Node("a"), tr.Node("b")
	tr.Add(trace.Message{Send: 1, Recv: 2, Src: a, Dst: b, ID: 7, Call: trace.NoRef, Truth: trace.NoRef})
	tr.Add(trace.Message{Send: 3, Recv: 4, Src: b, Dst: a, ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
	p := &trace.Paths{Instances: []trace.Instance{{Pattern: 1, Prob: 0.5, Messages: []int32{0, 1}}}}
	var buf bytes.Buffer
	if err := Instances(&buf, tr, p); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("\n{\"pattern\":2,\"ids\":[\"nope\",\"L1\"]}\n")
	got, warns, err := ReadInstances(&buf, tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Prob != 0.5 || len(got[0].Messages) != 2 || got[0].Messages[0] != 0 || got[0].Messages[1] != 1 ||
		got[1].Prob != 1 || len(got[1].Messages) != 1 || got[1].Messages[0] != 0 || len(warns) != 1 || !strings.Contains(warns[0], "line 3") {
		t.Fatalf("got %+v warnings %q", got, warns)
	}
	if _, _, err := ReadInstances(strings.NewReader("{\"pattern\":1,\"ids\":[]}\nnot json\n"), tr); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad line: %v", err)
	}
	if _, _, err := ReadInstances(strings.NewReader("{\"prob\":1}\n"), tr); err == nil {
		t.Fatal("accepted an object without pattern and ids")
	}
}

func FuzzReadJSON(f *testing.F) {
	for _, p := range samplePaths() {
		var b bytes.Buffer
		JSON(&b, p)
		f.Add(b.String())
	}
	f.Add(`{"algorithm":"convolution","patterns":[{"nodes":["A"],"edges":[]}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ReadJSON(strings.NewReader(s))
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := JSON(&b, p); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadJSON(&b); err != nil {
			t.Fatalf("rewritten result does not read back: %v", err)
		}
	})
}

func FuzzReadInstances(f *testing.F) {
	f.Add("{\"pattern\":1,\"prob\":0.5,\"ids\":[\"7\",\"L2\"]}\n")
	f.Add("{\"pattern\":1,\"ids\":[\"L0\",\"L-1\",\"L99\"]}\n")
	tr := trace.New()
	a := tr.Node("a")
	tr.Add(trace.Message{Send: 1, Recv: 2, Src: a, Dst: a, ID: 7, Call: trace.NoRef, Truth: trace.NoRef})
	tr.Add(trace.Message{Send: 3, Recv: 4, Src: a, Dst: a, ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef})
	f.Fuzz(func(t *testing.T, s string) {
		insts, _, _ := ReadInstances(strings.NewReader(s), tr)
		for _, in := range insts {
			for _, m := range in.Messages {
				if m < 0 || int(m) >= len(tr.Messages) {
					t.Fatalf("message index %d out of range", m)
				}
			}
		}
	})
}
