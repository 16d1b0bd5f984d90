package linking

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapCap keeps a joint stream's memory after its first chunks near what
// those chunks needed (debug.SetMemoryLimit). The live heap of a joint
// stream swings within each chunk (the chunk's arrays, its context, the
// patterns before a spill) and the collector sets each goal at twice what
// is live when a collection ends: the heap's high-water mark is the largest
// goal met, and a long trace meets larger ones than a short one (10 % of
// the CoDeeN-sized trace: goals up to 101 MB, the whole trace: 114 MB, with
// 50 and 57 MB live at most). Outside the heap, the carried tables grow
// with the trace's distinct keys (42 → 65 MB). After heapCapChunks chunks
// the limit is capLimit of the peak those chunks reached (Go memory and
// memory outside the heap together), updated after every collection and
// chunk; GOGC is unchanged, so the limit only binds near the peak.
type heapCap struct {
	mu      sync.Mutex
	on      bool  // the stream runs; false stops the cycle hook
	warm    bool  // the first chunks are linked: limit is set
	peak    int64 // the memory the first chunks reached (Go's and offMapped)
	limit   int64 // the memory limit set (warm)
	old     int64 // the limit before the stream's
	samples []metrics.Sample
}

// heapCapChunks is how many chunks the cap is taken from.
const heapCapChunks = 4

// The limit is at least heapCapLive times the live heap the last
// collection left plus heapCapSlack (the runtime's memory apart from the
// heap's objects): where the live heap came near the limit the collector
// would run ever more often.
const (
	heapCapLive  = 1.5
	heapCapSlack = 8 << 20
)

// heapCapState lets one stream at a time hold the cap (the memory limit is
// the process's).
var heapCapState struct {
	sync.Mutex
	held bool
}

// newHeapCap starts the cap for a stream, or is nil where another stream
// holds it or a memory limit is set already (GOMEMLIMIT).
func newHeapCap() *heapCap {
	st := &heapCapState
	st.Lock()
	defer st.Unlock()
	if st.held {
		return nil
	}
	old := debug.SetMemoryLimit(-1)
	if old != math.MaxInt64 {
		return nil
	}
	st.held = true
	h := &heapCap{on: true, old: old, samples: []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}}
	h.arm()
	return h
}

// arm calls cycle after the next collection (a finalizer on an object
// nothing refers to).
func (h *heapCap) arm() {
	s := new([16]byte)
	runtime.SetFinalizer(s, func(*[16]byte) { h.cycle() })
}

// read is the Go memory mapped and not given back, and the live heap the
// last collection left.
func (h *heapCap) read() (mem, live int64) {
	metrics.Read(h.samples)
	v := func(i int) int64 {
		if h.samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return int64(h.samples[i].Value.Uint64())
	}
	return v(0) - v(1), v(2)
}

// cycle runs after each collection while the stream runs: it takes the
// first chunks' peak, and then sets the limit.
func (h *heapCap) cycle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on {
		return
	}
	h.update(false)
	h.arm()
}

// chunk is called after the stream's chunk n (from 0) is linked: after
// heapCapChunks chunks the limit is set, and then kept up to date.
func (h *heapCap) chunk(n int32) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.update(n+1 >= heapCapChunks)
}

// update takes the peak (before the first chunks are linked; warm: they
// are now) or sets the limit: the first chunks' peak of the Go memory and
// the memory outside the heap together, less what is outside the heap now
// (its tables grow with the trace's distinct keys: the heap makes room for
// them), and at least what the live heap needs.
func (h *heapCap) update(warm bool) {
	mem, live := h.read()
	off := offMapped.Load()
	// 1. Before the cap is set, its value is the peak.
	if !h.warm {
		h.peak = max(h.peak, mem+off)
		if !warm {
			return
		}
		h.warm = true
	}
	// 2. The limit.
	limit := capLimit(h.peak, off, live)
	if limit != h.limit {
		h.limit = limit
		debug.SetMemoryLimit(limit)
	}
}

// capLimit is the memory limit for the Go memory, given the first chunks'
// peak of the Go memory and the memory outside the heap together, what is
// outside the heap now and the live heap the last collection left: the
// peak less three quarters of what is outside the heap (its tables grow
// with the trace's distinct keys; the heap makes room for most of their
// growth — for all of it, the collector ran 2.3 times as often on the
// CoDeeN-sized trace as for half of it, 700 collections against 310), and
// at least heapCapLive times the live heap plus heapCapSlack.
func capLimit(peak, off, live int64) int64 {
	return max(peak-off/4*3, int64(heapCapLive*float64(live))+heapCapSlack)
}

// stop restores the limit found (before the stream's last steps: the
// ranking and the output have memory needs of their own).
func (h *heapCap) stop() {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.on {
		h.on = false
		debug.SetMemoryLimit(h.old)
		st := &heapCapState
		st.Lock()
		st.held = false
		st.Unlock()
	}
	h.mu.Unlock()
}
