package linking

import (
	"math/rand"
	"testing"
)

// TestPairTable checks the edge-id table against a map through growth, with
// keys that collide in the low bits and the zero key.
func TestPairTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys func(i int) uint64
		n    int
	}{
		{"dense", func(i int) uint64 { return uint64(i) }, 1000},
		{"pairs", func(i int) uint64 { return uint64(i%37)<<32 | uint64(i/37) }, 5000},
		{"high bits only", func(i int) uint64 { return uint64(i) << 40 }, 300},
		{"random", func(i int) uint64 { return rand.New(rand.NewSource(int64(i))).Uint64() }, 2000},
		{"zero and all ones", func(i int) uint64 { return []uint64{0, ^uint64(0), 1, ^uint64(0) - 1}[i%4] }, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newPairTable(4)
			want := map[uint64]int32{}
			for i := 0; i < tc.n; i++ {
				k := tc.keys(i)
				if _, ok := tab.get(k); ok != (want[k] != 0) {
					t.Fatalf("key %x: present %v before insertion", k, ok)
				}
				if want[k] == 0 {
					want[k] = int32(i + 1)
					tab.put(k, int32(i+1))
				}
			}
			for k, v := range want {
				if got, ok := tab.get(k); !ok || got != v {
					t.Fatalf("key %x: got %d %v, want %d", k, got, ok, v)
				}
			}
			if _, ok := tab.get(1 << 62); ok && want[1<<62] == 0 {
				t.Fatal("absent key found")
			}
			if tab.n != len(want) {
				t.Fatalf("n = %d, want %d", tab.n, len(want))
			}
		})
	}
}
