//go:build !amd64

package libsockcap

// prefetchLines is a hint that this architecture goes without.
func prefetchLines(p, n uintptr) {}
