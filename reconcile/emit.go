package reconcile

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"
	"unsafe"

	"wap5/internal/prefetch"
	"wap5/trace"
)

// Windowed emission (Options.Stream): step 9 done as the inputs are read.
//
// The matcher emits messages in the order it decides them, which is nearly
// but not exactly time order. Emitted messages are kept in blocks of
// chunkSize (as without streaming); a full block is sealed — its sort keys
// sorted stably by time — at the next observation, and then every message
// whose time lies below the watermark is merged out of the sealed blocks in
// time order, runs of one time put in canonical order (canon.go), renumbered
// into the output's tables, numbered and handed to the sink. A
// block is dropped once all its messages are out, so memory holds the
// messages of the window, not of the trace.
//
// The watermark is the earliest time a message decided from now on can
// have: the inputs' time (the merged clock, less the most negative clock
// offset of step 0, less streamSlack for sources slightly out of order) or
// the first byte of anything still in flight (send runs and receive runs
// not yet emitted, datagrams waiting for their other end), whichever is
// earlier; messages of the block still being filled wait for it to be
// sealed. So the output is exactly the order of the sort at the end, as
// long as nothing stays in flight longer than Options.SortWindow: the
// watermark never lags the inputs by more than that (memory stays bounded
// when a connection sits idle in the middle of a message, e.g. a
// keep-alive connection whose last response is only ended by the next
// request). A message decided later than that is written out of time order
// and counted in a warning (the text format allows any order; readers that
// need order sort).
//
// Emitted messages may still change: the return of a call not yet decided
// gets its kind and call later, and a message whose last byte was not yet
// read gets its receiving thread later. Such messages are held (by
// reference, msgRef) and not written until settled; a hold older than the
// sort window is written as it is (counted in a warning).

// streamSlack: how far behind the merged clock a source may still deliver
// an observation (sources are time-ordered on their own, up to small
// disorder, e.g. a capture's stragglers). A variable for tests.
var streamSlack = int64(100 * time.Millisecond)

// outBatch is how many messages are handed to the sink at once.
const outBatch = 4096

// msgRef names an emitted message: the index of its block (the high 32
// bits) and its position in the block. (Not a running index: chunkSize is a
// variable, and a division by it costs tens of cycles per use.)
type msgRef int64

// at is the block and the position r names.
func (r msgRef) at() (ci, i int) { return int(r >> 32), int(uint32(r)) }

// lastRef is the reference of the message emit just appended.
func (m *matcher) lastRef() msgRef {
	return msgRef(len(m.chunks))<<32 | msgRef(len(m.chunk)-1)
}

// msgAt finds an emitted message; nil once its block has been written out
// and dropped.
func (m *matcher) msgAt(r msgRef) *trace.Message {
	ci, i := r.at()
	if ci == len(m.chunks) {
		return &m.chunk[i]
	}
	if c := m.chunks[ci]; c != nil {
		return &c[i]
	}
	return nil
}

// holdMsg keeps message r from being written until unholdMsg (streaming only).
func (m *matcher) holdMsg(r msgRef) {
	if s := m.st; s != nil {
		ci, i := r.at()
		for len(s.chunkHolds) <= ci {
			s.chunkHolds = append(s.chunkHolds, 0)
			s.holds = append(s.holds, nil)
		}
		if s.holds[ci] == nil {
			if n := len(s.freeHolds); n > 0 {
				s.holds[ci], s.freeHolds = s.freeHolds[n-1], s.freeHolds[:n-1]
			} else {
				s.holds[ci] = make([]uint8, chunkSize)
			}
		}
		s.holds[ci][i]++
		s.chunkHolds[ci]++
	}
}

func (m *matcher) unholdMsg(r msgRef) {
	s := m.st
	if s == nil {
		return
	}
	ci, i := r.at()
	if ci >= len(s.holds) || s.holds[ci] == nil || s.holds[ci][i] == 0 {
		return // forced out already
	}
	s.holds[ci][i]--
	s.chunkHolds[ci]--
}

// sealed is a block whose sort keys are sorted; pos counts those written.
type sealed struct {
	ci   int
	keys []sortKey
	pos  int
}

