//go:build !amd64

package linking

// prefetch is a hint that this architecture goes without.
func prefetch(p uintptr) {}
