package linking

import (
	"math"
	"os"
	"testing"

	"wap5/internal/hugemem"
	"wap5/trace"
)

// BenchmarkLinkBack links a trace written by wap5 gen (WAP5_BENCH_TRACE,
// or the simulated multi-tier trace) once as wap5 link --json does (Lean,
// DropMessages, every pattern handed over and dropped, the memory given
// back kept; WAP5_BENCH_METHOD: the method, default joint), then repeats
// the back of the run on its final state: J6 (the joint method's
// instances, on the settled links) and the aggregation (steps 3–5, on the
// run's own instances), reporting the CPU of each (cpu-ms/op, process
// CPU: the machine is shared). The repeats time these steps without the
// rest of the run, whose cost and memory vary far more than theirs.
func BenchmarkLinkBack(b *testing.B) {
	hugemem.KeepUpTo(math.MaxInt, math.MaxInt, true)
	defer hugemem.Keep(false)
	t := benchTrace(b)
	defer func() { afterJoint, beforeAggregate = nil, nil }()
	afterJoint = func(j *joint) {
		b.Run("J6", func(b *testing.B) {
			cpu0 := cpuSeconds()
			for range b.N {
				mem := &offHeap{}
				j.instances(mem)
				mem.free()
			}
			b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
	beforeAggregate = func(l *linker, in *instances) {
		b.Run("aggregate", func(b *testing.B) {
			cpu0 := cpuSeconds()
			for range b.N {
				if err := l.aggregate(in, &Result{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
		})
	}
	o := Options{NoInstances: true, Method: os.Getenv("WAP5_BENCH_METHOD"), Lean: true, DropMessages: true, ReusePatterns: true,
		OnPattern: func(*trace.Pattern) error { return nil }}
	if _, err := Link(t, o); err != nil {
		b.Fatal(err)
	}
}
