package linking

import (
	"math"
	"slices"
	"unsafe"

	"wap5/internal/prefetch"
	"wap5/trace"
)

// linker holds one run over one trace (or one chunk of a stream).
type linker struct {
	t    *trace.Trace
	o    Options
	msgs []trace.Message
	x    int64 // window, ns

	edge    []int32 // per message: id of its directed node pair
	edgeSrc []trace.NodeID
	edgeDst []trace.NodeID

	// Per node, CSR: received messages with a known receive time, by
	// receive time; sent messages with a known send time, by send time.
	inStart, ins []int32
	insRecv      []int64 // receive times, aligned with ins
	// Per message, where its candidate parents end (−1: none): with a
	// known send time, the position within ins (insRecv) of the last
	// message the sender received at or before the send (in insOf(Src));
	// from an untraced sender, the position within byEdge (byEdgeSend) of
	// the last message sent the other way at or before the receive (in
	// the reverse edge's group) (§5.1). Positions in the whole arrays, not
	// within the node's or the edge's: the time is read without the
	// node's or the edge's start first. One merge per node and edge
	// instead of a binary search per message and pass.
	lastPos        []int32
	outStart, outs []int32
	// Per edge, CSR: messages with a known send time, by send time (for the
	// untraced-node rule of §5.1).
	edgeStart, byEdge []int32
	byEdgeSend        []int64 // send times, aligned with byEdge

	d []float64 // step 1: mean causal delay per edge, seconds (0: unknown)
	// s1 holds step 1's sums per edge, of the delays within the window
	// from every message's latest candidate parent (seconds) and of their
	// number: index adds them up as it finds that parent.
	s1 []s1Sums

	// tm holds the messages' times, packed in place at the start of
	// their array, while Options.Lean has dropped them for the WAP5 steps
	// (msgs is nil then); lean what the times leave out.
	tm   []msgTimes
	lean *leanCols
	// hot and kinds are the joint linker's records of the messages and
	// their kinds, which its aggregation reads where Options.Lean and
	// DropMessages leave the messages unmade (msgs is nil then).
	hot   []msgHot
	kinds []trace.Kind

	// idxMem holds the per-node and per-edge indexes above (dropIndex
	// frees it); runMem the joint linker's per-message arrays, freed at the
	// end of its run, linkMem its links (parent, prob), freed once J6 has
	// read them, and keepMem what the passes read of the messages
	// (joint.hot, eps, actors) and what Options.Lean keeps of the rest,
	// freed once the messages are made again (offHeap).
	idxMem, runMem, linkMem, keepMem offHeap

	fixed []bool // fixed endpoints (WAP5 §2.5), computed on demand
	// counted: indexEdges counted the groupings' sizes into inStart,
	// outStart and edgeStart (each group's at its index + 1), and what J1
	// counts (idCalls, epMsgs, epNoID: messages with a call id and
	// kind=call; with both endpoints; of those, without kind= and call=
	// together), in its one read of the messages.
	counted                 bool
	idCalls, epMsgs, epNoID int
	// anyActor: indexEdges met a message that names an actor (counted;
	// joint.hasActors reads it instead of reading the messages again).
	anyActor bool
	// unsentOn marks, per edge, those that carry a message without a send
	// time (an untraced sender's: counted).
	unsentOn []bool
	carried  *models // delay models carried from a previous stream chunk
	// actorHabits: what J2b learnt per node (actors.go).
	actorHabits []ActorHabit
	warnings    []string
}

func newLinker(t *trace.Trace, o Options, carried *models) *linker {
	l := &linker{t: t, o: o, msgs: t.Messages, x: int64(o.Window), carried: carried}
	phase("index")
	l.indexEdges()
	// Options.Lean, WAP5 (whole traces): the steps read the messages'
	// times alone, and the aggregation all of them again: they are packed
	// in place before the indexes are made (packMessages).
	if o.Lean && o.Method == MethodWAP5 && carried == nil {
		l.packMessages()
	}
	l.index()
	return l
}

// count is the number of messages linked (the trace's, or the packed
// ones while Options.Lean has packed them).
func (l *linker) count() int {
	switch {
	case l.tm != nil:
		return len(l.tm)
	case l.hot != nil:
		return len(l.hot)
	}
	return len(l.msgs)
}