// streamState is the emission window's state.
type streamState struct {
	sink       StreamSink
	window     int64 // Options.SortWindow
	minCorr    int64 // the most negative clock offset (step 0)
	sealedUpTo int   // blocks [0, sealedUpTo) are sealed
	live       []*sealed
	// holds counts the holds of each message of a block (nil: none
	// yet), chunkHolds those of the whole block; a block's counts go to
	// freeHolds when it is written out.
	holds      [][]uint8
	chunkHolds []int32
	freeHolds  [][]uint8
	out        []trace.Message
	calls      callWindow
	nextID     int64
	n          int
	lastT      int64
	free       [][]trace.Message // arrays of blocks written out, for new blocks
	freeKeys   [][]sortKey       // and of their keys
	lateNames  bool              // the sink takes endpoint names only at the end (LateNames)
	late       int64             // messages written out of time order
	forced     int64             // held messages written before they were settled
	err        error
}

func newStreamState(sink StreamSink, opts Options, minCorr int64) *streamState {
	w := int64(opts.SortWindow)
	if w <= 0 {
		w = int64(DefaultSortWindow)
	}
	inner := sink
	if p, ok := sink.(*prefixStream); ok {
		inner = p.StreamSink
	}
	_, late := inner.(LateNames)
	return &streamState{sink: sink, window: w, minCorr: minCorr, lateNames: late,
		out: make([]trace.Message, 0, outBatch), lastT: math.MinInt64, calls: newCallWindow()}
}

// maxFree bounds the arrays kept for new blocks.
const maxFree = 2

// newChunk is an empty block: a written-out block's array when streaming
// (fresh memory costs page faults and collections), else a new one.
func (m *matcher) newChunk() []trace.Message {
	if s := m.st; s != nil && len(s.free) > 0 {
		c := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		return c
	}
	return make([]trace.Message, 0, chunkSize)
}

// due reports whether a block is waiting to be sealed (checked between
// observations: emitted messages are complete then).
func (m *matcher) due() bool { return m.st != nil && len(m.chunks) > m.st.sealedUpTo }

// releaseMsgs seals the full blocks and writes every message below the
// watermark; final writes everything (the inputs are over).
func (m *matcher) releaseMsgs(final bool) error {
	s := m.st
	if s.err != nil {
		return s.err
	}
	if final && len(m.chunk) > 0 {
		m.chunks = append(m.chunks, m.chunk)
		m.chunk = nil
	}
	for ; s.sealedUpTo < len(m.chunks); s.sealedUpTo++ {
		var keys []sortKey
		if n := len(s.freeKeys); n > 0 {
			keys, s.freeKeys = s.freeKeys[n-1], s.freeKeys[:n-1]
		}
		keys = sortKeys(m.chunks[s.sealedUpTo], keys)
		s.live = append(s.live, &sealed{ci: s.sealedUpTo, keys: keys})
	}
	wm, floor := int64(math.MaxInt64), int64(math.MinInt64)
	if !final {
		now := m.now + s.minCorr
		floor = now - s.window
		wm = min(now-streamSlack, m.oldestPending())
		wm = max(wm, floor)
		for i := range m.chunk {
			wm = min(wm, m.chunk[i].Time())
		}
	}
	held := s.merge(m, wm, floor)
	if s.err == nil && len(s.out) > 0 {
		// Every message below wm is out unless a held one stopped the
		// merge: then more of the last time may still come.
		s.flush(m, final || !held)
	}
	return s.err
}

