package linking

import (
	"math"
	"reflect"
	"testing"

	"wap5/trace"
)

// TestSetStats: setStats gives what Accumulator.Stats gives for an
// accumulator without a histogram: none, one and many samples, weights
// that cancel, and NaN and infinite samples.
func TestSetStats(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		name    string
		samples [][2]float64 // value, weight
	}{
		{"empty", nil},
		{"one", [][2]float64{{0.25, 0.7}}},
		{"two", [][2]float64{{0.001, 1}, {0.003, 0.5}}},
		{"equal", [][2]float64{{0.1, 0.3}, {0.1, 0.3}, {0.1, 0.3}}},
		{"negative", [][2]float64{{-2e-6, 1}, {5e-6, 2}, {-1e-9, 0.01}}},
		{"tiny weights", [][2]float64{{1, 1e-300}, {2, 1e-300}}},
		{"infinite", [][2]float64{{1, 1}, {inf, 1}}},
		{"nan", [][2]float64{{nan, 1}, {1, 1}}},
		{"-inf", [][2]float64{{-inf, 1}}},
	} {
		var a trace.Accumulator
		for _, s := range tc.samples {
			a.Add(s[0], s[1])
		}
		want := a.Stats()
		got := trace.Stats{W: 9, Mean: 9, Std: 9, Min: 9, Max: 9, Hist: trace.NewLogHistogram(1, 2, 3)}
		setStats(&got, &a)
		if !sameStats(got, want) {
			t.Errorf("%s: setStats %+v, Stats %+v", tc.name, got, want)
		}
	}
}

// sameStats compares two Stats bit for bit (NaN equal to NaN).
func sameStats(x, y trace.Stats) bool {
	b := func(f float64) uint64 { return math.Float64bits(f) }
	return b(x.W) == b(y.W) && b(x.Mean) == b(y.Mean) && b(x.Std) == b(y.Std) && b(x.Min) == b(y.Min) &&
		b(x.Max) == b(y.Max) && reflect.DeepEqual(x.Hist, y.Hist)
}

// BenchmarkBuildPattern builds (with reuse) patterns of 2 and 7 steps
// whose delays have one sample each: most of a noisy trace's patterns
// (codeen.bin: 538,130 of its 641,662 have one instance).
func BenchmarkBuildPattern(b *testing.B) {
	for _, par := range [][]int32{{-1, 0}, {-1, 0, 1, 2, 1, 0, 5}} {
		n := len(par)
		a := newAggregator(0)
		p := &pattern{par: par, count: 1, expected: 0.5, maxProb: 0.5,
			from: make([]int32, n), to: make([]int32, n), kind: make([]trace.Kind, n), closer: make([]int32, n)}
		for j := range par {
			p.from[j], p.to[j], p.closer[j] = a.label("n0"), a.label(string(rune('a'+j))), -1
		}
		p.acc = newPatAcc(n, false)
		for j := range par {
			p.acc.net[j].Add(0.01*float64(j), 0.5)
			p.acc.wait[j].Add(0.001*float64(j), 0.5)
			p.acc.off[j].Add(0.002*float64(n-j), 0.5)
		}
		b.Run(string(rune('0'+n)), func(b *testing.B) {
			for b.Loop() {
				a.buildPattern(p, true)
			}
		})
	}
}
