package linking

import (
	"testing"

	"wap5/trace"
)

// BenchmarkSweep links a trace written by wap5 gen (WAP5_BENCH_TRACE, or the
// simulated multi-tier trace) with the joint method once, then repeats J3's
// sweeps over every node on its final state (the pass's state reset first,
// as pass does, outside the timing) and reports their CPU per repeat
// (cpu-ms/op, process CPU: the machine is shared): "sweep" as a later pass
// sweeps, "peaks" as the first pass does (every send's candidate delays
// collected and fitted per node; its classes are made already). Memory is
// warm: it times the sweeps without the first touch of their memory.
func BenchmarkSweep(b *testing.B) {
	t := benchTrace(b)
	defer func() { afterJoint = nil }()
	afterJoint = func(j *joint) {
		for _, first := range []bool{false, true} {
			name := "sweep"
			if first {
				name = "peaks"
			}
			b.Run(name, func(b *testing.B) {
				cpu := 0.0
				for range b.N {
					// 1. Reset as pass does.
					j.resetPass(false)
					j.first = first
					// 2. The sweeps, timed.
					cpu0 := cpuSeconds()
					for n := range j.t.Nodes {
						j.sweep(trace.NodeID(n))
						j.markSwept(trace.NodeID(n))
						if first {
							j.fitPeaks()
						}
					}
					cpu += cpuSeconds() - cpu0
				}
				j.first = false
				b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
	if _, err := Link(t, Options{NoInstances: true, Top: 100, Lean: true, DropMessages: true}); err != nil {
		b.Fatal(err)
	}
}
