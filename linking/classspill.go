package linking

import (
	"fmt"
	"io"
	"os"
	"slices"
	"unsafe"
)

// classSpill bounds a stream's carried classes (J2's delay models, carried
// from chunk to chunk): they grow with the combinations of sender, node and
// destination the trace meets, not with the window (CoDeeN-sized trace,
// 60 s chunks: ≈ 800,000 classes after an hour, ≈ 100 MB). The steps:
//
//  1. Every class entering a chunk's run is stamped with the chunk
//     (classModel.seen).
//  2. At the end of a chunk, when more classes are resident than the budget
//     holds (Options.StreamMemory, classResident bytes each), those the
//     chunk did not use are written to a spill file (a temporary file,
//     0600, O_EXCL, unlinked at once) — each class at its own record, the
//     one it had, or a new one at the end — and their slots are given back
//     for new classes.
//  3. A later chunk that meets a spilled class reads its record back: the
//     model and its moments as they were, bit for bit, so the linking is
//     the unbounded stream's. The records are found by an index outside
//     the heap (32 bits of the key's hash → record, ≈ 11 bytes a class); keys
//     whose tag another key holds are in a map of their own.
//  4. Stream.Close compares the delay families over every class, resident
//     or spilled, in key order (models.compare).
type classSpill struct {
	f        *os.File
	recs     int32    // records written
	idx      tagIndex // 32 bits of the key's hash → record, outside the heap (models.mem)
	collided map[classKey]int32
	buf, one []byte
	err      error
	warn     string // the spill file could not be made: classes stay in memory
	spills   int    // chunks that spilled
	reads    int    // classes read back
}

// classRef is a resident class and its record in the spill file (−1: none
// yet).
type classRef struct {
	c   *classModel
	rec int32
}

// A class's record: its key, the model and its moments as they are in
// memory (pointer-free values, read back by this process only), and
// whether it has moments.
const (
	recKey   = int(unsafe.Sizeof(classKey{}))
	recModel = int(unsafe.Sizeof(classModel{}))
	recMom   = int(unsafe.Sizeof(moments{}))
	recSize  = recKey + recModel + recMom + 8
)

// classResident estimates the memory of a resident class: its slot, its
// moments and its map entry.
const classResident = recModel + recMom + 48

// keyTag is the spill index's key of k.
func keyTag(k classKey) uint32 {
	return uint32(hashClassKey(k))
}

func appendBytes[T any](b []byte, v *T) []byte {
	return append(b, unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))...)
}

func fromBytes[T any](b []byte, v *T) {
	copy(unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v)), b)
}

// evict is steps 1–2: the classes the chunk just linked did not use go to
// the spill file where more than budget bytes of classes are resident
// (budget < 0: never).
func (m *models) evict(budget int64) {
	if budget < 0 || int64(m.class.n)*int64(classResident) <= budget {
		return
	}
	s := m.spill
	if s == nil {
		f, err := os.CreateTemp("", ".wap5-classes-*")
		if err != nil {
			m.spill = &classSpill{warn: fmt.Sprintf("linking: class spill file: %v: delay models kept in memory (--window-memory not held)", err)}
			return
		}
		os.Remove(f.Name()) // goes away with the process, however it ends
		s = &classSpill{f: f, collided: map[classKey]int32{}}
		s.idx.mem = &m.mem
		m.spill = s
	}
	if s.f == nil || s.err != nil {
		return
	}
	cur := uint16(m.chunk)
	start := s.recs // the records appended from here
	s.buf = s.buf[:0]
	// (A deletion may move a later class into the slot: it is looked at
	// again; see classTab.del.)
	for slot := 0; slot < len(m.class.slots); {
		e := &m.class.slots[slot]
		if e.c == nil || e.c.seen == cur {
			slot++
			continue
		}
		k, r := e.k, classRef{e.c, e.rec}
		b := m.record(s.one[:0], k, r.c)
		s.one = b
		if r.rec >= 0 {
			if _, err := s.f.WriteAt(b, int64(r.rec)*int64(recSize)); err != nil {
				s.err = fmt.Errorf("linking: writing the class spill file: %w", err)
				return
			}
		} else {
			if len(s.buf) >= spillBlock {
				if !s.write(start) {
					return
				}
				start = s.recs
			}
			r.rec = s.recs
			s.recs++
			s.buf = append(s.buf, b...)
			h := keyTag(k)
			if _, ok := s.idx.get(h); ok {
				s.collided[k] = r.rec
			} else {
				s.idx.put(h, r.rec)
			}
		}
		m.class.del(slot)
		if r.c.momAt > 0 {
			m.freeMom = append(m.freeMom, r.c.momAt)
		}
		*r.c = classModel{}
		m.freeCls = append(m.freeCls, r.c)
	}
	if s.write(start) {
		s.spills++
	}
}

