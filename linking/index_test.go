package linking

import (
	"cmp"
	"math/rand"
	"slices"
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

// TestInsertionSort: sorted like a full sort within the budget, and a
// permutation of the input (ready for the fallback) when it gives up.
func TestInsertionSort(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []recvKey
		budget int
		done   bool
	}{
		{"empty", nil, 0, true},
		{"sorted", []recvKey{{1, 0}, {2, 1}, {3, 2}}, 0, true},
		{"ties by index", []recvKey{{5, 3}, {5, 1}, {4, 2}}, 10, true},
		{"nearly sorted", []recvKey{{1, 0}, {3, 1}, {2, 2}, {4, 3}, {6, 4}, {5, 5}}, 2, true},
		{"reversed, small budget", []recvKey{{4, 0}, {3, 1}, {2, 2}, {1, 3}}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := slices.Clone(tc.in)
			done := insertionSort(a, tc.budget)
			if done != tc.done {
				t.Fatalf("done = %v, want %v", done, tc.done)
			}
			want := slices.Clone(tc.in)
			slices.SortFunc(want, func(x, y recvKey) int {
				if x.t != y.t {
					return cmp.Compare(x.t, y.t)
				}
				return cmp.Compare(x.i, y.i)
			})
			if done && !slices.Equal(a, want) {
				t.Fatalf("got %v, want %v", a, want)
			}
			got := slices.Clone(a)
			slices.SortFunc(got, func(x, y recvKey) int {
				if x.t != y.t {
					return cmp.Compare(x.t, y.t)
				}
				return cmp.Compare(x.i, y.i)
			})
			if !slices.Equal(got, want) {
				t.Fatalf("not a permutation of the input: %v", a)
			}
		})
	}
}
