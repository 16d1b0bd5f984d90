package nesting

import (
	"os"
	"syscall"
	"testing"
	"time"
	"wap5/internal/p5sim"

	"wap5/trace"
)

// BenchmarkNest runs the algorithm on a multi-tier trace at low
// parallelism (2 workers) and high (45 workers); messages/s is the metric
// Project 5's Table 1 is about.
func BenchmarkNest(b *testing.B) {
	for _, bc := range []struct {
		name    string
		workers int
	}{{"parallelism-low", 2}, {"parallelism-high", 45}} {
		tr := p5sim.Generate(p5sim.Options{Tracelets: p5sim.MultiTier(false), Workers: bc.workers, Instances: 20000, Think: p5sim.MS(100), Jitter: 0.2, Net: p5sim.MS(0.5), Seed: 1})
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

// BenchmarkNestFile runs the algorithm on the trace file named by
// WAP5_NEST_TRACE (e.g. bench/p5.sh's mt-long or mt-par45 trace) with the
// CLI's defaults, on the trace's envelopes as wap5 nest does; skipped
// without it.
func BenchmarkNestFile(b *testing.B) {
	name := os.Getenv("WAP5_NEST_TRACE")
	if name == "" {
		b.Skip("WAP5_NEST_TRACE not set")
	}
	start := time.Now()
	tr, env, release, err := trace.ReadFileEnvelopes(name)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	read := time.Since(start)
	opt := DefaultOptions()
	opt.NoInstances = true // as wap5 nest without --instances
	var r *Result
	cpu0 := cpuTime()
	for b.Loop() {
		r = NestEnvelopes(tr, env, opt)
	}
	b.ReportMetric(float64(len(env))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(r.Parallelism, "parallelism")
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/op")
	b.ReportMetric(read.Seconds(), "read-s")
}

// cpuTime is the process's user+system CPU time so far: on the shared
// 2-core machine it measures the work better than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNestEndToEnd is what `wap5 nest --json` does with the trace file
// named by WAP5_NEST_TRACE (text or binary): read it, check it
// (ReadFileEnvelopes: the binary decoder checks as it goes), nest it.
// msgs/CPU-s is the end-to-end rate; skipped without the variable.
func BenchmarkNestEndToEnd(b *testing.B) {
	name := os.Getenv("WAP5_NEST_TRACE")
	if name == "" {
		b.Skip("WAP5_NEST_TRACE not set")
	}
	opt := DefaultOptions()
	opt.NoInstances = true
	n := 0
	cpu0 := cpuTime()
	for b.Loop() {
		tr, env, release, err := trace.ReadFileEnvelopes(name)
		if err != nil {
			b.Fatal(err)
		}
		NestEnvelopes(tr, env, opt)
		release()
		n += len(env)
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(n)/cpu.Seconds(), "msgs/CPU-s")
	b.ReportMetric(cpu.Seconds()*1e3/float64(b.N), "cpu-ms/op")
}