// spillBlock is how many bytes of new records evict writes at once.
const spillBlock = 1 << 20

// write writes the records in s.buf, the first being record start, and
// empties s.buf.
func (s *classSpill) write(start int32) bool {
	if _, err := s.f.WriteAt(s.buf, int64(start)*int64(recSize)); err != nil {
		s.err = fmt.Errorf("linking: writing the class spill file: %w", err)
		return false
	}
	s.buf = s.buf[:0]
	return true
}

// record appends class c of key k as a record to b.
func (m *models) record(b []byte, k classKey, c *classModel) []byte {
	b = appendBytes(b, &k)
	b = appendBytes(b, c)
	var mo moments
	has := uint64(0)
	if c.momAt > 0 {
		mo, has = m.moms[c.momAt-1], 1
	}
	b = appendBytes(b, &mo)
	return appendBytes(b, &has)
}

// reload is step 3: class k read back from the spill file and resident
// again, or nil where k was never spilled.
func (m *models) reload(k classKey) *classModel {
	s := m.spill
	if s == nil || s.f == nil || s.err != nil {
		return nil
	}
	rec, ok := s.collided[k]
	if !ok {
		if rec, ok = s.idx.get(keyTag(k)); !ok {
			return nil
		}
	}
	s.buf = slices.Grow(s.buf[:0], recSize)[:recSize]
	if _, err := s.f.ReadAt(s.buf, int64(rec)*int64(recSize)); err != nil {
		s.err = fmt.Errorf("linking: reading the class spill file: %w", err)
		return nil
	}
	var rk classKey
	fromBytes(s.buf, &rk)
	if rk != k {
		return nil // another key's hash (k was never spilled)
	}
	c := m.newClass()
	fromBytes(s.buf[recKey:], c)
	c.momAt = 0
	if s.buf[recSize-8] == 1 {
		var mo moments
		fromBytes(s.buf[recKey+recModel:], &mo)
		*m.newMoments(c) = mo
	}
	m.class.set(k, classRef{c: c, rec: rec})
	s.reads++
	return c
}

// newClass is a slot for a carried class: one given back by evict, else
// from the models' slab, of up to 64k classes, outside the heap (offMap:
// the slabs live as long as the stream).
func (m *models) newClass() *classModel {
	if n := len(m.freeCls); n > 0 {
		c := m.freeCls[n-1]
		m.freeCls = m.freeCls[:n-1]
		return c
	}
	if len(m.slab) == 0 {
		m.slab = offMap[classModel](&m.mem, min(1<<16, max(1024, m.class.n)))
		m.slabs = append(m.slabs, m.slab)
	}
	c := &m.slab[0]
	m.slab = m.slab[1:]
	return c
}

// newMoments gives class c (without any) empty moments, and returns them:
// valid until the next call.
func (m *models) newMoments(c *classModel) *moments {
	if n := len(m.freeMom); n > 0 {
		c.momAt = m.freeMom[n-1]
		m.freeMom = m.freeMom[:n-1]
	} else {
		m.moms = append(offGrow(&m.mem, m.moms, 1), moments{})
		c.momAt = int32(len(m.moms))
	}
	mo := &m.moms[c.momAt-1]
	*mo = moments{}
	return mo
}

// keyedMoments are a class's key and moments, for models.compare.
type keyedMoments struct {
	k  classKey
	mo moments
}

