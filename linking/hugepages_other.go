//go:build !linux

package linking

// hugePages is a no-op where transparent huge pages cannot be asked for
// (see hugepages_linux.go).
func hugePages[T any](s []T) {}