// times returns message i's send and receive times (from the packed
// messages while Options.Lean has packed them).
func (l *linker) times(i int32) (send, recv int64) {
	if l.tm != nil {
		p := &l.tm[i]
		return p.send, p.recv
	}
	m := &l.msgs[i]
	return m.Send, m.Recv
}

// timesEnds is times with message i's sender and receiver: the
// message's own where the messages are at hand (its edge's ends, the same
// nodes, are a load at random over the edges' arrays), else its edge's.
func (l *linker) timesEnds(i int32) (send, recv int64, src, dst trace.NodeID) {
	if l.tm != nil {
		p := &l.tm[i]
		e := l.edge[i]
		return p.send, p.recv, l.edgeSrc[e], l.edgeDst[e]
	}
	m := &l.msgs[i]
	return m.Send, m.Recv, m.Src, m.Dst
}

// untraced reports whether message i's sender is untraced (no send time).
func (l *linker) untraced(i int32) bool {
	send, _ := l.times(i)
	return send == trace.Unknown
}

// prefetchTimes asks for the cache line of message i's times (times).
func (l *linker) prefetchTimes(i int32) {
	if l.tm != nil {
		prefetch.At(l.tm, i)
	} else {
		prefetch.At(l.msgs, i)
	}
}

// indexEdges gives every message the id of its directed node pair, and
// counts what index and J1 would otherwise read every message again for
// (counted).
func (l *linker) indexEdges() {
	n := len(l.msgs)
	l.edge = make([]int32, n)
	nn := len(l.t.Nodes)
	l.inStart, l.outStart, l.edgeStart = make([]int32, nn+1), make([]int32, nn+1), make([]int32, 1, 64)
	// Edge ids through an open-addressing table keyed by the node pair
	// (linear probing, at most half full): one probe per message in the
	// common case, no map.
	tab := newPairTable(64)
	for i := range l.msgs {
		// The slot of the message candAhead on (a large trace's pairs
		// fill a table far larger than the cache).
		if a := i + candAhead; a < n {
			m := &l.msgs[a]
			k := uint64(uint32(m.Src))<<32 | uint64(uint32(m.Dst))
			prefetch.At(tab.ents, int32(mix(k)&uint64(len(tab.ents)-1)))
		}
		l.prefetchMsgs(int32(i))
		m := &l.msgs[i]
		e := l.edgeOf(tab, m.Src, m.Dst)
		l.edge[i] = e
		if int(e)+1 == len(l.edgeStart) { // a new edge
			l.edgeStart = append(l.edgeStart, 0)
			l.unsentOn = append(l.unsentOn, false)
		}
		if m.Recv != trace.Unknown {
			l.inStart[m.Dst+1]++
		}
		if m.Send != trace.Unknown {
			l.outStart[m.Src+1]++
			l.edgeStart[e+1]++
		} else {
			l.unsentOn[e] = true
		}
		if m.Kind == trace.KindCall && m.Call != trace.NoRef {
			l.idCalls++
		}
		if m.SrcActor != trace.NoActor || m.DstActor != trace.NoActor {
			l.anyActor = true
		}
		if m.SrcEP != trace.NoEndpoint && m.DstEP != trace.NoEndpoint {
			l.epMsgs++
			if m.Kind == trace.KindNone || m.Call == trace.NoRef {
				l.epNoID++
			}
		}
	}
	l.counted = true
}

// edgeOf is the id of the directed node pair src→dst in tab, a new one
// (appended to edgeSrc/edgeDst) the first time the pair is met.
func (l *linker) edgeOf(tab *pairTable, src, dst trace.NodeID) int32 {
	k := uint64(uint32(src))<<32 | uint64(uint32(dst))
	e, ok := tab.get(k)
	if !ok {
		e = int32(len(l.edgeSrc))
		tab.put(k, e)
		l.edgeSrc = append(l.edgeSrc, src)
		l.edgeDst = append(l.edgeDst, dst)
	}
	return e
}

