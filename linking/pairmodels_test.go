package linking

import (
	"maps"
	"math/rand"
	"testing"

	"wap5/trace"
)

// TestKeyTables: every key added to a keyTable gets the next id and is
// found by it through the growths, a key added again keeps its id, keys
// never added are not found, the table stays ≤ 70 % full; with hashes that
// collide (a few bits, or none) as with a good one. A keyedModels' models
// keep their addresses and keys through its growths.
func TestKeyTables(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		hash func(fanKey) uint64
	}{
		{"fan keys", 20000, hashFanKey},
		{"2-bit hash", 3000, func(k fanKey) uint64 { return hashFanKey(k) & 3 }},
		{"one hash", 700, func(fanKey) uint64 { return 12345 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mem offHeap
			defer mem.free()
			ids := newKeyTable(&mem, tc.hash)
			ms := newKeyedModels[fanKey, fanModel](&mem, tc.hash)
			key := func(i int) fanKey {
				return fanKey{trig: trigNodeOf(i), node: trace.NodeID(i / 2), ret: i%2 == 1}
			}
			var ptrs []*fanModel
			for i := 0; i < tc.n; i++ {
				id, added := ids.intern(key(i))
				if !added || id != int32(i) {
					t.Fatalf("key %d: id %d, added %v; want %d, true", i, id, added, i)
				}
				if 10*ids.n > 7*len(ids.slots) {
					t.Fatalf("%d keys in %d slots", ids.n, len(ids.slots))
				}
				f, added := ms.getOrAdd(key(i))
				if !added {
					t.Fatalf("model %d found before it was added", i)
				}
				f.cost[0] = float64(i)
				ptrs = append(ptrs, f)
				// An earlier key again: the same id and model.
				j := i - i%5
				if id, added := ids.intern(key(j)); added || id != int32(j) {
					t.Fatalf("key %d again: id %d, added %v", j, id, added)
				}
				if f, added := ms.getOrAdd(key(j)); added || f != ptrs[j] {
					t.Fatalf("model %d again: added %v, another address", j, added)
				}
			}
			for i := 0; i < tc.n; i++ {
				if id, ok := ids.get(key(i)); !ok || id != int32(i) {
					t.Fatalf("get key %d: %d, %v", i, id, ok)
				}
				k, f := ms.at(i)
				if k != key(i) || f != ptrs[i] || f.cost[0] != float64(i) || ms.get(key(i)) != f {
					t.Fatalf("model %d: key %v, cost %v", i, k, f.cost[0])
				}
			}
			for i := tc.n; i < tc.n+100; i++ {
				if _, ok := ids.get(key(i)); ok || ms.get(key(i)) != nil {
					t.Fatalf("key %d never added is found", i)
				}
			}
			if ms.len() != tc.n || ids.n != tc.n {
				t.Fatalf("%d models, %d ids; want %d", ms.len(), ids.n, tc.n)
			}
		})
	}
}

func trigNodeOf(i int) trace.NodeID { return trace.NodeID(i%7 - 1) }

// TestClassTab: random insertions, updates and deletions of a classTab
// against a map, and scans deleting as they go (evict's), each key found
// with its class and record or found absent, every class met by a scan.
func TestClassTab(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  int // distinct keys drawn from
		ops   int
		pDel  float64
		seed  int64
		slabN int
	}{
		{"few keys, many deletions", 300, 20000, 0.45, 1, 300},
		{"many keys, few deletions", 30000, 60000, 0.1, 2, 30000},
		{"half deleted", 5000, 50000, 0.5, 3, 5000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mem offHeap
			defer mem.free()
			tab := classTab{mem: &mem}
			slab := make([]classModel, tc.slabN)
			ref := map[classKey]classRef{}
			rng := rand.New(rand.NewSource(tc.seed))
			key := func(i int) classKey {
				return classKey{trig: trace.NodeID(i%5 - 1), node: trace.NodeID(i / 5 % 40), act: trace.NodeID(i / 200), reply: i%3 == 0, ret: i%7 == 0}
			}
			for op := 0; op < tc.ops; op++ {
				i := rng.Intn(tc.keys)
				k := key(i)
				if rng.Float64() < tc.pDel {
					s := tab.find(k)
					if _, ok := ref[k]; ok != (s >= 0) {
						t.Fatalf("op %d: key %d resident %v, found at %d", op, i, ok, s)
					}
					if s >= 0 {
						tab.del(s)
						delete(ref, k)
					}
					continue
				}
				r := classRef{c: &slab[i], rec: int32(op)}
				tab.set(k, r)
				ref[k] = r
				if tab.n != len(ref) || 4*tab.n > 3*len(tab.slots) {
					t.Fatalf("op %d: %d classes (want %d), %d slots", op, tab.n, len(ref), len(tab.slots))
				}
				// Now and then a scan in slot order deleting every
				// third class it meets, as evict does: every class is
				// met.
				if op%5000 == 4999 {
					before := maps.Clone(ref)
					met := map[classKey]bool{}
					for s := 0; s < len(tab.slots); {
						e := tab.slots[s]
						if e.c == nil {
							s++
							continue
						}
						met[e.k] = true
						if len(met)%3 != 0 {
							s++
							continue
						}
						tab.del(s)
						delete(ref, e.k)
					}
					for k := range before {
						if !met[k] {
							t.Fatalf("op %d: the scan missed class %v", op, k)
						}
					}
					if tab.n != len(ref) {
						t.Fatalf("op %d: %d classes after the scan, want %d", op, tab.n, len(ref))
					}
				}
			}
			for i := 0; i < tc.keys+50; i++ {
				got, ok := tab.get(key(i))
				want, wok := ref[key(i)]
				if ok != wok || got != want {
					t.Fatalf("key %d: %v %v, want %v %v", i, got, ok, want, wok)
				}
			}
			n := 0
			for _, e := range tab.slots {
				if e.c != nil {
					n++
				}
			}
			if n != len(ref) {
				t.Fatalf("%d slots in use, want %d", n, len(ref))
			}
		})
	}
}
