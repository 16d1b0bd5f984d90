package linking

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"unsafe"

	"wap5/trace"
)

// DefaultStreamMemory is Options.StreamMemory's default: the bytes of
// pattern shapes and delay accumulators a Stream keeps in memory before it
// spills them.
const DefaultStreamMemory = 16 << 20

// spillTable is a Stream's pattern table (steps 3–4) with its memory bounded.
// Every pattern keeps a small entry in memory: its hash, count, expected
// count and maximum probability, summed in instance order exactly as an
// unbounded table sums them, and where its shape and delay accumulators
// are. Those are resident until all the resident ones outgrow the budget
// (Options.StreamMemory); then, at the end of a chunk, they are written
// to a spill file (a temporary file, 0600, created with O_EXCL in $TMPDIR
// and unlinked at once, so that it goes away with the process however it
// ends) and dropped, all but the frequent ones used in that chunk (up to
// half the budget), which would be read back at once. A pattern seen again reads its own back and goes on:
// every accumulator takes the same samples in the same order, with the same
// running sums, as if it had never left memory, so the result is bit for
// bit the unbounded table's, whatever spills. At the end the patterns are
// ranked by their entries (an array of entry indices) and built in rank
// order, each read back from where it was last written.
//
// The entries grow with the number of distinct patterns (≈ 50 bytes each
// with the hash table), not with their sizes or the trace's length.
type spillTable struct {
	a      *aggregator
	byHash entIndex // hash → entry
	ents   []patEntry
	res    []*pattern // resident patterns (pattern.idx is the entry)
	seen   []int32    // the chunk in which each resident pattern was last used
	chunk  int32      // the chunk being aggregated (spill counts them)
	// resBytes estimates the heap the resident patterns hold.
	resBytes int64
	budget   int64 // < 0: never spill

	f      *os.File // the spill file, made at the first spill
	w      *bufio.Writer
	end    int64 // bytes written to f
	buf    []byte
	spills int
	err    error
	warn   string // the spill file could not be made: patterns stay in memory

	// mem holds ents and byHash's slots outside the heap from 4 MB: they
	// grow with the distinct patterns (millions on a noisy trace), and in
	// the heap they would count twice towards the peak.
	mem offHeap
}

// patEntry is a pattern's entry in a spillTable.
type patEntry struct {
	hash     uint64
	expected float64
	maxProb  float64
	off      int64 // its last state in the spill file; −1: none
	count    int32
	res      int32 // position in spillTable.res; −1: not resident
}

func newSpillTable(a *aggregator, budget int64) *spillTable {
	t := &spillTable{a: a, budget: budget}
	t.byHash.mem = &t.mem
	return t
}

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
	_, ei := t.byHash.find(h, t.ents)
	if ei < 0 {
		ei = int32(len(t.ents))
		t.ents = append(offGrow(&t.mem, t.ents, 1), patEntry{hash: h, off: -1, res: -1})
		t.byHash.add(h, ei, t.ents)
	}
	e := &t.ents[ei]
	if e.res >= 0 {
		t.seen[e.res] = t.chunk
		return t.res[e.res]
	}
	var p *pattern
	if e.off >= 0 {
		var err error
		if p, err = t.read(e.off, len(o)); err != nil {
			if t.err == nil {
				t.err = err
			}
			p = nil
		}
	}
	if p == nil {
		n := len(o)
		p = &pattern{par: slices.Clone(a.cpar), closer: make([]int32, n),
			from: make([]int32, n), to: make([]int32, n), kind: make([]trace.Kind, n)}
		a.recs = a.records(a.recs[:0], ms, labels, o)
		fillShape(p.from, p.to, p.kind, p.closer, p.par, a.recs)
		p.acc = newPatAcc(n, false)
	}
	p.hash, p.idx, p.first = h, ei, -1
	e.res = int32(len(t.res))
	t.res = append(t.res, p)
	t.seen = append(t.seen, t.chunk)
	t.resBytes += residentSize(len(p.par))
	return p
}

// add counts an instance of probability prob of resident pattern p (as
// aggregator.add does).
func (t *spillTable) add(p *pattern, prob float64) {
	e := &t.ents[p.idx]
	e.count++
	e.expected += prob
	e.maxProb = math.Max(e.maxProb, prob)
}

// over says whether the resident patterns outgrow the budget.
func (t *spillTable) over() bool {
	return t.budget >= 0 && t.resBytes > t.budget && t.err == nil
}

