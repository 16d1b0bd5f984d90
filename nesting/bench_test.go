package nesting

import (
	"testing"
)

// BenchmarkNest runs the algorithm on a multi-tier trace at low
// parallelism (2 workers) and high (45 workers); messages/s is the metric
// Project 5's Table 1 is about.
func BenchmarkNest(b *testing.B) {
	for _, bc := range []struct {
		name    string
		workers int
	}{{"parallelism-low", 2}, {"parallelism-high", 45}} {
		tr := generate(genOpts{tracelets: multiTier(false), workers: bc.workers, instances: 20000, think: ms(100), jitter: 0.2, net: ms(0.5), seed: 1})
		b.Run(bc.name, func(b *testing.B) {
			opt := DefaultOptions()
			var r *Result
			for b.Loop() {
				r = Nest(tr, opt)
			}
			b.ReportMetric(float64(len(tr.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(r.Parallelism, "parallelism")
		})
	}
}