// index makes the candidate indexes from the messages' edges (indexEdges)
// and times.
func (l *linker) index() {
	n := l.count()
	nn := len(l.t.Nodes)
	// The per-node sends (outs) are for the joint linker's passes; WAP5's
	// steps read the sends per edge alone.
	outs := l.o.Method != MethodWAP5
	// 1. The three groupings (receives per node, sends per node, sends
	// per edge) in one counting pass and one filling pass over the
	// messages, which also copies the times the steps compare (a read of
	// the messages in order, not a gather per group).
	// (Counted already where indexEdges ran: counted.)
	ne := len(l.edgeSrc)
	if !l.counted {
		l.inStart, l.outStart, l.edgeStart = make([]int32, nn+1), make([]int32, nn+1), make([]int32, ne+1)
		for i := range int32(n) {
			send, recv := l.times(i)
			e := l.edge[i]
			if recv != trace.Unknown {
				l.inStart[l.edgeDst[e]+1]++
			}
			if send != trace.Unknown {
				l.outStart[l.edgeSrc[e]+1]++
				l.edgeStart[e+1]++
			}
		}
	}
	// The joint linker reads the sends per edge only as the candidates of
	// untraced senders' messages (candidatesOf): on the edges the other
	// way of those that carry one (a large trace's other sends would be
	// tens of MB of index, first touched and never read).
	rev := l.reverseEdges()
	var perEdge []bool // the edges whose sends are indexed (nil: all)
	if outs && l.counted {
		perEdge = make([]bool, ne)
		for e, r := range rev {
			if l.unsentOn[e] && r >= 0 {
				perEdge[r] = true
			}
		}
		for e, ok := range perEdge {
			if !ok {
				l.edgeStart[e+1] = 0
			}
		}
	}
	for b := 0; b < nn; b++ {
		l.inStart[b+1] += l.inStart[b]
		l.outStart[b+1] += l.outStart[b]
	}
	for e := 0; e < ne; e++ {
		l.edgeStart[e+1] += l.edgeStart[e]
	}
	l.ins, l.byEdge = offMake[int32](&l.idxMem, int(l.inStart[nn])), offMake[int32](&l.idxMem, int(l.edgeStart[ne]))
	l.insRecv, l.byEdgeSend = offMake[int64](&l.idxMem, len(l.ins)), offMake[int64](&l.idxMem, len(l.byEdge))
	var outPos []int32
	if outs {
		l.outs = offMake[int32](&l.idxMem, int(l.outStart[nn]))
		outPos = slices.Clone(l.outStart[:nn])
	}
	inPos, edgePos := slices.Clone(l.inStart[:nn]), slices.Clone(l.edgeStart[:ne])
	for i := range int32(n) {
		l.prefetchMsgs(i)
		send, recv, src, dst := l.timesEnds(i)
		e := l.edge[i]
		if recv != trace.Unknown {
			l.ins[inPos[dst]], l.insRecv[inPos[dst]] = i, recv
			inPos[dst]++
		}
		if send != trace.Unknown {
			if outs {
				l.outs[outPos[src]] = i
				outPos[src]++
			}
			if perEdge == nil || perEdge[e] {
				l.byEdge[edgePos[e]], l.byEdgeSend[edgePos[e]] = i, send
				edgePos[e]++
			}
		}
	}
	// 2. Messages are sorted by Time, which is Send where known: outs and
	// byEdge are in send order already. Receive order needs a sort per
	// node: by (time, index), in place on the two arrays from the first
	// receive out of order (no indirection through the messages in the
	// comparisons; the index breaks ties, so the order is the stable one;
	// the receives before are in that order already: filled in index
	// order), or on (time, index) pairs in one flat array where that
	// takes too many moves.
	var keyed []recvKey
	for b := 0; b < nn; b++ {
		a, z := l.inStart[b], l.inStart[b+1]
		s, ts := l.ins[a:z], l.insRecv[a:z]
		from := len(ts)
		for k := 1; k < len(ts); k++ {
			if ts[k] < ts[k-1] {
				from = k
				break
			}
		}
		if from == len(ts) || insertionSort(s, ts, from, 8*len(ts)) {
			continue
		}
		keyed = slices.Grow(keyed[:0], len(s))[:len(s)]
		for k, i := range s {
			keyed[k] = recvKey{ts[k], i}
		}
		slices.SortFunc(keyed, func(x, y recvKey) int {
			switch {
			case x.t < y.t:
				return -1
			case x.t > y.t:
				return 1
			}
			return int(x.i - y.i)
		})
		for k, kv := range keyed {
			s[k], ts[k] = kv.i, kv.t
		}
	}
	// 3. Position of every send among its sender's receives: a merge of
	// each node's sends (in send order: the messages' order) with its
	// receives (in receive order), one cursor per node, the messages read
	// in order. Step 1's sums take the delay from the candidate found
	// (step1), in the messages' order as step 1 would.
	l.lastPos = offMake[int32](&l.idxMem, n)
	l.s1 = make([]s1Sums, ne)
	note := func(e int32, dt int64) {
		if dt >= 0 && dt <= l.x {
			s := &l.s1[e]
			s.sum += float64(dt) / 1e9
			s.cnt++
		}
	}
	type nodeCursor struct {
		prev int64 // the last send time merged
		q    int32 // receives at or before prev
	}
	nc := make([]nodeCursor, nn)
	for b := range nc {
		nc[b].prev = math.MinInt64
	}
	// Untraced senders: their messages are in receive order (Time is Recv
	// without a send time), so one cursor per reverse edge suffices.
	type edgeCursor struct {
		last int64 // the last receive time merged
		q    int32 // the reverse edge's sends at or before last
	}
	ec := make([]edgeCursor, ne)
	for e := range ec {
		ec[e].last = math.MinInt64
	}
	for i := range int32(n) {
		// The sums and the sender of the edge candAhead on (at random
		// over a large trace's edges); an untraced sender's reverse
		// edge's cursor and start, and where the cursor is in its sends
		// half that far.
		if j := i + candAhead; j < int32(n) {
			e := l.edge[j]
			if l.tm != nil {
				prefetch.Two(uintptr(unsafe.Pointer(&l.s1[e])), uintptr(unsafe.Pointer(&l.edgeSrc[e])))
			} else {
				prefetch.At(l.s1, e) // (the sender: from the message, timesEnds)
			}
			if l.untraced(j) {
				if r := rev[e]; r >= 0 {
					prefetch.At(ec, r)
					prefetch.At(l.edgeStart, r)
				}
			}
		}
		if j := i + candAhead/2; j < int32(n) && l.untraced(j) {
			if r := rev[l.edge[j]]; r >= 0 {
				if q := l.edgeStart[r] + ec[r].q; q < l.edgeStart[r+1] {
					prefetch.At(l.byEdgeSend, q)
				}
			}
		}
		l.prefetchMsgs(i)
		send, recv, b, _ := l.timesEnds(i)
		e := l.edge[i]
		if send != trace.Unknown {
			start := l.inStart[b]
			ts := l.insRecv[start:l.inStart[b+1]]
			c := &nc[b]
			q := 0
			if send < c.prev { // not in send order (cannot happen after t.Sort)
				q = lastAtOrBefore64(ts, send) + 1
			} else {
				c.prev = send
				q = int(c.q)
				for q < len(ts) && ts[q] <= send {
					q++
				}
				c.q = int32(q)
				// The node's receives are read in order, one stream
				// per node (more than the hardware follows): the line
				// after the cursor's is asked for (prefetch never
				// faults, past the end too).
				prefetch.Line(uintptr(unsafe.Pointer(unsafe.SliceData(l.insRecv))) + uintptr(int(start)+q)*8 + 64)
			}
			l.lastPos[i] = at(start, q-1)
			if q > 0 {
				note(e, send-ts[q-1])
			}
			continue
		}
		l.lastPos[i] = -1
		r := rev[e]
		if r < 0 {
			continue
		}
		start := l.edgeStart[r]
		ts := l.byEdgeSend[start:l.edgeStart[r+1]]
		c := &ec[r]
		q := 0
		if recv < c.last { // out of order: search
			q = lastAtOrBefore64(ts, recv) + 1
		} else {
			c.last = recv
			q = int(c.q)
			for q < len(ts) && ts[q] <= recv {
				q++
			}
			c.q = int32(q)
		}
		l.lastPos[i] = at(start, q-1)
		if q > 0 {
			note(e, recv-ts[q-1])
		}
	}
}

