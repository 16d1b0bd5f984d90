package linking

import (
	"fmt"
	"math"
	"os"
	"runtime/metrics"
	"strconv"
	"syscall"
	"testing"

	"wap5/internal/hugemem"
	"wap5/trace"
)

// benchTrace is the trace WAP5_BENCH_TRACE names (written by wap5 gen), or a
// simulated multi-tier trace when unset.
func benchTrace(b *testing.B) *trace.Trace {
	if p := os.Getenv("WAP5_BENCH_TRACE"); p != "" {
		t, err := trace.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		return t
	}
	return simulate(simConfig{clients: 10, perClient: 500, think: gauss{ms(50), ms(15)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(10, false), seed: 3, clientName: "CLIENT"})
}

// BenchmarkLinkGen links a trace written by wap5 gen (WAP5_BENCH_TRACE), or
// a simulated multi-tier trace when unset.
func BenchmarkLinkGen(b *testing.B) {
	t := benchTrace(b)
	for _, method := range []string{MethodJoint, MethodWAP5} {
		b.Run(method, func(b *testing.B) {
			cpu0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				if _, err := Link(t, Options{Method: method, NoInstances: true, Top: 100}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(t.Messages))*float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			// CPU time (user + sys of the process, GC included): the wall
			// clock of a shared machine says little.
			if cpu := cpuSeconds() - cpu0; cpu > 0 {
				b.ReportMetric(float64(len(t.Messages))*float64(b.N)/cpu, "msgs/cpu-s")
			}
		})
	}
}

// cpuAndPeak is cpuSeconds, the system CPU seconds alone, the minor page
// faults so far and the peak RSS so far in MB, from one getrusage.
func cpuAndPeak() (cpu, sys, faults, peakMB float64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, 0, 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, float64(ru.Stime.Nano()) / 1e9, float64(ru.Minflt), float64(ru.Maxrss) / 1024
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkLinkPhases links a trace written by wap5 gen (WAP5_BENCH_TRACE),
// or the simulated multi-tier trace, with the joint method (or
// WAP5_BENCH_METHOD's) and prints the
// process CPU seconds (GC included, so a step pays for the garbage
// collected while it runs) spent in every step (phaseHook), summed over the
// runs, with reading the trace as its own line.
func BenchmarkLinkPhases(b *testing.B) {
	// WAP5_BENCH_RESERVE: MB of heap reserved in huge pages before the
	// trace is read (hugemem.Reserve), as wap5 link does (9 times a binary
	// trace's size).
	if s := os.Getenv("WAP5_BENCH_RESERVE"); s != "" {
		mb, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		hugemem.Reserve(mb << 20)
	}
	// WAP5_BENCH_KEEP=1: the memory given back outside the heap is kept
	// for the next arrays (hugemem.KeepUpTo), as wap5 link does for a
	// whole trace (the joint method's bound): the steps that make their
	// arrays outside the heap only where the process keeps memory (J6 and
	// the aggregation with Lean and DropMessages) then run as in wap5 link.
	if os.Getenv("WAP5_BENCH_KEEP") == "1" {
		hugemem.KeepUpTo(math.MaxInt, math.MaxInt, true)
		defer hugemem.Keep(false)
	}
	cpu0 := cpuSeconds()
	t := benchTrace(b)
	read := cpuSeconds() - cpu0
	// WAP5_BENCH_TOP: the patterns built (default 100; 0: every pattern,
	// as wap5 link without --top: handed over one at a time and dropped).
	top := 100
	if s := os.Getenv("WAP5_BENCH_TOP"); s != "" {
		var err error
		if top, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	// WAP5_BENCH_METHOD: the method (default joint); WAP5_BENCH_LEAN=1:
	// Options.Lean, and with WAP5_BENCH_TOP=0 ReusePatterns, as wap5 link
	// sets them (the messages are dropped and made again on every run).
	// WAP5_BENCH_DROP=1: Options.DropMessages (wap5 link without
	// --instances).
	method, lean := os.Getenv("WAP5_BENCH_METHOD"), os.Getenv("WAP5_BENCH_LEAN") == "1"
	drop := os.Getenv("WAP5_BENCH_DROP") == "1"
	var order []string
	sums, sysSums, faultSums := map[string]float64{}, map[string]float64{}, map[string]float64{}
	// The peak RSS (getrusage's maxrss), the Go heap's share of the RSS
	// (its memory less what it gave back) and the heap allocated so far, in
	// MB, at the end of each step (its last end, first run only): where
	// the peak is made. (runtime/metrics, which stops nothing: the hook
	// runs several times per node.)
	hwm, heap, alloc := map[string]float64{}, map[string]float64{}, map[string]float64{}
	first := true
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	cur, at, sysAt, faultsAt := "", 0.0, 0.0, 0.0
	phaseHook = func(name string) {
		now, sys, faults, maxrss := cpuAndPeak()
		if cur != "" {
			if _, ok := sums[cur]; !ok {
				order = append(order, cur)
			}
			if first {
				metrics.Read(samples)
				hwm[cur] = maxrss
				heap[cur] = float64(samples[0].Value.Uint64()+samples[1].Value.Uint64()+samples[2].Value.Uint64()) / (1 << 20)
				alloc[cur] = float64(samples[3].Value.Uint64()) / (1 << 20)
			}
			sums[cur] += now - at
			sysSums[cur] += sys - sysAt
			faultSums[cur] += faults - faultsAt
		}
		cur, at, sysAt, faultsAt = name, now, sys, faults
	}
	defer func() { phaseHook = nil }()
	b.ResetTimer()
	cpu1 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		cur, first = "", i == 0
		o := Options{NoInstances: true, Top: top, Method: method, Lean: lean, DropMessages: drop}
		if top == 0 {
			o.OnPattern = func(*trace.Pattern) error { return nil }
			o.ReusePatterns = lean
		}
		if _, err := Link(t, o); err != nil {
			b.Fatal(err)
		}
	}
	total := cpuSeconds() - cpu1
	b.StopTimer()
	fmt.Printf("messages %d, runs %d; CPU-s per run (process CPU, GC included)\n", len(t.Messages), b.N)
	fmt.Printf("%-32s %8.3f %8s %9s %12s %8s %9s\n", "reading (once)", read, "sys", "faults", "peak RSS MB", "heap MB", "alloc MB")
	for _, name := range order {
		fmt.Printf("%-32s %8.3f %8.3f %9.0f %12.0f %8.0f %9.0f\n", name, sums[name]/float64(b.N), sysSums[name]/float64(b.N),
			faultSums[name]/float64(b.N), hwm[name], heap[name], alloc[name])
	}
	fmt.Printf("%-32s %8.3f\n", "linking total", total/float64(b.N))
	b.ReportMetric(float64(len(t.Messages))*float64(b.N)/total, "msgs/cpu-s")
}
