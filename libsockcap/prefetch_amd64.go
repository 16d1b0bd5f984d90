package libsockcap

// prefetchLines asks the processor to bring the cache lines of
// [p, p+n) in, without waiting for them (PREFETCHT0): a hint, never a
// fault, whatever p is (an address, not a pointer: it may lie outside
// any object).
//
//go:noescape
func prefetchLines(p, n uintptr)
