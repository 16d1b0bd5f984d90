package linking

import (
	"runtime/debug"
	"sync"
	"unsafe"

	"wap5/internal/hugemem"
)

// offHeap owns arrays of pointer-free values made outside the Go heap
// (mapAnon), given back to the system together by free. The linker's
// per-message arrays live from the start of a run to its end: in the Go
// heap they count twice towards the peak (the collector lets the heap grow
// to twice what is live before it collects), outside it once.
type offHeap struct {
	// frees gives back each array, by its first element.
	frees map[unsafe.Pointer]func()
	// from is the size from which offMake makes an array outside the
	// heap; 0: 4 MB. See streamMapFrom.
	from int
}

// streamMapFrom is offHeap.from for the arrays of a stream chunk's joint
// run. A chunk's arrays (CoDeeN-sized trace, 60 s chunks: ≈ 240,000
// messages with their context, 1–2 MB an array) are below 4 MB: in the heap,
// garbage at the chunk's end, they are what the heap's goal doubles within
// each chunk, and the heap's high-water mark is the largest of the chunks'
// goals — higher the more chunks a trace has. Outside the heap they count
// once and go back to the system at the chunk's end.
const streamMapFrom = 256 << 10

// offMake is make([]T, n) for a T without pointers: outside the Go heap
// where the array is large (≥ 4 MB, or ≥ o.from where set), in o until
// o.free.
func offMake[T any](o *offHeap, n int) []T { return offMakeFrom[T](o, n, mapAnon) }

// offMakeSparse is offMake for an array sized for the most that may be
// written, of which only the pages written are to cost memory: outside
// the heap it is in memory never touched (mapAnonFresh), not in memory
// other arrays gave back and the process keeps (hugemem.Keep), which is
// resident all through.
func offMakeSparse[T any](o *offHeap, n int) []T { return offMakeFrom[T](o, n, mapAnonFresh) }

func offMakeFrom[T any](o *offHeap, n int, mapper func(int) ([]byte, func())) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	from := 4 << 20
	if o.from > 0 {
		from = o.from
	}
	if n*size < from {
		return make([]T, n)
	}
	b, free := mapper(n * size)
	if o.frees == nil {
		o.frees = map[unsafe.Pointer]func(){}
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	o.frees[p] = free
	return unsafe.Slice((*T)(p), n)
}

// offMap is make([]T, n) for a T without pointers to memory the collector
// frees, always outside the Go heap (mapAnon), in o until o.free: for
// tables and slabs that live as long as a stream and grow with the trace,
// small ones too — in the heap they would count twice towards the peak.
func offMap[T any](o *offHeap, n int) []T {
	var z T
	b, free := mapAnon(n * int(unsafe.Sizeof(z)))
	if o.frees == nil {
		o.frees = map[unsafe.Pointer]func(){}
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	o.frees[p] = free
	return unsafe.Slice((*T)(p), n)
}

// offGrow is append's growth for a slice made by offMake (or a small one
// in the heap): s with room for more elements, in a new array of twice the
// capacity where it has none, the old array given back at once — growing
// outside the heap leaves no garbage behind. T may hold pointers only to
// memory the collector does not free while the array is in use (the
// collector does not see them): classes of a whole trace's run, which live
// in slabs the joint linker keeps (joint.slabs).
func offGrow[T any](o *offHeap, s []T, more int) []T {
	if len(s)+more <= cap(s) {
		return s
	}
	t := offMake[T](o, max(2*cap(s), len(s)+more, 1024))[:len(s)]
	copy(t, s)
	o.release(unsafe.Pointer(unsafe.SliceData(s)))
	return t
}

// offSized is s[:n] where s has room for n elements, else a new array of
// n (offMake; the old one given back where it was outside the heap): for
// scratch arrays reused from pass to pass, sized by the trace, which would
// otherwise be large live objects in the heap.
func offSized[T any](o *offHeap, s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	o.release(unsafe.Pointer(unsafe.SliceData(s)))
	return offMake[T](o, n)
}

// release gives back the array starting at p now, where o made it outside
// the heap (a heap array is left to the collector); nothing may refer to it
// any more.
func (o *offHeap) release(p unsafe.Pointer) {
	if f, ok := o.frees[p]; ok && p != nil {
		f()
		delete(o.frees, p)
	}
}

// free gives o's arrays back; nothing may refer to them any more.
func (o *offHeap) free() {
	for _, f := range o.frees {
		f()
	}
	o.frees = nil
}

// lowGCMessages is the size of trace from which the joint linker's passes
// run under lowGC: below it the heap is small anyway.
const lowGCMessages = 1 << 20

// lowGCPercent is the collector's GOGC during the passes of a large trace.
const lowGCPercent = 20

// lowGCState counts the runs under lowGC, so that concurrent runs restore
// the setting they found once, when the last ends.
var lowGCState struct {
	sync.Mutex
	runs int
	old  int
}

// lowGC gives the heap's free memory back to the system (a collection)
// and lets the heap grow by lowGCPercent of what is live rather than by
// GOGC (100 % by default) until the function it returns is called. For the
// joint linker's passes over a large trace: the heap then holds the trace
// (pointer-free, so a collection costs little) and the garbage of the
// steps before (J1's tables, the clients' endpoint sets: hundreds of MB on
// the CoDeeN-sized trace), while the passes' own arrays are outside the
// heap (offHeap) and allocate little in it; at GOGC 100 the heap would
// stay at twice the trace. Where GOGC is off or lower already, only the
// free memory is given back.
func lowGC() (restore func()) { return collectOften(true) }

// collectOften is lowGC, with the heap's free memory given back first only
// where free is set: the aggregation of a large trace (steps 4–5), whose
// garbage (every pattern's steps, handed over and dropped) would grow the
// heap at GOGC 100 into memory it has not touched yet, by hundreds of MB.
func collectOften(free bool) (restore func()) {
	st := &lowGCState
	st.Lock()
	if st.runs == 0 {
		st.old = debug.SetGCPercent(lowGCPercent)
		if st.old < lowGCPercent { // off (−1) or lower already
			debug.SetGCPercent(st.old)
		}
	}
	st.runs++
	st.Unlock()
	if free {
		debug.FreeOSMemory()
	}
	return func() {
		st.Lock()
		if st.runs--; st.runs == 0 {
			debug.SetGCPercent(st.old)
		}
		st.Unlock()
	}
}

// newInstances is room for step 3's instances of n messages (each in
// about one instance; try-both adds a few). Where the process keeps the
// memory given back outside the heap (hugemem.Keeping: wap5 link) the
// arrays are made there (keepMem, given back after the aggregation), in
// what step 2's arrays and the packed messages' second part left, rather
// than in fresh heap memory — but for the messages' array where instances
// are kept: their messages are slices of it (aggregate).
func (l *linker) newInstances(n int) *instances {
	if !hugemem.Keeping() {
		return &instances{start: make([]int32, 1, n/2+2), msgs: make([]int32, 0, n+n/4), par: make([]int32, 0, n+n/4),
			prob: make([]float64, 0, n/2+1)}
	}
	in := &instances{start: offMake[int32](&l.keepMem, n/2+2)[:1], par: offMake[int32](&l.keepMem, n+n/4)[:0],
		prob: offMake[float64](&l.keepMem, n/2+1)[:0]}
	if l.o.NoInstances {
		in.msgs = offMake[int32](&l.keepMem, n+n/4)[:0]
	} else {
		in.msgs = make([]int32, 0, n+n/4)
	}
	return in
}
