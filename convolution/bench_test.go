package convolution

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
	"wap5/internal/p5sim"

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
				c.correlate(nil, c.transform(v), edge{bn, cn})
			}
		})
	}
}

// BenchmarkConvolve runs the whole algorithm on a multi-tier trace.
func BenchmarkConvolve(b *testing.B) {
	tr := p5sim.Generate(p5sim.Options{Tracelets: p5sim.MultiTier(false), Workers: 4, Instances: 8000, Think: p5sim.MS(300), Jitter: 0.1, Net: p5sim.MS(0.5), Seed: 1})
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
	start := time.Now()
	tr, err := trace.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	read := time.Since(start)
	opt := DefaultOptions()
	opt.Quantum = 10 * time.Millisecond
	var r *Result
	cpu0 := cpuTime()
	for b.Loop() {
		r = Convolve(tr, opt)
	}
	b.ReportMetric(float64(r.Correlations), "correlations")
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/op")
	b.ReportMetric(read.Seconds(), "read-s")
}

// BenchmarkDirect compares the two direct summations (sparse pairs and the
// dense axpy) per unit of the cost model in processNode: "pair" and "elem"
// are ns per summed pair and per dense element.
func BenchmarkDirect(b *testing.B) {
	const nq, L = 50000, 2000
	c := &convolver{nq: nq, maxLag: L}
	r := rand.New(rand.NewPCG(1, 2))
	y := make([]float64, nq)
	var sy, sv []point
	for q := range nq {
		if r.Float64() < 0.3 {
			y[q] = 1
			sy = append(sy, point{int32(q), 1})
		}
		if r.Float64() < 0.02 {
			sv = append(sv, point{int32(q), 1})
		}
	}
	pairs := float64(len(sv)) * float64(len(sy)) * (2*L + 1) / nq
	b.Run("sparse", func(b *testing.B) {
		for b.Loop() {
			c.correlateSparse(nil, sv, sy)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs, "ns/pair")
	})
	b.Run("dense", func(b *testing.B) {
		for b.Loop() {
			c.correlateDense(nil, sv, y)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(sv)*(2*L+1)), "ns/elem")
	})
}

// cpuTime is the process's user+system CPU time so far: on the shared
// 2-core machine it measures the work better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFFT is one forward and one inverse real transform at step 3's
// usual length.
func BenchmarkFFT(b *testing.B) {
	const n = 16384
	f := newRealFFT(n)
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(i % 7)
	}
	X, y := make([]complex128, n/2+1), make([]float64, n)
	for b.Loop() {
		f.Coefficients(X, x)
		f.Sequence(y, X)
	}
}
