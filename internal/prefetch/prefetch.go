// Package prefetch asks the processor to bring cache lines in ahead of
// use, without waiting for them (PREFETCHT0 on amd64, nothing elsewhere).
//
// Every function takes addresses, not pointers: a prefetch is a hint,
// never a fault, whatever the address is (it may lie outside any object,
// e.g. one past a slice's end). Go has no prefetch intrinsic outside its
// runtime and a call to assembly is never inlined, so where a loop wants
// several lines at once, one call of Two, Four or Lines asks for all of
// them.
//
// The linker's passes, the reconciler's matcher and the log decoder use
// it on the records of messages and events a few places ahead of the one
// they handle, which are scattered over memory much larger than the caches.
package prefetch

import "unsafe"

// At is Line of the address of s[i] (s[i] must be in range).
func At[T any](s []T, i int32) { Line(uintptr(unsafe.Pointer(&s[i]))) }
