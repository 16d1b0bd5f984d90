package linking

import "testing"

// BenchmarkRefitSteps links a trace written by wap5 gen (WAP5_BENCH_TRACE,
// or the simulated multi-tier trace) with the joint method once, and times
// the steps after the passes on its final state, each repeated: the count
// refit (J5, idempotent), the links' classes and moments (J5c, compare)
// and the instances (J6). Their CPU per run is reported as cpu-ms/op
// (process CPU: the machine is shared).
func BenchmarkRefitSteps(b *testing.B) {
	t := benchTrace(b)
	defer func() { afterJoint = nil }()
	steps := []struct {
		name string
		run  func(j *joint)
	}{
		{"refitCounts", func(j *joint) { j.refitCounts() }},
		{"linkClasses", func(j *joint) { j.linkClasses() }},
		{"compare", func(j *joint) { j.compare(Fit{}) }},
		{"instances", func(j *joint) { j.instances(nil) }},
	}
	afterJoint = func(j *joint) {
		for _, s := range steps {
			b.Run(s.name, func(b *testing.B) {
				cpu0 := cpuSeconds()
				for range b.N {
					s.run(j)
				}
				b.ReportMetric((cpuSeconds()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
			})
		}
	}
	if _, err := Link(t, Options{NoInstances: true, Top: 100, Lean: true, DropMessages: true}); err != nil {
		b.Fatal(err)
	}
}
