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
//     the heap (32 bits of the key's hash → record, ≈ 16 bytes a class); keys
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
	a := uint64(uint32(k.trig))<<32 | uint64(uint32(k.node))
	b := uint64(uint32(k.act)) << 2
	if k.reply {
		b |= 2
	}
	if k.ret {
		b |= 1
	}
	return uint32(mix(a ^ mix(b)))
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
	if budget < 0 || int64(len(m.class))*int64(classResident) <= budget {
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
	for k, r := range m.class {
		if r.c.seen == cur {
			continue
		}
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
		delete(m.class, k)
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
	m.class[k] = classRef{c: c, rec: rec}
	s.reads++
	return c
}

// newClass is a slot for a carried class: one given back by evict, else
// from the models' slab, of up to 64k classes, outside the heap from 4 MB.
func (m *models) newClass() *classModel {
	if n := len(m.freeCls); n > 0 {
		c := m.freeCls[n-1]
		m.freeCls = m.freeCls[:n-1]
		return c
	}
	if len(m.slab) == 0 {
		m.slab = offMake[classModel](&m.mem, min(1<<16, max(1024, len(m.class))))
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
	for k, r := range m.class {
		if r.c.momAt > 0 {
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
				if _, ok := m.class[k]; ok || b[recSize-8] != 1 {
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
