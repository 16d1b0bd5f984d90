//go:build !amd64

package linking

// prefetch is a hint that this architecture goes without.
func prefetch(p uintptr) {}

func prefetch2(a, b uintptr) {}

func prefetch4(a, b, c, d uintptr) {}
