package linking

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"wap5/trace"
)

// DefaultStreamMemory is Options.StreamMemory's default: the bytes of
// pattern shapes and delay accumulators a Stream keeps in memory before it
// spills them.
const DefaultStreamMemory = 16 << 20

// spillTable is a Stream's pattern table (steps 3–4) with its memory bounded.
// A pattern's shape, delay accumulators and counts (count, expected count
// and maximum probability, summed in instance order exactly as an unbounded
// table sums them) are resident until all the resident ones outgrow the
// budget (Options.StreamMemory); then, at the end of a chunk, they are
// written to a spill file (a temporary file, 0600, created with O_EXCL in
// $TMPDIR and unlinked at once, so that it goes away with the process
// however it ends) and dropped, all but the frequent ones used in that
// chunk (up to half the budget), which would be read back at once. A
// pattern seen again reads its own back and goes on: every accumulator
// takes the same samples in the same order, with the same running sums, as
// if it had never left memory, so the result is bit for bit the unbounded
// table's, whatever spills.
//
// What stays in memory of every pattern is its slot in the index (hash →
// resident pattern or record, slotindex.go): ≈ 13 bytes, where an entry of
// its counts (40 bytes) would grow the stream's memory with the trace. At
// the end the patterns are ranked — their counts gathered from the resident
// ones and from the spill file's current records in one pass — and built
// in rank order, each read back from where it was last written.
type spillTable struct {
	a     *aggregator
	index patIndex   // hash → resident pattern or record
	pats  int32      // the patterns made: ids 0…pats−1 in order of first instance
	res   []*pattern // resident patterns (pattern.idx is the id)
	seen  []int32    // the chunk in which each resident pattern was last used
	chunk int32      // the chunk being aggregated (spill counts them)
	// tagMask keeps the bits of the index's tags (all; tests keep fewer, so
	// that tags collide).
	tagMask uint32
	// resBytes estimates the heap the resident patterns hold.
	resBytes int64
	budget   int64 // < 0: never spill

	f      *os.File // the spill file, made at the first spill
	w      *bufio.Writer
	end    int64 // bytes written to f (a multiple of spillAlign)
	buf    []byte
	spills int
	err    error
	warn   string // the spill file could not be made: patterns stay in memory

	// mem holds the index's slots outside the heap from 4 MB: they grow
	// with the distinct patterns, and in the heap they would count twice
	// towards the peak.
	mem offHeap
}

// patTagMask is a new spillTable's tagMask (tests narrow it).
var patTagMask = ^uint32(0)

func newSpillTable(a *aggregator, budget int64) *spillTable {
	t := &spillTable{a: a, budget: budget, tagMask: patTagMask}
	t.index.mem = &t.mem
	return t
}

// tag is hash h's tag in the index: 32 bits of h mixed.
func (t *spillTable) tag(h uint64) uint32 { return uint32(mix(h)>>32) & t.tagMask }

// residentSize estimates the heap a resident pattern of n positions holds:
// the pattern, its shape and its four accumulators per position.
func residentSize(n int) int64 {
	const acc = int64(unsafe.Sizeof(trace.Accumulator{}))
	return int64(unsafe.Sizeof(pattern{})+unsafe.Sizeof(patAcc{})) + int64(n)*(4*acc+4*4+1)
}

// get returns the resident pattern of the instance whose canonical order
// aggregator.order just found (hash h, canonical parents in a.cpar, the
// messages o of ms in canonical order), making it or reading it back.
func (t *spillTable) get(h uint64, ms []trace.Message, labels []int32, o []int32) *pattern {
	a := t.a
	tag := t.tag(h)
	// 1. The slots of h's tag, from its home: a resident pattern of hash h
	// is returned, a record of hash h read back (slot s then moves it to
	// the residents); other hashes of the tag are passed over.
	var p *pattern
	s := -1
	for k := 0; k < len(t.index.slots); k++ {
		if k == 0 {
			s = t.index.home(tag)
		} else {
			s = t.index.next(s)
		}
		v := t.index.slots[s]
		if v == 0 {
			break
		}
		if uint32(v>>32) != tag {
			continue
		}
		if loc := uint32(v); loc&locResident != 0 {
			r := loc &^ locResident
			if q := t.res[r]; q.hash == h {
				t.seen[r] = t.chunk
				return q
			}
		} else {
			q, err := t.readMatch(recOff(loc), len(o), h)
			if err != nil {
				if t.err == nil {
					t.err = err
				}
				break // made anew: the result is wrong, and t.err says so
			}
			if q != nil {
				p = q
				break
			}
		}
	}
	r := uint32(len(t.res))
	if p != nil {
		t.index.slots[s] = patSlot(tag, locResident|r)
	} else {
		// 2. A new pattern: its shape from this instance, and the next id.
		n := len(o)
		p = &pattern{par: slices.Clone(a.cpar), closer: make([]int32, n),
			from: make([]int32, n), to: make([]int32, n), kind: make([]trace.Kind, n)}
		a.recs = a.records(a.recs[:0], ms, labels, o)
		fillShape(p.from, p.to, p.kind, p.closer, p.par, a.recs)
		p.acc = newPatAcc(n, false)
		p.hash, p.idx = h, t.pats
		t.pats++
		t.index.add(tag, locResident|r)
	}
	p.first = -1
	t.res = append(t.res, p)
	t.seen = append(t.seen, t.chunk)
	t.resBytes += residentSize(len(p.par))
	return p
}

