//go:build !linux

package linking

import "sync/atomic"

// mapAnon is make([]byte, n) where anonymous mappings are not made.
func mapAnon(n int) ([]byte, func()) { return make([]byte, n), func() {} }

// mapAnonFresh is make([]byte, n) where anonymous mappings are not made.
func mapAnonFresh(n int) ([]byte, func()) { return make([]byte, n), func() {} }

// offMapped is the bytes mapAnon has mapped outside the heap: none here.
var offMapped atomic.Int64
