package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// governMemory keeps the process's memory near its live heap while a large
// trace is linked: after every garbage collection it sets the soft memory
// limit to the live heap plus a quarter (and 64 MB), so the collector runs
// before the heap doubles (GOGC's 100 %) and the runtime returns freed
// pages to the system. On the CoDeeN-sized trace the peak RSS of `wap5 link`
// went from ~1.8–2.2 GB to ~1.4 GB for a few per cent of CPU
// (bench/results-linkperf2.md). A GOMEMLIMIT in the environment is left to
// rule. The returned function stops it and lifts the limit.
func governMemory() (stop func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	var stopped atomic.Bool
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		// A finalizer runs after the collection that finds its object
		// unreachable: once per cycle, re-armed each time.
		runtime.SetFinalizer(new([16]byte), func(*[16]byte) {
			if stopped.Load() {
				return
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				live := sample[0].Value.Uint64()
				debug.SetMemoryLimit(int64(live + live/4 + 64<<20))
			}
			arm()
		})
	}
	arm()
	return func() {
		stopped.Store(true)
		debug.SetMemoryLimit(math.MaxInt64)
	}
}