// over says whether the resident patterns outgrow the budget.
func (t *spillTable) over() bool {
	return t.budget >= 0 && t.resBytes > t.budget && t.err == nil
}

// spill writes the resident patterns to the spill file and drops them,
// but for the frequent ones used in this chunk (seen at least keepCount
// times), up to half the budget: those would only be read back at once.
// Which patterns stay changes nothing but the work. With all, none stays.
func (t *spillTable) spill(all bool) {
	if t.f == nil {
		f, err := os.CreateTemp("", ".wap5-patterns-*")
		if err != nil {
			// Nothing is lost yet: the patterns stay in memory (the
			// result is the same; only the memory bound is given up).
			t.warn = fmt.Sprintf("linking: pattern spill file: %v: patterns kept in memory (--window-memory not held)", err)
			t.budget = -1
			return
		}
		// Unlinked at once: the file goes away with the process, however
		// it ends.
		os.Remove(f.Name())
		t.f, t.w = f, bufio.NewWriterSize(f, 1<<16)
	}
	kept, keptBytes := 0, int64(0)
	for i, p := range t.res {
		// Its slot moves with it: to its new place among the residents or
		// to its record. (A resident position is held by one slot only:
		// those kept move down, to positions already passed.)
		tag := t.tag(p.hash)
		s := t.index.find(tag, locResident|uint32(i))
		if s < 0 {
			t.err = fmt.Errorf("linking: pattern table: resident pattern %d not indexed", i)
			return
		}
		if size := residentSize(len(p.par)); !all && t.seen[i] == t.chunk && p.count >= keepCount && keptBytes+size <= t.budget/2 {
			t.res[kept], t.seen[kept] = p, t.seen[i]
			t.index.slots[s] = patSlot(tag, locResident|uint32(kept))
			kept++
			keptBytes += size
			continue
		}
		if t.end >= maxSpill {
			t.err = fmt.Errorf("linking: pattern spill file: larger than %d GB", maxSpill>>30)
			return
		}
		t.buf = appendPattern(t.buf[:0], p)
		if _, err := t.w.Write(t.buf); err != nil {
			t.err = fmt.Errorf("linking: writing the pattern spill file: %w", err)
			return
		}
		t.index.slots[s] = patSlot(tag, recLoc(t.end))
		t.end += int64(len(t.buf))
	}
	if err := t.w.Flush(); err != nil {
		t.err = fmt.Errorf("linking: writing the pattern spill file: %w", err)
		return
	}
	clear(t.res[kept:])
	t.res, t.seen, t.resBytes = t.res[:kept], t.seen[:kept], keptBytes
	t.spills++
}

// keepCount is how many instances a pattern used in the chunk that spills
// must have had to stay resident.
const keepCount = 3

// endChunk counts a chunk aggregated.
func (t *spillTable) endChunk() { t.chunk++ }

// A spilled pattern: its position count n (uint32), id (uint32), hash
// (uint64), count (uint32), expected count and maximum probability
// (float64), then per position its canonical parent, closer, from and to
// labels (int32) and kind (a byte), then the running sums of its
// accumulators (net, wait, lat, off, each position's five float64s),
// little-endian, padded with zeros to a multiple of spillAlign bytes.
const (
	spillHead  = 4 + 4 + 8 + 4 + 8 + 8
	spillPos   = 4*4 + 1
	spillAcc   = 5 * 8
	spillAlign = 64
	// maxSpill bounds the spill file: a record's loc holds its offset in
	// 31 bits of spillAlign bytes.
	maxSpill = int64(locResident-1) * spillAlign
)

func spillSize(n int) int { return spillHead + n*(spillPos+4*spillAcc) }

