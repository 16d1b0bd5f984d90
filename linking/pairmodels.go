package linking

import "unsafe"

// The joint linker's models keyed by node pairs (fan-out, call counts) and
// the dense ids of its class pools and trigger classes are carried from
// chunk to chunk of a stream, and their number grows with the pairs the
// trace meets (CoDeeN-sized trace, 60 s chunks: 61 K fan-out models, 48 K
// count models, 116 K pools and 61 K triggers after an hour, against 44 K,
// 31 K, 65 K and 44 K after six minutes). As Go maps with a model allocated
// per key they were ≈ 17 MB of live heap at the end, counted about twice
// towards the peak through the collector's heap goal. Here they live
// outside the heap, once: a key table (open addressing, 16 bytes a slot for
// these keys) and the models in slabs of fixed size, so that a model's
// address never changes (the passes keep pointers to them: fanByEdge,
// cntList, jointState).

// keyTable gives keys of type K (pointer-free, comparable) dense ids, in
// the order they are added: linear probing, at most 70 % full, grown by
// doubling, its slots outside the heap (mem).
type keyTable[K comparable] struct {
	slots []keySlot[K]
	n     int
	hash  func(K) uint64
	mem   *offHeap
}

type keySlot[K comparable] struct {
	k  K
	id int32 // id+1; 0: empty
}

func newKeyTable[K comparable](mem *offHeap, hash func(K) uint64) keyTable[K] {
	return keyTable[K]{hash: hash, mem: mem}
}

// slot is the slot holding k, or the empty slot where k would go (the table
// is not empty).
func (t *keyTable[K]) slot(k K) int {
	mask := len(t.slots) - 1
	s := int(t.hash(k)) & mask
	for e := &t.slots[s]; e.id != 0 && e.k != k; e = &t.slots[s] {
		s = (s + 1) & mask
	}
	return s
}

// get is k's id, if any.
func (t *keyTable[K]) get(k K) (int32, bool) {
	if t.n == 0 {
		return 0, false
	}
	e := t.slots[t.slot(k)]
	return e.id - 1, e.id != 0
}

// intern is k's id, the next (t.n) where k is new; added tells which.
func (t *keyTable[K]) intern(k K) (id int32, added bool) {
	if 10*(t.n+1) > 7*len(t.slots) {
		t.grow()
	}
	s := t.slot(k)
	if e := t.slots[s]; e.id != 0 {
		return e.id - 1, false
	}
	t.slots[s] = keySlot[K]{k, int32(t.n) + 1}
	t.n++
	return int32(t.n - 1), true
}

// grow doubles the slots (256 at first), the old ones given back at once.
func (t *keyTable[K]) grow() {
	old := t.slots
	t.slots = offMap[keySlot[K]](t.mem, max(256, 2*len(old)))
	for _, e := range old {
		if e.id != 0 {
			t.slots[t.slot(e.k)] = e
		}
	}
	if old != nil {
		t.mem.release(unsafe.Pointer(unsafe.SliceData(old)))
	}
}

// slabChunk is how many values an offSlab array holds.
const slabChunk = 1 << 12

// offSlab holds values of type V by dense id, in arrays of slabChunk made
// outside the heap (mem): a value's address never changes. V may hold no
// pointers to memory the collector frees.
type offSlab[V any] struct {
	chunks [][]V
	n      int
	mem    *offHeap
}

// add is a new zero value and its id (the next).
func (s *offSlab[V]) add() (*V, int32) {
	if s.n == len(s.chunks)*slabChunk {
		s.chunks = append(s.chunks, offMap[V](s.mem, slabChunk))
	}
	id := s.n
	s.n++
	return &s.chunks[id/slabChunk][id%slabChunk], int32(id)
}

// at is the value of id (< s.n).
func (s *offSlab[V]) at(id int32) *V { return &s.chunks[id/slabChunk][id%slabChunk] }

// keyedModels are models of type V by key K (keyTable for the ids, offSlab
// for the keys and models, in the order they were added).
type keyedModels[K comparable, V any] struct {
	ids  keyTable[K]
	vals offSlab[keyed[K, V]]
}

type keyed[K comparable, V any] struct {
	k K
	v V
}

func newKeyedModels[K comparable, V any](mem *offHeap, hash func(K) uint64) keyedModels[K, V] {
	return keyedModels[K, V]{ids: newKeyTable(mem, hash), vals: offSlab[keyed[K, V]]{mem: mem}}
}

// get is k's model, or nil.
func (m *keyedModels[K, V]) get(k K) *V {
	id, ok := m.ids.get(k)
	if !ok {
		return nil
	}
	return &m.vals.at(id).v
}

// getOrAdd is k's model, a new zero one where k had none; added tells which.
func (m *keyedModels[K, V]) getOrAdd(k K) (v *V, added bool) {
	id, added := m.ids.intern(k)
	if added {
		e, _ := m.vals.add()
		e.k = k
		return &e.v, true
	}
	return &m.vals.at(id).v, false
}

// len is the number of models.
func (m *keyedModels[K, V]) len() int { return m.vals.n }

// at is model i (in the order added) and its key.
func (m *keyedModels[K, V]) at(i int) (K, *V) {
	e := m.vals.at(int32(i))
	return e.k, &e.v
}

// Hashes of the node-pair keys (mix of their fields packed).
func hashFanKey(k fanKey) uint64 {
	return mix(uint64(uint32(k.trig))<<32 | uint64(uint32(k.node))<<1 | uint64(b2u(k.ret)))
}

func hashTrigKey(k trigKey) uint64 {
	return mix(uint64(uint32(k.trig))<<32 | uint64(uint32(k.node))<<1 | uint64(b2u(k.ret)))
}

func hashPoolKey(k poolKey) uint64 {
	return mix(uint64(uint32(k.node))<<32 | uint64(uint32(k.act))<<2 | uint64(b2u(k.reply))<<1 | uint64(b2u(k.ret)))
}

func hashCountKey(k countKey) uint64 {
	return mix(uint64(uint32(k.src))<<32 ^ mix(uint64(uint32(k.node))<<32|uint64(uint32(k.dst))))
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
