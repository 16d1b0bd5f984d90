package skew

import (
	"strings"
	"testing"

	"wap5/trace"
)

// FuzzEstimate feeds arbitrary text traces to Estimate and Apply: whatever
// the timestamps (equal, reversed, huge, one sample, steps), no panic, and
// any result keeps the reference at zero.
func FuzzEstimate(f *testing.F) {
	for _, s := range []string{
		"1 a - 2 b - 1\n3 b - 4 a - 1\n",
		"1 a - 1 b - 1\n1 b - 1 a - 1\n1 a - 1 b - 1\n",
		"0 a - 9000000000 b - 1\n9000000000 b - 0 a - 1\n",
		"-5 a - 5 b - 1\n5 b - -5 a - 1\n1 a - - b - 1\n",
		"1 a - 2 b - 1\n2 b - 3 c - 1\n3 c - 4 a - 1\n4 a - 5 c - 1\n5 c - 6 b - 1\n6 b - 7 a - 1\n",
		"1.5 a - 2.5 b - 1\n1.6 a - 2.6 b - 1\n1.7 b - 0.7 a - 1\n1.8 b - 0.8 a - 1\n1.9 a - 1.9 a - 1\n",
	} {
		f.Add(s, "")
		f.Add(s, "b")
	}
	f.Fuzz(func(t *testing.T, text, ref string) {
		if len(text) > 1<<16 {
			return
		}
		tr, err := trace.ReadText(strings.NewReader(text), "fuzz")
		if err != nil || tr.CheckValid() != nil {
			return
		}
		res, err := Estimate(tr, Options{Reference: ref})
		if err != nil {
			return
		}
		for _, n := range res.Nodes {
			if n.Status == Reference && (n.Offset != 0 || n.DriftPPM != 0) {
				t.Fatalf("reference %s has offset %d drift %g", n.Name, n.Offset, n.DriftPPM)
			}
		}
		_ = Apply(tr, res.Corrections())
	})
}

// A longer, generated trace with many samples per pair exercises step
// detection and the quantile fits, which tiny fuzz inputs do not reach.
func FuzzEstimateGenerated(f *testing.F) {
	f.Add(uint64(1), 0.5, 0.0, 2.0, 0.001, 0.004)
	f.Add(uint64(2), -3.0, 0.3, 0.0, 0.05, 0.0)
	f.Add(uint64(3), 0.0, -0.2, 1e-6, 0.0, 1.0)
	f.Fuzz(func(t *testing.T, seed uint64, off, step, drift, ab, ba float64) {
		for _, v := range []float64{off, step, drift, ab, ba} {
			if v != v || v > 1e4 || v < -1e4 {
				return
			}
		}
		if ab < 0 || ba < 0 || drift > 1e3 || drift < -1e3 {
			return
		}
		sc := scenario{nodes: map[string]clock{"a": {}, "b": {offset: off, drift: drift, steps: []struct{ at, jump float64 }{{30, step}}},
			"c": {offset: -off}},
			links: []link{{a: "a", b: "b", ab: ab, ba: ba, jitter: 0.001, roundTrips: 300},
				{a: "b", b: "c", ab: ba, ba: ab, jitter: 0.002, roundTrips: 200}}, span: 60, seed: seed}
		tr := sc.build()
		if _, err := Estimate(tr, Options{}); err != nil {
			t.Fatal(err)
		}
	})
}
