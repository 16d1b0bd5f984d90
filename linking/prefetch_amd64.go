package linking

// prefetch asks the processor to bring the cache line at p in, without
// waiting for it (PREFETCHT0): a hint, never a fault, whatever p is (an
// address, not a pointer). The passes' loops over a node's messages, which
// are scattered over a large trace, ask for the records of the messages a
// few places ahead (see sweepAhead).
//
//go:noescape
func prefetch(p uintptr)

// prefetch2 and prefetch4 are prefetch of two and four addresses in one
// call (a call to assembly is not inlined: where a loop asks for several
// lines at once, one call does).
//
//go:noescape
func prefetch2(a, b uintptr)

//go:noescape
func prefetch4(a, b, c, d uintptr)
