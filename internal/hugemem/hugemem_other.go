//go:build !linux

package hugemem

import "os"

// Advise is a no-op where transparent huge pages cannot be asked for (see
// hugemem_linux.go).
func Advise[T any](s []T) {}

// Collapse is a no-op where transparent huge pages cannot be asked for.
func Collapse[T any](s []T) {}

// Discard does nothing where memory cannot be given back (the values
// stay).
func Discard[T any](s []T) {}

// Make is make([]T, n, c) where transparent huge pages cannot be asked for.
func Make[T any](n, c int) []T { return make([]T, n, c) }

// MakeSmall is make([]T, n, c) where transparent huge pages cannot be asked for.
func MakeSmall[T any](n, c int) []T { return make([]T, n, c) }

// Map is make([]byte, n) where transparent huge pages cannot be asked for;
// the function it returns does nothing.
func Map(n int) ([]byte, func()) { return make([]byte, n), func() {} }

// MapFresh is Map where transparent huge pages cannot be asked for.
func MapFresh(n int) ([]byte, func()) { return make([]byte, n), func() {} }

// MapZero is make([]byte, n) where memory cannot be mapped; the function
// it returns does nothing.
func MapZero(n int) ([]byte, func()) { return make([]byte, n), func() {} }

// Reserve does nothing where transparent huge pages cannot be asked for.
func Reserve(n int) {}

// Keep does nothing where transparent huge pages cannot be asked for (Map
// makes Go slices).
func Keep(on bool) {}

// Keeping is false where transparent huge pages cannot be asked for (Keep
// does nothing).
func Keeping() bool { return false }

// Spare has no mappings to offer where transparent huge pages cannot be
// asked for.
func Spare(n int) (b []byte, free func(), ok bool) { return nil, nil, false }

// MapFile maps nothing where transparent huge pages cannot be asked for.
func MapFile(f *os.File, n int) (b []byte, unmap func(), ok bool) { return nil, nil, false }

// KeepsInput is false where transparent huge pages cannot be asked for.
func KeepsInput() bool { return false }

// KeepUpTo does nothing where transparent huge pages cannot be asked for.
func KeepUpTo(limit, idle int, input bool) {}

// Trim does nothing where transparent huge pages cannot be asked for.
func Trim() {}

// Release gives nothing back where transparent huge pages cannot be asked
// for (Map makes Go slices).
func Release[T any](s []T) bool { return false }

// Mapped is false where transparent huge pages cannot be asked for.
func Mapped[T any](s []T) bool { return false }

// Shrink does nothing where memory cannot be given back (the values stay).
func Shrink[T any](s []T, keep int) {}

// Kept is nothing where transparent huge pages cannot be asked for.
func Kept() (keptBytes, residentBytes, liveBytes int) { return 0, 0, 0 }