// oldestPending is the earliest time of a message not yet emitted: the
// first run of bytes of every connection end still waiting, every datagram
// waiting for its other end.
//
// The ends are those of m.pend (every end given a run since it was last
// looked at there) of connections not retired (a retired connection's
// ends have emitted everything, and a connection merged into another in
// step 6 hands its end over); an end with nothing left leaves the list.
func (m *matcher) oldestPending() int64 {
	const pendAhead = 8
	t := int64(math.MaxInt64)
	keep := m.pend[:0]
	for i, r := range m.pend {
		if i+pendAhead < len(m.pend) {
			// Each end is read once here since its last run: fetch ahead.
			prefetch.Lines(uintptr(unsafe.Pointer(m.pend[i+pendAhead].e)), endHot)
		}
		if !r.live() {
			continue // retired: its record is another end's now, or garbage
		}
		e := r.e
		if e.c.gone || len(e.runs) == 0 && len(e.rruns) == 0 {
			e.inPend = false
			continue
		}
		keep = append(keep, r)
		if len(e.runs) > 0 {
			t = min(t, e.runs[0].t)
		}
		if len(e.rruns) > 0 {
			t = min(t, e.rruns[0].t)
		}
	}
	clear(m.pend[len(keep):])
	m.pend = keep
	for _, mine := range [2]map[dgKey][]*dgram{m.dg.sends, m.dg.recvs} {
		for _, l := range mine {
			for _, d := range l {
				if !d.done {
					t = min(t, d.t)
				}
			}
		}
	}
	return t
}

// sortKeys returns the keys of one block sorted stably by time (the block
// itself is not moved: held messages are found by position).
func sortKeys(c []trace.Message, keys []sortKey) []sortKey {
	keys = slices.Grow(keys[:0], len(c))
	sorted := true
	for i := range c {
		k := sortKey{c[i].Time(), int32(i)}
		if i > 0 && k.t < keys[i-1].t {
			sorted = false
		}
		keys = append(keys, k)
	}
	if !sorted {
		sortByTime(keys)
	}
	return keys
}

// sortByTime sorts keys stably by time. A block is emitted nearly in time
// order, but for messages decided late: the keys at or above the running
// maximum stay where they are (they are in order), the others are sorted
// (by time, then position: the stable order) and merged in.
func sortByTime(keys []sortKey) {
	late := sortTmp.Get()
	b := (*late)[:0]
	a := keys[:0]
	hi := int64(math.MinInt64)
	for _, k := range keys {
		if k.t >= hi {
			hi = k.t
			a = append(a, k)
		} else {
			b = append(b, k)
		}
	}
	b = sortLate(b, late)
	// Merge from the back: position o is never before a's unread keys.
	i, j := len(a)-1, len(b)-1
	for o := len(keys) - 1; j >= 0; o-- {
		if i >= 0 && a[i].cmp(b[j]) > 0 {
			keys[o] = a[i]
			i--
		} else {
			keys[o] = b[j]
			j--
		}
	}
	*late = b
	sortTmp.Put(late)
}

// sortTmp holds sortByTime's arrays of late keys (and sortLate's second
// array). Not a sync.Pool: a pool drops its arrays at every collection,
// and each new one (half a megabyte for a block of 2^15 keys) was fresh
// heap, zeroed twice (the kernel's page fault, then the allocator); this
// list keeps a few for the life of the process.
var sortTmp tmpList

// tmpList is a free list of scratch arrays, safe for concurrent use
// (reconciliations may run side by side in one process).
type tmpList struct {
	mu   sync.Mutex
	free []*[]sortKey
}

// tmpKeep bounds the arrays a tmpList keeps.
const tmpKeep = 4

func (l *tmpList) Get() *[]sortKey {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		p := l.free[n-1]
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return p
	}
	l.mu.Unlock()
	return new([]sortKey)
}

func (l *tmpList) Put(p *[]sortKey) {
	l.mu.Lock()
	if len(l.free) < tmpKeep {
		l.free = append(l.free, p)
	}
	l.mu.Unlock()
}

// Radix sorting of late keys (sortLate): digits of radixBits bits, at most
// radixPasses of them (a wider span of times is compared instead), on at
// least radixMin keys (fewer are cheaper to compare).
const (
	radixBits   = 11
	radixPasses = 5
	radixMin    = 512
)