// spill writes the resident patterns to the spill file and drops them,
// but for the frequent ones used in this chunk (seen at least keepCount
// times), up to half the budget: those would only be read back at once.
// Which patterns stay changes nothing but the work.
func (t *spillTable) spill() {
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
		e := &t.ents[p.idx]
		if size := residentSize(len(p.par)); t.seen[i] == t.chunk && e.count >= keepCount && keptBytes+size <= t.budget/2 {
			t.res[kept], t.seen[kept] = p, t.seen[i]
			e.res = int32(kept)
			kept++
			keptBytes += size
			continue
		}
		e.off, e.res = t.end, -1
		t.buf = appendPattern(t.buf[:0], p)
		if _, err := t.w.Write(t.buf); err != nil {
			t.err = fmt.Errorf("linking: writing the pattern spill file: %w", err)
			return
		}
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

// A spilled pattern: its position count n (uint32), then per position its
// canonical parent, closer, from and to labels (int32) and kind (a byte),
// then the running sums of its accumulators (net, wait, lat, off, each
// position's five float64s), little-endian.
const (
	spillPos = 4*4 + 1
	spillAcc = 5 * 8
)

func spillSize(n int) int { return 4 + n*(spillPos+4*spillAcc) }

func appendPattern(b []byte, p *pattern) []byte {
	n := len(p.par)
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(n))
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
	return b
}

// read reads back the pattern spilled at off (shape and accumulators; the
// caller sets the rest), of n positions when n > 0 (one read), else of
// the number written there.
func (t *spillTable) read(off int64, n int) (*pattern, error) {
	if n <= 0 {
		var head [4]byte
		if _, err := t.f.ReadAt(head[:], off); err != nil {
			return nil, fmt.Errorf("linking: reading the pattern spill file: %w", err)
		}
		n = int(binary.LittleEndian.Uint32(head[:]))
	}
	if n <= 0 || off+int64(spillSize(n)) > t.end {
		return nil, fmt.Errorf("linking: pattern spill file: bad pattern of %d positions at %d", n, off)
	}
	t.buf = slices.Grow(t.buf[:0], spillSize(n))[:spillSize(n)]
	if _, err := t.f.ReadAt(t.buf, off); err != nil && err != io.EOF {
		return nil, fmt.Errorf("linking: reading the pattern spill file: %w", err)
	}
	if int(binary.LittleEndian.Uint32(t.buf)) != n {
		return nil, fmt.Errorf("linking: pattern spill file: pattern at %d has %d positions, want %d", off, binary.LittleEndian.Uint32(t.buf), n)
	}
	return decodePattern(t.buf[4:], n), nil
}

func decodePattern(b []byte, n int) *pattern {
	le := binary.LittleEndian
	p := &pattern{par: make([]int32, n), closer: make([]int32, n),
		from: make([]int32, n), to: make([]int32, n), kind: make([]trace.Kind, n)}
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

// ranked returns the entries by expected count, then count, then hash (as
// aggregator.ranked orders patterns: a total order, hashes being distinct).
func (t *spillTable) ranked() []int32 {
	r := make([]int32, len(t.ents))
	for i := range r {
		r[i] = int32(i)
	}
	slices.SortFunc(r, func(x, y int32) int {
		p, q := &t.ents[x], &t.ents[y]
		return cmpRank(p.expected, q.expected, p.count, q.count, p.hash, q.hash)
	})
	return r
}

// take returns entry ei's pattern with its counts, resident or read back,
// and drops it from the table's memory: for building, once, in rank order.
func (t *spillTable) take(ei int32) (*pattern, error) {
	e := &t.ents[ei]
	var p *pattern
	switch {
	case e.res >= 0:
		p = t.res[e.res]
		t.res[e.res] = nil
		e.res = -1 // t.res is not used again
	case e.off >= 0:
		var err error
		if p, err = t.read(e.off, 0); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("linking: pattern %d has neither a shape in memory nor in the spill file", ei)
	}
	p.hash, p.idx, p.first = e.hash, ei, -1
	p.count, p.expected, p.maxProb = int(e.count), e.expected, e.maxProb
	return p, nil
}

// close removes the spill file (unlinked already: closing frees it) and
// gives back the entries: t is not used again.
func (t *spillTable) close() {
	if t.f != nil {
		t.f.Close()
		t.f, t.w = nil, nil
	}
	t.ents, t.byHash = nil, entIndex{}
	t.mem.free()
}