// recLoc and recOff convert a record's offset to its loc in the index and
// back.
func recLoc(off int64) uint32 { return uint32(off/spillAlign) + 1 }
func recOff(loc uint32) int64 { return int64(loc-1) * spillAlign }

func appendPattern(b []byte, p *pattern) []byte {
	n := len(p.par)
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(n))
	b = le.AppendUint32(b, uint32(p.idx))
	b = le.AppendUint64(b, p.hash)
	b = le.AppendUint32(b, uint32(int32(p.count)))
	b = le.AppendUint64(b, math.Float64bits(p.expected))
	b = le.AppendUint64(b, math.Float64bits(p.maxProb))
	for j := 0; j < n; j++ {
		b = le.AppendUint32(b, uint32(p.par[j]))
		b = le.AppendUint32(b, uint32(p.closer[j]))
		b = le.AppendUint32(b, uint32(p.from[j]))
		b = le.AppendUint32(b, uint32(p.to[j]))
		b = append(b, byte(p.kind[j]))
	}
	for _, accs := range [][]trace.Accumulator{p.acc.net, p.acc.wait, p.acc.lat, p.acc.off} {
		for j := range accs {
			s := accs[j].State()
			for _, v := range [5]float64{s.W, s.Mean, s.S2, s.Min, s.Max} {
				b = le.AppendUint64(b, math.Float64bits(v))
			}
		}
	}
	for len(b)%spillAlign != 0 {
		b = append(b, 0)
	}
	return b
}

// spillHeader is a record's head.
type spillHeader struct {
	n, id    int
	hash     uint64
	count    int32
	expected float64
	maxProb  float64
}

func decodeHeader(b []byte) spillHeader {
	le := binary.LittleEndian
	return spillHeader{n: int(le.Uint32(b)), id: int(le.Uint32(b[4:])), hash: le.Uint64(b[8:]),
		count: int32(le.Uint32(b[16:])), expected: math.Float64frombits(le.Uint64(b[20:])),
		maxProb: math.Float64frombits(le.Uint64(b[28:]))}
}

// readMatch reads back the record at off when it is the pattern of hash h
// (of n positions), in one read; nil (and no error) when it is another
// pattern's, whose hash has the same tag.
func (t *spillTable) readMatch(off int64, n int, h uint64) (*pattern, error) {
	size := min(int64(spillSize(n)), t.end-off)
	if size < spillHead {
		return nil, fmt.Errorf("linking: pattern spill file: no record at %d", off)
	}
	t.buf = slices.Grow(t.buf[:0], int(size))[:size]
	if _, err := t.f.ReadAt(t.buf, off); err != nil && err != io.EOF {
		return nil, fmt.Errorf("linking: reading the pattern spill file: %w", err)
	}
	hd := decodeHeader(t.buf)
	if hd.hash != h {
		return nil, nil
	}
	if hd.n != n {
		return nil, fmt.Errorf("linking: pattern spill file: pattern at %d has %d positions, want %d", off, hd.n, n)
	}
	return decodePattern(t.buf, hd), nil
}

// read reads back the record at off: in one read of readGuess bytes when
// it is no longer (most are: a system call costs more here than the bytes
// it copies), else a second read for the rest.
func (t *spillTable) read(off int64) (*pattern, error) {
	first := min(readGuess, t.end-off)
	if first < spillHead {
		return nil, fmt.Errorf("linking: pattern spill file: no record at %d", off)
	}
	t.buf = slices.Grow(t.buf[:0], int(first))[:first]
	if _, err := t.f.ReadAt(t.buf, off); err != nil && err != io.EOF {
		return nil, fmt.Errorf("linking: reading the pattern spill file: %w", err)
	}
	hd := decodeHeader(t.buf)
	size := int64(spillSize(hd.n))
	if hd.n <= 0 || off+size > t.end {
		return nil, fmt.Errorf("linking: pattern spill file: bad pattern of %d positions at %d", hd.n, off)
	}
	if size > first {
		t.buf = slices.Grow(t.buf, int(size-first))[:size]
		if _, err := t.f.ReadAt(t.buf[first:], off+first); err != nil && err != io.EOF {
			return nil, fmt.Errorf("linking: reading the pattern spill file: %w", err)
		}
	}
	return decodePattern(t.buf[:size], hd), nil
}

// readGuess is how much read reads at first: a record of up to 11
// positions. (A variable for the tests, which make it a record's head.)
var readGuess int64 = 2048

