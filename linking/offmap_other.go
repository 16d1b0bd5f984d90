//go:build !linux

package linking

// mapAnon is make([]byte, n) where anonymous mappings are not made.
func mapAnon(n int) ([]byte, func()) { return make([]byte, n), func() {} }
