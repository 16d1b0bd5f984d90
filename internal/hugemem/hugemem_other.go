//go:build !linux

package hugemem

// Advise is a no-op where transparent huge pages cannot be asked for (see
// hugemem_linux.go).
func Advise[T any](s []T) {}
