package linking

import "unsafe"

// entIndex finds a spillTable's entries by pattern hash: open addressing
// (linear probing, at most half full) over the entries' positions, the hash
// read from the entry itself — 4 bytes a slot where a pairTable takes 16:
// a noisy trace has hundreds of thousands of patterns (CoDeeN-sized: 450,000).
// Its slots live outside the heap from 4 MB (mem).
type entIndex struct {
	slots []int32 // entry + 1; 0: empty
	n     int
	mem   *offHeap
}

// find returns the slot of hash h and its entry, or −1 where h has none
// (the slot is then where put would place it).
func (x *entIndex) find(h uint64, ents []patEntry) (int, int32) {
	if len(x.slots) == 0 {
		return -1, -1
	}
	mask := len(x.slots) - 1
	s := int(mix(h) & uint64(mask))
	for v := x.slots[s]; v != 0; v = x.slots[s] {
		if ents[v-1].hash == h {
			return s, v - 1
		}
		s = (s + 1) & mask
	}
	return s, -1
}

// add indexes entry ei, of hash h (not indexed yet).
func (x *entIndex) add(h uint64, ei int32, ents []patEntry) {
	if 2*(x.n+1) > len(x.slots) {
		old := x.slots
		x.slots = offMake[int32](x.mem, max(1024, 2*len(old)))
		mask := len(x.slots) - 1
		for _, v := range old {
			if v != 0 {
				s := int(mix(ents[v-1].hash) & uint64(mask))
				for x.slots[s] != 0 {
					s = (s + 1) & mask
				}
				x.slots[s] = v
			}
		}
		x.mem.release(unsafe.Pointer(unsafe.SliceData(old)))
	}
	s, _ := x.find(h, ents)
	x.slots[s] = ei + 1
	x.n++
}

// tagIndex finds the spilled classes' records (classSpill) by 32 bits of
// their key's hash, 8 bytes a slot (a pairTable takes 16): a key's record
// is read back and its key compared, so two keys of one tag are told apart
// there (the second is kept in classSpill.collided). Its slots live outside
// the heap from 4 MB (mem).
type tagIndex struct {
	slots []tagSlot
	n     int
	mem   *offHeap
}

type tagSlot struct {
	tag uint32
	rec int32 // record + 1; 0: empty
}

func (x *tagIndex) slot(tag uint32) int {
	mask := len(x.slots) - 1
	s := int(mix(uint64(tag)) & uint64(mask))
	for e := x.slots[s]; e.rec != 0 && e.tag != tag; e = x.slots[s] {
		s = (s + 1) & mask
	}
	return s
}

// get is the record of tag, if any.
func (x *tagIndex) get(tag uint32) (int32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	e := x.slots[x.slot(tag)]
	return e.rec - 1, e.rec != 0
}

// put indexes record rec under tag (not indexed yet).
func (x *tagIndex) put(tag uint32, rec int32) {
	if 2*(x.n+1) > len(x.slots) {
		old := x.slots
		x.slots = offMake[tagSlot](x.mem, max(1024, 2*len(old)))
		for _, e := range old {
			if e.rec != 0 {
				x.slots[x.slot(e.tag)] = e
			}
		}
		x.mem.release(unsafe.Pointer(unsafe.SliceData(old)))
	}
	x.slots[x.slot(tag)] = tagSlot{tag, rec + 1}
	x.n++
}
