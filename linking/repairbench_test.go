package linking

import (
	"fmt"
	"strings"
	"testing"

	"wap5/trace"
)

// BenchmarkRepair links a trace written by wap5 gen (WAP5_BENCH_TRACE, or
// the simulated multi-tier trace) with the joint method once, then repeats
// J4 (every node's repair, with the call probabilities) on its final state
// and reports the CPU per repair of each J4 step (cpu-ms/op, process CPU:
// the machine is shared). On a settled trace the repeats find what the last
// pass found, so they time J4 without the rest of the run around it.
func BenchmarkRepair(b *testing.B) {
	t := benchTrace(b)
	defer func() { afterJoint, phaseHook = nil, nil }()
	afterJoint = func(j *joint) {
		sums := map[string]float64{}
		var order []string
		cur, at := "", 0.0
		phaseHook = func(name string) {
			now := cpuSeconds()
			if cur != "" {
				if _, ok := sums[cur]; !ok {
					order = append(order, cur)
				}
				sums[cur] += now - at
			}
			cur, at = name, now
		}
		b.Run("J4", func(b *testing.B) {
			cpu0 := cpuSeconds()
			for range b.N {
				j.scr.terms.start()
				for n := range j.t.Nodes {
					j.repair(trace.NodeID(n), true)
				}
				j.scr.terms.on = false
				phase("") // ends the last step
			}
			cpu := cpuSeconds() - cpu0
			b.ReportMetric(cpu*1e3/float64(b.N), "cpu-ms/op")
			for _, name := range order {
				if name != "" {
					b.ReportMetric(sums[name]*1e3/float64(b.N), strings.ReplaceAll(strings.TrimSuffix(name, fmt.Sprintf(" p%d", j.passNo)), " ", "_")+"-ms/op")
				}
			}
			clear(sums)
			order, cur = order[:0], ""
		})
		phaseHook = nil
	}
	if _, err := Link(t, Options{NoInstances: true, Top: 100, Lean: true, DropMessages: true}); err != nil {
		b.Fatal(err)
	}
}
