package linking

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestCapLimit(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		name            string
		peak, off, live int64
		want            int64
	}{
		{"nothing outside the heap", 120 * mb, 0, 30 * mb, 120 * mb},
		{"three quarters of the tables' memory given up", 120 * mb, 60 * mb, 30 * mb, 75 * mb},
		{"the live heap needs more", 120 * mb, 60 * mb, 50 * mb, 83 * mb},
		{"an empty stream", 0, 0, 0, heapCapSlack},
	} {
		if got := capLimit(c.peak, c.off, c.live); got != c.want {
			t.Errorf("%s: capLimit(%d, %d, %d) = %d MB, want %d MB", c.name, c.peak/mb, c.off/mb, c.live/mb, got/mb, c.want/mb)
		}
	}
}

// TestHeapCap: one stream at a time holds the limit, which is set after
// heapCapChunks chunks and restored by stop; collections update it.
func TestHeapCap(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	h := newHeapCap()
	if h == nil {
		t.Skip("a memory limit is set (GOMEMLIMIT)")
	}
	if newHeapCap() != nil {
		t.Fatal("a second stream got the cap")
	}
	for n := int32(0); n < heapCapChunks; n++ {
		if n < heapCapChunks-1 && debug.SetMemoryLimit(-1) != old {
			t.Fatalf("limit set after chunk %d", n)
		}
		h.chunk(n)
	}
	set := debug.SetMemoryLimit(-1)
	if set == old || set != h.limit || set < h.peak/2 {
		t.Fatalf("limit %d after %d chunks (peak %d, before %d)", set, heapCapChunks, h.peak, old)
	}
	runtime.GC()
	h.stop()
	if got := debug.SetMemoryLimit(-1); got != old {
		t.Fatalf("limit %d after stop, want %d", got, old)
	}
	if h2 := newHeapCap(); h2 == nil {
		t.Fatal("no cap after the first stream stopped")
	} else {
		h2.stop()
	}
}
