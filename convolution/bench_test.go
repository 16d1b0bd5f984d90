package convolution

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"wap5/trace"
)

// BenchmarkCorrelate measures one cross-correlation (step 3) as the number
// of quanta S grows: the S·log S cost of Project 5's Figure 23.
func BenchmarkCorrelate(b *testing.B) {
	tr := mailTrace(1, [][]string{{"a", "b", "c"}}, []int{1}, 20000) // ~400,000 s
	for _, mu := range []time.Duration{400 * time.Second, 100 * time.Second, 25 * time.Second, 6 * time.Second, 1500 * time.Millisecond} {
		opt := DefaultOptions()
		opt.Quantum = mu
		opt.MaxDelay = 60 * time.Second
		c := newConvolver(tr, opt)
		bn, _ := tr.LookupNode("b")
		cn, _ := tr.LookupNode("c")
		v := slices.Clone(c.bySrc[0][bn])
		c.spectrum(edge{bn, cn})
		b.Run(fmt.Sprintf("S=%d", c.nq), func(b *testing.B) {
			for b.Loop() {
				c.correlate(c.transform(v), edge{bn, cn})
			}
		})
	}
}

// BenchmarkConvolve runs the whole algorithm on a multi-tier trace.
func BenchmarkConvolve(b *testing.B) {
	tr := generate(genOpts{tracelets: multiTier(false), workers: 4, instances: 8000, think: ms(300), jitter: 0.1, net: ms(0.5), seed: 1})
	opt := DefaultOptions()
	opt.Quantum = 10 * time.Millisecond
	for b.Loop() {
		Convolve(tr, opt)
	}
	b.ReportMetric(float64(len(tr.Messages)), "msgs")
}

// BenchmarkConvolveFile runs the algorithm on the trace file named by
// WAP5_CONVOLVE_TRACE (e.g. bench/p5.sh's mt-config trace) at μ = 10 ms;
// skipped without it.
func BenchmarkConvolveFile(b *testing.B) {
	name := os.Getenv("WAP5_CONVOLVE_TRACE")
	if name == "" {
		b.Skip("WAP5_CONVOLVE_TRACE not set")
	}
	tr, err := trace.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	opt := DefaultOptions()
	opt.Quantum = 10 * time.Millisecond
	var r *Result
	for b.Loop() {
		r = Convolve(tr, opt)
	}
	b.ReportMetric(float64(r.Correlations), "correlations")
}
