package linking

import "unsafe"

// patIndex finds a spillTable's patterns by hash: open addressing (linear
// probing, at most 70 % full, any size) whose slots hold 32 bits of the
// pattern's hash, its tag, and where the pattern is: resident (its position
// in spillTable.res) or the spill file's record of its last state. Nothing
// else of a pattern stays in memory — 8 bytes a slot, ≈ 13 bytes a
// pattern — where a noisy trace has hundreds of thousands of them
// (CoDeeN-sized: 450,000) and their count grows with the trace. Two hashes
// of one tag are told apart by the pattern's full hash, resident or read
// back with its record. Its slots live outside the heap from 4 MB (mem).
type patIndex struct {
	slots []uint64 // tag<<32 | loc; 0: empty
	n     int
	mem   *offHeap
}

// A slot's loc is locResident | a position in spillTable.res, or a record
// of the spill file: its offset / spillAlign + 1 (never 0, so that a slot
// in use is never 0 either).
const locResident = 1 << 31

func patSlot(tag, loc uint32) uint64 { return uint64(tag)<<32 | uint64(loc) }

// home is the first slot probed for tag (the table is not empty): tags
// spread over the slots in order, whatever their number.
func (x *patIndex) home(tag uint32) int { return int(uint64(tag) * uint64(len(x.slots)) >> 32) }

// next is the slot probed after s.
func (x *patIndex) next(s int) int {
	if s++; s == len(x.slots) {
		s = 0
	}
	return s
}

// find returns the slot holding tag and loc, or −1.
func (x *patIndex) find(tag, loc uint32) int {
	if len(x.slots) == 0 {
		return -1
	}
	want := patSlot(tag, loc)
	for s := x.home(tag); x.slots[s] != 0; s = x.next(s) {
		if x.slots[s] == want {
			return s
		}
	}
	return -1
}

// add indexes a pattern of tag at loc (not indexed yet).
func (x *patIndex) add(tag, loc uint32) {
	if 10*(x.n+1) > 7*len(x.slots) {
		old := x.slots
		x.slots = offMake[uint64](x.mem, max(1024, len(old)+len(old)/2))
		for _, v := range old {
			if v != 0 {
				x.put(v)
			}
		}
		x.mem.release(unsafe.Pointer(unsafe.SliceData(old)))
	}
	x.put(patSlot(tag, loc))
	x.n++
}

// put places slot value v in the first free slot from its home.
func (x *patIndex) put(v uint64) {
	s := x.home(uint32(v >> 32))
	for x.slots[s] != 0 {
		s = x.next(s)
	}
	x.slots[s] = v
}

// free gives the slots back: x is not used again.
func (x *patIndex) free() {
	x.mem.release(unsafe.Pointer(unsafe.SliceData(x.slots)))
	x.slots, x.n = nil, 0
}

// tagIndex finds the spilled classes' records (classSpill) by 32 bits of
// their key's hash, 8 bytes a slot (a pairTable takes 16), at most 70 %
// full: a key's record is read back and its key compared, so two keys of
// one tag are told apart there (the second is kept in classSpill.collided).
// Its slots are split in tagParts tables by the hash's top bits, each grown
// (by 1.5×) on its own, outside the heap (mem): a growth has the old and
// the new slots of one part alive together, not of the whole index (12 MB
// for the CoDeeN-sized trace's spilled classes after an hour, which grew
// 8 MB → 12 MB at once).
type tagIndex struct {
	parts [tagParts]tagPart
	n     int
	mem   *offHeap
}

const tagParts = 64

type tagPart struct {
	slots []tagSlot
	n     int
}

type tagSlot struct {
	tag uint32
	rec int32 // record + 1; 0: empty
}

// part is tag's part and its hash within it.
func (x *tagIndex) part(tag uint32) (*tagPart, uint32) {
	h := mix(uint64(tag))
	return &x.parts[h>>58], uint32(h)
}

// slot is the slot of tag in p (hash h), or the empty slot where it would
// go (p is not empty).
func (p *tagPart) slot(tag, h uint32) int {
	s := int(uint64(h) * uint64(len(p.slots)) >> 32)
	for e := p.slots[s]; e.rec != 0 && e.tag != tag; e = p.slots[s] {
		if s++; s == len(p.slots) {
			s = 0
		}
	}
	return s
}

// get is the record of tag, if any.
func (x *tagIndex) get(tag uint32) (int32, bool) {
	p, h := x.part(tag)
	if len(p.slots) == 0 {
		return 0, false
	}
	e := p.slots[p.slot(tag, h)]
	return e.rec - 1, e.rec != 0
}

// put indexes record rec under tag (not indexed yet).
func (x *tagIndex) put(tag uint32, rec int32) {
	p, h := x.part(tag)
	if 10*(p.n+1) > 7*len(p.slots) {
		old := p.slots
		p.slots = offMap[tagSlot](x.mem, max(512, len(old)+len(old)/2))
		for _, e := range old {
			if e.rec != 0 {
				_, eh := x.part(e.tag)
				p.slots[p.slot(e.tag, eh)] = e
			}
		}
		if old != nil {
			x.mem.release(unsafe.Pointer(unsafe.SliceData(old)))
		}
	}
	p.slots[p.slot(tag, h)] = tagSlot{tag, rec + 1}
	p.n++
	x.n++
}
