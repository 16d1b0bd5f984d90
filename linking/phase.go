package linking

import "fmt"

// phaseHook, when set (benchmarks and tests only), is told where each step
// of a run begins: the step's name as numbered in doc.go, with the pass, so
// that a benchmark can break the run's CPU time down by step.
var phaseHook func(name string)

// phase tells phaseHook that step name begins.
func phase(name string) {
	if phaseHook != nil {
		phaseHook(name)
	}
}

// phaseOf tells phaseHook that step name of pass p begins.
func phaseOf(name string, p int) {
	if phaseHook != nil {
		phaseHook(fmt.Sprintf("%s p%d", name, p))
	}
}