// sortLate sorts late keys, which are in position order, by time then
// position, and returns them (in b's array or in one of the pool's, whose
// pointer *spare then holds b's array: the pool keeps both). The keys of
// a block that came late are those of messages decided a window after
// their time, thousands to a block: a stable least-significant-digit radix
// sort by time (position order kept among equal times, as they come) costs
// a few passes over them instead of a comparison sort's log n rounds of
// calls.
func sortLate(b []sortKey, spare *[]sortKey) []sortKey {
	if len(b) < radixMin {
		slices.SortFunc(b, sortKey.cmp)
		return b
	}
	lo, hi := b[0].t, b[0].t
	for _, k := range b[1:] {
		lo, hi = min(lo, k.t), max(hi, k.t)
	}
	passes := (bits.Len64(uint64(hi-lo)) + radixBits - 1) / radixBits
	if passes > radixPasses {
		slices.SortFunc(b, sortKey.cmp)
		return b
	}
	tmp := sortTmp.Get()
	dst := slices.Grow((*tmp)[:0], len(b))[:len(b)]
	src := b
	var count [1 << radixBits]int
	for p := 0; p < passes; p++ {
		shift := uint(p * radixBits)
		clear(count[:])
		for _, k := range src {
			count[(uint64(k.t-lo)>>shift)&(1<<radixBits-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			d := (uint64(k.t-lo) >> shift) & (1<<radixBits - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	// src holds the result; the other array goes back to the pool.
	if passes%2 == 1 {
		*spare, *tmp = src[:0], b[:0]
	} else {
		*tmp = dst[:0]
	}
	sortTmp.Put(tmp)
	return src
}

// cmp orders keys by time, then position.
func (k sortKey) cmp(o sortKey) int {
	if c := cmp.Compare(k.t, o.t); c != 0 {
		return c
	}
	return cmp.Compare(k.idx, o.idx)
}

// mergeAhead is how many keys ahead merge fetches a block's message.
const mergeAhead = 16

// merge writes the sealed blocks' messages below wm in time order (ties
// to the earlier block; flush puts them in canonical order), stopping at a
// held message unless it is older than floor; stopped reports such a stop.
func (s *streamState) merge(m *matcher, wm, floor int64) (stopped bool) {
	for len(s.live) > 0 && s.err == nil {
		// The block with the earliest head, and the runner-up's head.
		bi := -1
		var bt, lt int64
		lb := -1
		for i, b := range s.live {
			if b.pos == len(b.keys) {
				continue
			}
			t := b.keys[b.pos].t
			switch {
			case bi < 0 || t < bt:
				if bi >= 0 {
					lt, lb = bt, bi
				}
				bi, bt = i, t
			case lb < 0 || t < lt:
				lt, lb = t, i
			}
		}
		if bi < 0 || bt >= wm {
			break
		}
		b := s.live[bi]
		c := m.chunks[b.ci]
		held := b.ci < len(s.chunkHolds) && s.chunkHolds[b.ci] > 0
		stop := false
		for b.pos < len(b.keys) {
			if j := b.pos + mergeAhead; j < len(b.keys) {
				// The block was filled a window ago: its messages are
				// out of the caches, and the keys' order is only
				// nearly theirs.
				prefetch.Lines(uintptr(unsafe.Pointer(&c[b.keys[j].idx])), unsafe.Sizeof(trace.Message{}))
			}
			k := b.keys[b.pos]
			if k.t >= wm || lb >= 0 && (k.t > lt || k.t == lt && lb < bi) {
				break
			}
			if held {
				if n := s.holds[b.ci][k.idx]; n > 0 {
					if k.t >= floor {
						stop = true
						break
					}
					s.holds[b.ci][k.idx] = 0
					s.chunkHolds[b.ci] -= int32(n)
					s.forced++
				}
			}
			if k.t < s.lastT {
				s.late++
			} else {
				s.lastT = k.t
			}
			s.out = append(s.out, c[k.idx])
			if len(s.out) >= outBatch {
				s.flush(m, false)
			}
			b.pos++
		}
		if b.pos == len(b.keys) {
			// Every message of the block is out: msgAt finds none of
			// them any more, so its array can take new ones.
			if len(s.free) < maxFree {
				s.free = append(s.free, c[:0])
				s.freeKeys = append(s.freeKeys, b.keys[:0])
			}
			m.chunks[b.ci] = nil
			if b.ci < len(s.holds) && s.holds[b.ci] != nil {
				// No hold is left: a held message stops the block
				// unless it is forced out (its count cleared).
				if len(s.freeHolds) < maxFree {
					s.freeHolds = append(s.freeHolds, s.holds[b.ci])
				}
				s.holds[b.ci] = nil
			}
			s.live = slices.Delete(s.live, bi, bi+1)
		}
		if stop {
			return true
		}
	}
	return false
}

// flush settles the messages gathered (step 9): runs of one time put in
// canonical order, renumbered into the output's tables (canon.go),
// numbered, and handed to the sink. Unless complete (nothing more of
// their times can come), the last run of one time waits for the next
// flush.
func (s *streamState) flush(m *matcher, complete bool) {
	cut := len(s.out)
	if !complete {
		cut = tieCut(s.out)
	}
	if cut == 0 {
		return
	}
	done := s.out[:cut]
	c := m.canon
	c.sortTies(done)
	c.remap(done)
	for i := range done {
		x := &done[i]
		x.ID = s.nextID
		s.nextID++
		if x.Kind != trace.KindNone && x.Call >= 0 {
			// a call numbered already (its return), inline; else number
			w := &s.calls
			if j := int(x.Call) - int(w.base); j >= 0 && j < len(w.ids) && w.ids[j] >= 0 {
				w.seen[j] |= kindBit(x.Kind)
				x.Call = w.ids[j]
			} else {
				x.Call = w.number(x.Call, x.Kind)
			}
		}
	}
	s.n += len(done)
	if s.err == nil {
		if !s.lateNames {
			c.nameEndpoints()
		}
		s.err = s.sink.Messages(m.t, done)
	}
	s.out = s.out[:copy(s.out, s.out[cut:])]
	s.calls.trim()
}

// warnings reports what the window could not keep in order.
func (s *streamState) warnings(t *trace.Trace) {
	if s.late > 0 {
		t.Warnf("%d messages were decided more than the sort window (%v) after their time and are written out of time order (a larger --sort-window keeps them in order)", s.late, time.Duration(s.window))
	}
	if s.forced > 0 {
		t.Warnf("%d messages were written before their return pairing or receiving thread was settled, more than the sort window (%v) after their time", s.forced, time.Duration(s.window))
	}
}

// callWindow renumbers calls in the order they are written (step 9) with
// memory for the calls in flight only: the matcher's call ids (handed out
// as calls are decided, nearly in time order) map to new ids through a
// slice over the ids still open, ids [base, base+len(ids)); an id is done
// once its call and its return have both been written. Done ids at the
// front are dropped; open ones left far behind (calls never answered) move
// to a map.
type callWindow struct {
	base int32
	ids  []int32 // new id, -1 before the first message with it
	seen []uint8 // kinds written: 1 call, 2 return
	over map[int32]callEntry
	next int32
}

type callEntry struct {
	id   int32
	seen uint8
}

// callFar: open ids more than this far behind the newest move to the map.
const callFar = 1 << 16

func newCallWindow() callWindow { return callWindow{over: map[int32]callEntry{}} }

func kindBit(k trace.Kind) uint8 {
	if k == trace.KindReturn {
		return 2
	}
	return 1
}

func (w *callWindow) number(old int32, k trace.Kind) int32 {
	if old < w.base {
		e, ok := w.over[old]
		if !ok || e.id < 0 {
			e.id = w.next
			w.next++
		}
		e.seen |= kindBit(k)
		if e.seen == 3 {
			delete(w.over, old)
		} else {
			w.over[old] = e
		}
		return e.id
	}
	i := int(old - w.base)
	for len(w.ids) <= i {
		w.ids = append(w.ids, -1)
		w.seen = append(w.seen, 0)
	}
	if w.ids[i] < 0 {
		w.ids[i] = w.next
		w.next++
	}
	w.seen[i] |= kindBit(k)
	return w.ids[i]
}

// trim drops the done ids at the front and moves open ones far behind to
// the map.
func (w *callWindow) trim() {
	j := 0
	for j < len(w.ids) && (w.seen[j] == 3 || len(w.ids)-j > callFar) {
		if w.seen[j] != 3 {
			w.over[w.base+int32(j)] = callEntry{id: w.ids[j], seen: w.seen[j]}
		}
		j++
	}
	if j == 0 {
		return
	}
	n := copy(w.ids, w.ids[j:])
	w.ids = w.ids[:n]
	copy(w.seen, w.seen[j:])
	w.seen = w.seen[:n]
	w.base += int32(j)
}
