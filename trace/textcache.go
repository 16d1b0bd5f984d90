package trace

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
	"unsafe"

	"wap5/internal/hugemem"
)

// nameCache remembers recently interned node and endpoint names of a text
// reader, keys inline, direct-mapped by a hash of the bytes: the names of
// nearby lines (a connection's call and return, a handful of nodes and
// listening sockets) then skip the trace's maps, for one cache line each.
// Only ReadText uses it: its trace's tables do not change under it, while a
// streaming reader's may (CompactEndpoints renumbers endpoints).
type nameCache struct {
	node  [64]cachedName
	ep    [4096]cachedName
	actor [1024]cachedActor
	arena []byte // new endpoint names, many to an allocation
	eps   epTable
}

// epTable is ReadText's index of the trace's endpoint names, in place of
// the trace's map (Trace.epIdx, a string key per name, which readText
// leaves unmade): open addressing with linear probing over slots of a
// name's 32-bit hash and id, 8 bytes and no pointers each, so that
// growing it moves no strings and the collector never scans it; a hit
// compares the name with Trace.Endpoints[id]. On the CoDeeN-sized text
// trace (a new ephemeral port on most lines) the map's inserts, growth
// and scans were ~3 of its ~25 CPU-s.
//
// From 4 MB the slots are outside the Go heap (hugemem.Map), the old ones
// given back as soon as the table has grown and the last ones by free:
// in the heap every table it outgrew would stay as garbage until a
// collection, and the reader's heap holds the messages (a collection
// waits for twice their size).
type epTable struct {
	seed  maphash.Seed
	slots []epSlot // a power of two long, at most half full
	n     int
	// release gives the slots back where they are outside the heap.
	release func()
}

// free gives the table's memory back; it may not be used any more.
func (e *epTable) free() {
	if e.release != nil {
		e.release()
	}
	*e = epTable{}
}

// makeSlots makes e.slots n long (zero), giving the old ones back where
// they were outside the heap: the caller has copied what it keeps.
func (e *epTable) makeSlots(n int) {
	rel := e.release
	e.slots, e.release = nil, nil
	if size := n * int(unsafe.Sizeof(epSlot{})); size >= 4<<20 {
		b, release := hugemem.Map(size)
		e.slots, e.release = unsafe.Slice((*epSlot)(unsafe.Pointer(unsafe.SliceData(b))), n), release
	} else {
		e.slots = make([]epSlot, n)
	}
	if rel != nil {
		rel()
	}
}

type epSlot struct {
	hash uint32
	id   int32 // EndpointID + 1; 0: empty
}

// find returns the id of endpoint name b in t, adding it when new (as
// str(b), so that the name does not keep the scanner's buffer).
func (e *epTable) find(t *Trace, b []byte, str func([]byte) string) EndpointID {
	if e.slots == nil {
		e.seed = maphash.MakeSeed()
		e.makeSlots(1 << 12)
		if len(t.Endpoints) == 0 {
			t.Endpoints = append(t.Endpoints, "-")
		}
		for i, name := range t.Endpoints {
			e.insert(uint32(maphash.String(e.seed, name)), EndpointID(i))
		}
	}
	h := uint32(maphash.Bytes(e.seed, b))
	mask := len(e.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		sl := e.slots[i]
		if sl.id == 0 {
			break
		}
		if sl.hash == h && t.Endpoints[sl.id-1] == string(b) {
			return EndpointID(sl.id - 1)
		}
	}
	id := EndpointID(len(t.Endpoints))
	if len(t.Endpoints) == cap(t.Endpoints) {
		// Doubling: append grows a large slice by a quarter, and a trace
		// with millions of names would leave four times the table's
		// size behind as garbage.
		t.Endpoints = slices.Grow(t.Endpoints, len(t.Endpoints))
	}
	t.Endpoints = append(t.Endpoints, str(b))
	e.insert(h, id)
	return id
}

func (e *epTable) insert(h uint32, id EndpointID) {
	if 2*(e.n+1) > len(e.slots) {
		old, rel := e.slots, e.release
		e.release = nil // (old is given back once copied)
		e.makeSlots(2 * len(old))
		e.n = 0
		for _, sl := range old {
			if sl.id != 0 {
				e.put(sl)
			}
		}
		if rel != nil {
			rel()
		}
	}
	e.put(epSlot{h, int32(id) + 1})
}

func (e *epTable) put(sl epSlot) {
	mask := len(e.slots) - 1
	i := int(sl.hash) & mask
	for e.slots[i].id != 0 {
		i = (i + 1) & mask
	}
	e.slots[i] = sl
	e.n++
}

// str returns b as a string kept in the arena: a trace with a new endpoint
// on most lines then makes one allocation per 64 KB of names instead of one
// per name. The arena's bytes are never written again once handed out.
func (c *nameCache) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > 1024 {
		return string(b)
	}
	if len(c.arena)+len(b) > cap(c.arena) {
		c.arena = make([]byte, 0, 64<<10)
	}
	off := len(c.arena)
	c.arena = append(c.arena, b...)
	return unsafe.String(&c.arena[off], len(b))
}

// cachedActor is an actor name on one node.
type cachedActor struct {
	node NodeID
	name cachedName
}

const cachedNameMax = 27

type cachedName struct {
	key [cachedNameMax]byte
	n   uint8 // key length + 1; 0: empty
	id  int32
}

func (c *cachedName) get(b []byte) (int32, bool) {
	return c.id, int(c.n) == len(b)+1 && string(c.key[:len(b)]) == string(b)
}

func (c *cachedName) put(b []byte, id int32) {
	if len(b) <= cachedNameMax {
		copy(c.key[:], b)
		c.n, c.id = uint8(len(b)+1), id
	}
}

// nameHash mixes the first and the last eight bytes of b and its length
// (an endpoint's address and port).
func nameHash(b []byte) uint64 {
	n := len(b)
	var x, y uint64
	if n >= 8 {
		x, y = binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[n-8:])
	} else {
		for i, c := range b {
			x |= uint64(c) << (8 * i)
		}
	}
	hi, lo := bits.Mul64(x^uint64(n)<<56, 0x9E3779B97F4A7C15^y)
	return hi ^ lo
}

func (s *TextScanner) node(b []byte) NodeID {
	if s.names == nil {
		return s.t.nodeBytes(b)
	}
	c := &s.names.node[nameHash(b)&63]
	if id, ok := c.get(b); ok {
		return NodeID(id)
	}
	id := s.t.nodeBytes(b)
	c.put(b, int32(id))
	return id
}

func (s *TextScanner) endpoint(b []byte) EndpointID {
	if s.names == nil {
		return s.t.endpointBytes(b)
	}
	c := &s.names.ep[nameHash(b)&4095]
	if id, ok := c.get(b); ok {
		return EndpointID(id)
	}
	id := s.names.eps.find(s.t, b, s.names.str)
	c.put(b, int32(id))
	return id
}

func (s *TextScanner) actor(node NodeID, b []byte) ActorID {
	if s.names == nil {
		return s.t.actorBytes(node, b)
	}
	c := &s.names.actor[(nameHash(b)^uint64(node)*0x9E3779B97F4A7C15)>>54]
	if id, ok := c.name.get(b); ok && c.node == node {
		return ActorID(id)
	}
	id := s.t.actorBytes(node, b)
	c.node = node
	c.name.put(b, int32(id))
	return id
}
