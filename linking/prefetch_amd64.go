package linking

// prefetch asks the processor to bring the cache line at p in, without
// waiting for it (PREFETCHT0): a hint, never a fault, whatever p is (an
// address, not a pointer). The passes' loops over a node's messages, which
// are scattered over a large trace, ask for the records of the messages a
// few places ahead (see sweepAhead).
//
//go:noescape
func prefetch(p uintptr)
