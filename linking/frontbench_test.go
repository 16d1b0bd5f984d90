package linking

import (
	"fmt"
	"math"
	"os"
	"testing"

	"wap5/internal/hugemem"
	"wap5/trace"
)

// stopFront ends BenchmarkLinkFront's run at the first step after J2
// setup.
type stopFront struct{}

// BenchmarkLinkFront is BenchmarkLinkPhases as wap5 link runs a whole
// trace (WAP5_BENCH_TRACE; the joint method, Lean, DropMessages, every
// pattern, 600 MB reserved, the memory given back kept) up to the end of
// J2 setup, once per process (a run's fresh memory is part of its cost:
// run the binary once per sample, interleaved with the one it is compared
// with): the CPU seconds of reading, index, J1 pairing, step 1 and J2
// setup, and their sum.
func BenchmarkLinkFront(b *testing.B) {
	hugemem.Reserve(600 << 20)
	hugemem.KeepUpTo(math.MaxInt, math.MaxInt, true)
	defer hugemem.Keep(false)
	if os.Getenv("WAP5_BENCH_TRACE") == "" {
		b.Skip("WAP5_BENCH_TRACE unset")
	}
	b.N = 1
	cpu0 := cpuSeconds()
	t := benchTrace(b)
	sums := map[string]float64{"reading": cpuSeconds() - cpu0}
	order := []string{"reading"}
	cur, at := "", 0.0
	phaseHook = func(name string) {
		now := cpuSeconds()
		if cur != "" {
			sums[cur] += now - at
			order = append(order, cur)
		}
		if name == "J2 count priors, J2b actors" {
			panic(stopFront{})
		}
		cur, at = name, now
	}
	defer func() { phaseHook = nil }()
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopFront); !ok {
					panic(r)
				}
			}
		}()
		o := Options{NoInstances: true, Top: 0, Lean: true, DropMessages: true, ReusePatterns: true}
		o.OnPattern = func(*trace.Pattern) error { return nil }
		if _, err := Link(t, o); err != nil {
			b.Fatal(err)
		}
	}()
	total := 0.0
	for _, name := range order {
		fmt.Printf("%-16s %8.3f\n", name, sums[name])
		total += sums[name]
	}
	fmt.Printf("%-16s %8.3f\n", "front", total)
}
