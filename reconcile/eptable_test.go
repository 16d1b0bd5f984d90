package reconcile

import (
	"math/rand"
	"testing"

	"wap5/trace"
)

// TestEPTable checks the endpoint table against a map: keys of the
// namer's form (address index << 16 | port), some too large to pack, ids
// from 0 and some too large to pack, every key looked up before it is
// added (as the namer does) and all of them at the end.
func TestEPTable(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		r := rand.New(rand.NewSource(seed))
		var tab epTable
		want := map[uint64]trace.EndpointID{}
		var keys []uint64
		next := trace.EndpointID(1)
		for i := 0; i < 300000; i++ {
			var k uint64
			switch x := r.Intn(100); {
			case x < 10 && len(keys) > 0: // seen before
				k = keys[r.Intn(len(keys))]
			case x < 12: // an address index too large to pack
				k = uint64(1)<<42 + uint64(r.Int63n(1<<40))
			default: // a few thousand addresses, ephemeral ports
				k = uint64(r.Intn(3000))<<16 | uint64(32768+r.Intn(28000))
			}
			got, ok := tab.get(k)
			w, wok := want[k]
			if ok != wok || got != w {
				t.Fatalf("seed %d step %d: get(%#x) = %d %v, want %d %v", seed, i, k, got, ok, w, wok)
			}
			if ok {
				continue
			}
			id := next
			next++
			if r.Intn(50) == 0 {
				id = trace.EndpointID(epIDMask + r.Intn(1000)) // too large to pack
			}
			tab.put(k, id)
			want[k] = id
			keys = append(keys, k)
		}
		for k, w := range want {
			if got, ok := tab.get(k); !ok || got != w {
				t.Fatalf("seed %d: get(%#x) = %d %v, want %d", seed, k, got, ok, w)
			}
		}
		if len(tab.over) == 0 {
			t.Fatalf("seed %d: nothing went to the map", seed)
		}
	}
}