// allMoments is step 4's list: the moments of every class with at least
// two delays (compareFits skips the others), resident or spilled, in key
// order.
func (m *models) allMoments() ([]keyedMoments, error) {
	var out []keyedMoments
	for i := range m.class.slots {
		k, r := m.class.slots[i].k, m.class.slots[i]
		if r.c != nil && r.c.momAt > 0 {
			if mo := m.moms[r.c.momAt-1]; mo.n >= 2 {
				out = append(out, keyedMoments{k, mo})
			}
		}
	}
	if s := m.spill; s != nil && s.f != nil && s.err == nil && s.recs > 0 {
		// Each key has one record; a resident class's is stale.
		buf := make([]byte, 4096*recSize)
		for at := int64(0); at < int64(s.recs); at += 4096 {
			n := min(int64(s.recs)-at, 4096)
			b := buf[:int(n)*recSize]
			if _, err := s.f.ReadAt(b, at*int64(recSize)); err != nil && err != io.EOF {
				return nil, fmt.Errorf("linking: reading the class spill file: %w", err)
			}
			for ; len(b) > 0; b = b[recSize:] {
				var k classKey
				fromBytes(b, &k)
				if m.class.find(k) >= 0 || b[recSize-8] != 1 {
					continue
				}
				var mo moments
				fromBytes(b[recKey+recModel:], &mo)
				if mo.n >= 2 {
					out = append(out, keyedMoments{k, mo})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b keyedMoments) int { return compareClassKeys(a.k, b.k) })
	return out, nil
}

// classTab holds a stream's resident classes by key (models.class): open
// addressing (linear probing) outside the heap (mem), 32 bytes a slot. As a
// Go map it was live heap counted about twice towards the peak, and a map
// never shrinks: evict's deletions left it at the size of its largest
// chunk, or larger (CoDeeN-sized trace: 4.7 MB after six minutes, 8.8 MB
// after an hour). A deletion moves the later classes of its run of slots
// back (no deleted marks), so the table only grows, by doubling, as the
// resident classes reach three quarters of it — in the first chunks, until
// the budget holds them. Its slots point to classes in the models' slabs,
// kept alive by models.slabs.
type classTab struct {
	slots []classSlot
	n     int // classes
	mem   *offHeap
}

type classSlot struct {
	k   classKey
	c   *classModel // nil: empty
	rec int32       // the spill file's record (−1: none)
}

func hashClassKey(k classKey) uint64 {
	a := uint64(uint32(k.trig))<<32 | uint64(uint32(k.node))
	b := uint64(uint32(k.act)) << 2
	if k.reply {
		b |= 2
	}
	if k.ret {
		b |= 1
	}
	return mix(a ^ mix(b))
}

// home is the first slot probed for k (the table is not empty).
func (t *classTab) home(k classKey) int { return int(hashClassKey(k)) & (len(t.slots) - 1) }

// find is the slot of k, or −1.
func (t *classTab) find(k classKey) int {
	if len(t.slots) == 0 {
		return -1
	}
	mask := len(t.slots) - 1
	for s := t.home(k); t.slots[s].c != nil; s = (s + 1) & mask {
		if t.slots[s].k == k {
			return s
		}
	}
	return -1
}

// get is k's class, if resident.
func (t *classTab) get(k classKey) (classRef, bool) {
	if s := t.find(k); s >= 0 {
		return classRef{t.slots[s].c, t.slots[s].rec}, true
	}
	return classRef{}, false
}

// set makes r k's class (r.c not nil).
func (t *classTab) set(k classKey, r classRef) {
	if s := t.find(k); s >= 0 {
		t.slots[s].c, t.slots[s].rec = r.c, r.rec
		return
	}
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	t.put(classSlot{k, r.c, r.rec})
	t.n++
}

// put places e in the first empty slot from its home.
func (t *classTab) put(e classSlot) {
	mask := len(t.slots) - 1
	s := t.home(e.k)
	for t.slots[s].c != nil {
		s = (s + 1) & mask
	}
	t.slots[s] = e
}

// del removes slot s's class: the classes after it in its run of slots
// that may move back do (a class moves to s only from a later slot, or
// from the run's wrapped start, so a scan of the slots in order that looks
// at s again after the deletion still meets every class).
func (t *classTab) del(s int) {
	mask := len(t.slots) - 1
	for j := (s + 1) & mask; t.slots[j].c != nil; j = (j + 1) & mask {
		// The class at j may fill the hole at s when its home is not
		// cyclically within (s, j].
		if h := t.home(t.slots[j].k); (j-h)&mask >= (j-s)&mask {
			t.slots[s] = t.slots[j]
			s = j
		}
	}
	t.slots[s] = classSlot{}
	t.n--
}

// grow doubles the slots (256 at first), the old ones given back at once.
func (t *classTab) grow() {
	old := t.slots
	t.slots = offMap[classSlot](t.mem, max(256, 2*len(old)))
	for _, e := range old {
		if e.c != nil {
			t.put(e)
		}
	}
	if old != nil {
		t.mem.release(unsafe.Pointer(unsafe.SliceData(old)))
	}
}

// reset empties the table (its slots given back with mem).
func (t *classTab) reset() { t.slots, t.n = nil, 0 }