// decodePattern decodes record b, whose head is hd.
func decodePattern(b []byte, hd spillHeader) *pattern {
	le := binary.LittleEndian
	n := hd.n
	b = b[spillHead:]
	p := &pattern{par: make([]int32, n), closer: make([]int32, n),
		from: make([]int32, n), to: make([]int32, n), kind: make([]trace.Kind, n),
		hash: hd.hash, idx: int32(hd.id), count: int(hd.count), expected: hd.expected, maxProb: hd.maxProb, first: -1}
	for j := 0; j < n; j++ {
		p.par[j] = int32(le.Uint32(b))
		p.closer[j] = int32(le.Uint32(b[4:]))
		p.from[j] = int32(le.Uint32(b[8:]))
		p.to[j] = int32(le.Uint32(b[12:]))
		p.kind[j] = trace.Kind(b[16])
		b = b[spillPos:]
	}
	p.acc = newPatAcc(n, false)
	for _, accs := range [][]trace.Accumulator{p.acc.net, p.acc.wait, p.acc.lat, p.acc.off} {
		for j := range accs {
			var v [5]float64
			for k := range v {
				v[k] = math.Float64frombits(le.Uint64(b))
				b = b[8:]
			}
			accs[j].SetState(trace.AccumulatorState{W: v[0], Mean: v[1], S2: v[2], Min: v[3], Max: v[4]})
		}
	}
	return p
}

// rankEnt is a pattern as the ranking sees it: its counts, its hash and
// where it is (a loc of the index).
type rankEnt struct {
	expected, maxProb float64
	hash              uint64
	count             int32
	loc               uint32
}

// ranked returns the patterns by expected count, then count, then hash (as
// aggregator.ranked orders patterns: a total order, hashes being distinct).
// Where there is a spill file, all the resident patterns go there too, and
// the index is given back, before the ranking's array is made: the memory
// they held makes it (it grows with the patterns, 32 bytes each), and the
// stream's peak is not raised at its end. Only take follows.
func (t *spillTable) ranked() ([]rankEnt, error) {
	// 1. Everything to the spill file, where there is one: each pattern's
	// last record is then its state.
	if t.f != nil && t.err == nil {
		t.spill(true)
	}
	if t.err != nil {
		return nil, t.err
	}
	t.index.free()
	runtime.GC()
	r := make([]rankEnt, t.pats)
	// 2. The records in file order: a pattern's later record replaces its
	// earlier ones.
	if t.f != nil {
		br := bufio.NewReaderSize(io.NewSectionReader(t.f, 0, t.end), 1<<16)
		var head [spillHead]byte
		for off := int64(0); off < t.end; {
			if _, err := io.ReadFull(br, head[:]); err != nil {
				return nil, fmt.Errorf("linking: reading the pattern spill file: %w", err)
			}
			hd := decodeHeader(head[:])
			size := int64(spillSize(hd.n)+spillAlign-1) &^ (spillAlign - 1)
			if hd.n <= 0 || off+size > t.end || hd.id >= len(r) {
				return nil, fmt.Errorf("linking: pattern spill file: bad pattern %d of %d positions at %d", hd.id, hd.n, off)
			}
			r[hd.id] = rankEnt{hd.expected, hd.maxProb, hd.hash, hd.count, recLoc(off)}
			if _, err := br.Discard(int(size) - spillHead); err != nil {
				return nil, fmt.Errorf("linking: reading the pattern spill file: %w", err)
			}
			off += size
		}
	}
	// 3. The resident patterns (none where the patterns spilled).
	for i, p := range t.res {
		r[p.idx] = rankEnt{p.expected, p.maxProb, p.hash, int32(p.count), locResident | uint32(i)}
	}
	for id := range r {
		if r[id].loc == 0 {
			return nil, fmt.Errorf("linking: pattern table: pattern %d neither resident nor in the spill file", id)
		}
	}
	slices.SortFunc(r, func(p, q rankEnt) int {
		return cmpRank(p.expected, q.expected, p.count, q.count, p.hash, q.hash)
	})
	return r, nil
}

// take returns the pattern of e with its counts, resident or read back, and
// drops it from the table's memory: for building, once, in rank order.
func (t *spillTable) take(e rankEnt) (*pattern, error) {
	if e.loc&locResident != 0 {
		r := e.loc &^ locResident
		p := t.res[r]
		t.res[r] = nil
		return p, nil
	}
	return t.read(recOff(e.loc))
}

// close removes the spill file (unlinked already: closing frees it) and
// gives back the index: t is not used again.
func (t *spillTable) close() {
	if t.f != nil {
		t.f.Close()
		t.f, t.w = nil, nil
	}
	t.index = patIndex{mem: &t.mem}
	t.mem.free()
}