// at is position k (−1: none) of a group starting at start, in the whole
// array (−1: none).
func at(start int32, k int) int32 {
	if k < 0 {
		return -1
	}
	return start + int32(k)
}

// dropIndex frees the candidate indexes (steps 1–2) once they are no
// longer needed.
func (l *linker) dropIndex() {
	l.inStart, l.ins, l.insRecv, l.lastPos = nil, nil, nil, nil
	l.outStart, l.outs = nil, nil
	l.edgeStart, l.byEdge, l.byEdgeSend = nil, nil, nil
	l.idxMem.free()
}

func (l *linker) insRecvOf(b trace.NodeID) []int64 { return l.insRecv[l.inStart[b]:l.inStart[b+1]] }

// lastAtOrBefore64 returns the position of the last time in ts (sorted) at
// or before t, or −1.
func lastAtOrBefore64(ts []int64, t int64) int {
	lo, hi := 0, len(ts)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if ts[h] <= t {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo - 1
}

type recvKey struct {
	t int64
	i int32
}

// insertionSort sorts ids and ts (aligned) by (ts, ids), from position
// from on (the pairs before it in that order already), when that takes at
// most budget moves — receives are nearly in send order, displaced by
// network delays — and otherwise gives up (false), leaving both permuted
// alike.
func insertionSort(ids []int32, ts []int64, from, budget int) bool {
	for k := max(from, 1); k < len(ts); k++ {
		x, xi := ts[k], ids[k]
		j := k
		for j > 0 && (ts[j-1] > x || ts[j-1] == x && ids[j-1] > xi) {
			ts[j], ids[j] = ts[j-1], ids[j-1]
			j--
			if budget--; budget < 0 {
				ts[j], ids[j] = x, xi
				return false
			}
		}
		ts[j], ids[j] = x, xi
	}
	return true
}

// csr groups message indices by key (−1: left out), keeping index order.
func csr(n, keys int, key func(i int) int) (start, items []int32) {
	start = make([]int32, keys+1)
	cnt := 0
	for i := 0; i < n; i++ {
		if k := key(i); k >= 0 {
			start[k+1]++
			cnt++
		}
	}
	for k := 0; k < keys; k++ {
		start[k+1] += start[k]
	}
	items = make([]int32, cnt)
	pos := slices.Clone(start[:keys])
	for i := 0; i < n; i++ {
		if k := key(i); k >= 0 {
			items[pos[k]] = int32(i)
			pos[k]++
		}
	}
	return start, items
}

func (l *linker) insOf(b trace.NodeID) []int32  { return l.ins[l.inStart[b]:l.inStart[b+1]] }
func (l *linker) outsOf(b trace.NodeID) []int32 { return l.outs[l.outStart[b]:l.outStart[b+1]] }

// reverseEdge returns the edge id of dst→src for edge e, or −1.
func (l *linker) reverseEdges() []int32 {
	ids := make(map[uint64]int32, len(l.edgeSrc))
	for e := range l.edgeSrc {
		ids[uint64(uint32(l.edgeSrc[e]))<<32|uint64(uint32(l.edgeDst[e]))] = int32(e)
	}
	rev := make([]int32, len(l.edgeSrc))
	for e := range l.edgeSrc {
		r, ok := ids[uint64(uint32(l.edgeDst[e]))<<32|uint64(uint32(l.edgeSrc[e]))]
		if !ok {
			r = -1
		}
		rev[e] = r
	}
	return rev
}

// lastAtOrBefore returns the position of the last item of s (ordered by
// key) with key ≤ t, or −1.
func lastAtOrBefore(s []int32, t int64, key func(int32) int64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if key(s[h]) <= t {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo - 1
}

// candAhead is how many messages ahead steps 1 and 2 ask for the cache
// lines where a message's candidate parents end (prefetchCands). Those
// loads are at random over the trace's indexes (an untraced sender's
// candidates are on one of many edges): without the hints, each message
// waits for a cache miss.
const candAhead = 16

// prefetchCands asks for the cache lines of message j's latest candidate
// parent in the indexes (its id and time), where candidatesOf and step1
// start, and for an untraced sender's, of its reverse edge's start (j may
// be past the end).
func (l *linker) prefetchCands(j int, rev []int32) {
	if j >= len(l.lastPos) {
		return
	}
	p := l.lastPos[j]
	if p < 0 {
		return
	}
	if send, _ := l.times(int32(j)); send != trace.Unknown {
		prefetch.At(l.insRecv, p)
		prefetch.At(l.ins, p)
		return
	}
	prefetch.At(l.byEdgeSend, p)
	prefetch.At(l.byEdge, p)
	prefetch.At(l.edgeStart, rev[l.edge[j]])
}

// step1 estimates d(B→C) for every edge as the mean smallest preceding
// delay within the window (WAP5 §5.1 Step 1). For a message whose sender is
// untraced (no send time), the delay is taken on the receiver A's clock from
// the latest A→B message (A→B→A causality). The delays were summed by
// index as it found each message's latest candidate parent (s1:
// a second read of the messages and of their candidates, scattered over
// the indexes, saved).
func (l *linker) step1() {
	l.d = make([]float64, len(l.edgeSrc))
	for e := range l.d {
		if s := l.s1[e]; s.cnt > 0 {
			l.d[e] = s.sum / s.cnt
		}
		l.d[e] = l.floorDelay(l.d[e])
	}
	l.s1 = nil
}

// s1Sums are step 1's sums of one edge (linker.s1), together: one cache
// line for both where the edges are many.
type s1Sums struct{ sum, cnt float64 }

// floorDelay keeps d positive: a pair whose every message followed its
// predecessor at once (or had none) gets a microsecond, a thousandth of x at
// most.
func (l *linker) floorDelay(d float64) float64 {
	min := 1e-6
	if w := float64(l.x) / 1e9 / 1000; w < min {
		min = w
	}
	if d < min {
		return min
	}
	return d
}

// pairTable maps uint64 keys (node pairs, pattern hashes) to int32 ids ≥ 0:
// open addressing, linear probing, grown at half full. A slot holds its key
// and value together: a probe of a large table (the classes of a node on a
// large trace) misses the cache once, not once per array.
type pairTable struct {
	ents []pairEnt
	n    int
	// mem, where set, holds ents outside the heap from 4 MB (offMake): a
	// table that lives as long as a stream (spillTable's).
	mem *offHeap
}

type pairEnt struct {
	key uint64
	val int32 // id+1 (0: empty slot)
}

func newPairTable(size int) *pairTable {
	return &pairTable{ents: make([]pairEnt, size)}
}

// reset empties t (allocating it when nil) with room for n keys without
// growing, and returns it.
func (t *pairTable) reset(n int) *pairTable {
	size := 64
	for size < 2*(n+1) {
		size *= 2
	}
	if cap(t.ents) < size {
		t.ents = make([]pairEnt, size)
	} else {
		// All of it: a table reset for few keys that then grows (votes
		// per node) would otherwise regrow from its first size every time.
		t.ents = t.ents[:cap(t.ents)]
		clear(t.ents)
	}
	t.n = 0
	return t
}

func (t *pairTable) slot(k uint64) int {
	mask := len(t.ents) - 1
	h := int(mix(k) & uint64(mask))
	for e := &t.ents[h]; e.val != 0 && e.key != k; e = &t.ents[h] {
		h = (h + 1) & mask
	}
	return h
}

func (t *pairTable) get(k uint64) (int32, bool) {
	e := &t.ents[t.slot(k)]
	if e.val == 0 {
		return 0, false
	}
	return e.val - 1, true
}

func (t *pairTable) put(k uint64, v int32) {
	if 2*(t.n+1) > len(t.ents) {
		old := t.ents
		if t.mem != nil {
			t.ents = offMake[pairEnt](t.mem, 2*len(old))
		} else {
			t.ents = make([]pairEnt, 2*len(old))
		}
		for _, e := range old {
			if e.val != 0 {
				t.ents[t.slot(e.key)] = e
			}
		}
		if t.mem != nil {
			t.mem.release(unsafe.Pointer(unsafe.SliceData(old)))
		}
	}
	e := &t.ents[t.slot(k)]
	if e.val == 0 {
		t.n++
	}
	*e = pairEnt{k, v + 1}
}

// msgsAhead is how many messages ahead prefetchMsgs asks for the
// messages' lines (≈ 4.6 KB at 72 B a message).
const msgsAhead = 64

// prefetchMsgs asks, at every 8th message i, for the lines of the 8
// messages msgsAhead on: a pass that reads the messages in order while it
// writes or reads many other streams (index's fill and merge: thousands of
// per-node and per-edge streams) loses the messages' stream from the
// hardware's prefetcher, and their first load stalls. One call per 8
// messages (every hint is an assembly call). Nothing where Options.Lean
// has packed the messages (l.tm: 16 B each, in the same order).
func (l *linker) prefetchMsgs(i int32) {
	if i&7 == 0 {
		l.prefetchMsgs8(i)
	}
}

// prefetchMsgs8 is prefetchMsgs' hint (apart, so that the test for every
// 8th message is inlined where the messages are read).
func (l *linker) prefetchMsgs8(i int32) {
	if l.tm != nil {
		return
	}
	if a := int(i) + msgsAhead; a+8 <= len(l.msgs) {
		prefetch.Lines(uintptr(unsafe.Pointer(&l.msgs[a])), 8*unsafe.Sizeof(trace.Message{}))
	}
}
