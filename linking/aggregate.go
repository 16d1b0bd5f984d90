package linking

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"unsafe"

	"wap5/internal/hugemem"
	"wap5/internal/prefetch"
	"wap5/trace"
)

// instances are path instances in flat form: for instance i its messages
// msgs[start[i]:start[i+1]], each with the position of its parent within the
// instance (−1 at the root; parents come before children), and its
// probability.
type instances struct {
	start     []int32
	msgs, par []int32
	prob      []float64
}

func (in *instances) add(msgs, par []int32, prob float64) {
	if len(in.start) == 0 {
		in.start = append(in.start, 0)
	}
	in.msgs = append(in.msgs, msgs...)
	in.par = append(in.par, par...)
	in.start = append(in.start, int32(len(in.msgs)))
	in.prob = append(in.prob, prob)
}

func (in *instances) len() int { return len(in.prob) }

func (in *instances) get(i int) (msgs, par []int32) {
	a, b := in.start[i], in.start[i+1]
	return in.msgs[a:b], in.par[a:b]
}

// pattern is a pattern under aggregation, in canonical order: positions in
// depth-first order with children sorted by subtree hash.
type pattern struct {
	hash     uint64
	par      []int32 // parent position
	from, to []int32 // node labels
	kind     []trace.Kind
	closer   []int32 // the child that returns to a step's sender, or −1
	count    int
	expected float64
	maxProb  float64
	idx      int32 // position in aggregator.pats
	first    int32 // the first instance (batch): its shape is built on demand
	acc      *patAcc
}

// patAcc holds the weighted delay samples of a pattern's positions.
type patAcc struct {
	net, wait, lat, off []trace.Accumulator
	hist                bool // net and wait fill histograms
}

func newPatAcc(n int, hist bool) *patAcc {
	a := &patAcc{net: make([]trace.Accumulator, n), wait: make([]trace.Accumulator, n),
		lat: make([]trace.Accumulator, n), off: make([]trace.Accumulator, n)}
	if hist {
		a.hist = true
		for j := 0; j < n; j++ {
			a.net[j].WithHistogram(trace.NewLogHistogram(1e-6, 1.05, 420))
			a.wait[j].WithHistogram(trace.NewLogHistogram(1e-6, 1.05, 420))
		}
	}
	return a
}

// reset returns a with room for n positions of each delay, all zero (no
// histograms).
func (a *patAcc) reset(n int) *patAcc {
	for _, s := range []*[]trace.Accumulator{&a.net, &a.wait, &a.lat, &a.off} {
		*s = slices.Grow((*s)[:0], n)[:n]
		clear(*s)
	}
	a.hist = false
	return a
}

// setStats sets *s to a.Stats() for an accumulator without a histogram,
// field by field from its sums: a Stats (six words) returned by value, or
// an AccumulatorState (five), goes through the stack, in stores that the
// loads after them cannot take their values from.
func setStats(s *trace.Stats, a *trace.Accumulator) {
	w, mean, s2, lo, hi := a.Sums()
	if w == 0 {
		*s = trace.Stats{}
		return
	}
	s.W, s.Mean, s.Std, s.Min, s.Max, s.Hist = w, mean, math.Sqrt(max0(s2/w)), lo, hi, nil
}

// max0 is math.Max(x, 0) (+0 for −0, NaN as math.NaN()), inlined.
func max0(x float64) float64 {
	if x > 0 {
		return x
	}
	if x != x {
		return math.NaN()
	}
	return 0
}

// aggregator turns instances into ranked patterns with delays (steps 3–4).
type aggregator struct {
	names   []string
	nameIdx map[string]int32
	clock   *trace.ClockMap
	histTop int

	byHash *pairTable // pattern hash → position in pats
	pats   []*pattern

	// scratch
	hash  []uint64
	kids  [][]int32
	stack []int32
	posOf []int32
	cpar  []int32
	ord   []int32
	recs  []msgRec
	// step 4's chunks of records (whole traces)
	gather gather
	// mem, where set, holds a whole trace's arrays of steps 3–4 outside
	// the heap (aggMake), given back when the aggregation ends.
	mem *offHeap
	// build's scratch, and with reuse its pattern, steps, child pointers,
	// metrics and perm
	off                []float64
	kidAt, kids1, fill []int32
	depth              []int32
	steps              []trace.Step
	ptrs               []*trace.Step
	tp                 trace.Pattern
	metrics            map[string]float64
	perm               []int32
}

func newAggregator(histTop int) *aggregator {
	return &aggregator{nameIdx: map[string]int32{}, byHash: newPairTable(1024), histTop: histTop}
}

// aggMake is make([]T, n) for the arrays of a whole trace's aggregation:
// outside the heap in mem (offMake, from mem's size on) where mem is set.
// In the heap they were most of what the aggregation allocates (≈ 100 MB
// on the CoDeeN-sized trace), and at the low GOGC of a large trace's
// aggregation (collectOften) the collector ran for them every ≈ 30 MB,
// each time over the whole heap (the trace's tables).
func aggMake[T any](mem *offHeap, n int) []T {
	if mem == nil {
		return make([]T, n)
	}
	return offMake[T](mem, n)
}

// aggMemFrom is the size from which aggMake's arrays are made outside the
// heap. (A variable for tests.)
var aggMemFrom = 1 << 20

func (a *aggregator) label(name string) int32 {
	if i, ok := a.nameIdx[name]; ok {
		return i
	}
	i := int32(len(a.names))
	a.names = append(a.names, name)
	a.nameIdx[name] = i
	return i
}

func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// canon writes the instance's messages in canonical depth-first order into
// out and returns the pattern they belong to (interned). With shape false a
// new pattern is only counted (hash, no steps): most patterns of a noisy
// trace are never built, and their shapes would cost memory per pattern.
func (a *aggregator) canon(ms []trace.Message, labels []int32, msgs, par []int32, out []int32, shape bool) (*pattern, []int32) {
	h, out := a.order(ms, labels, msgs, par, out)
	n := len(out)
	pi, ok := a.byHash.get(h)
	if !ok {
		pi = int32(len(a.pats))
		a.pats = append(a.pats, &pattern{hash: h, idx: pi, first: -1})
		a.byHash.put(h, pi)
	}
	if p := a.pats[pi]; shape && p.par == nil {
		p.par, p.closer = slices.Clone(a.cpar), make([]int32, n)
		p.from, p.to, p.kind = make([]int32, n), make([]int32, n), make([]trace.Kind, n)
		a.recs = a.records(a.recs[:0], ms, labels, out)
		fillShape(p.from, p.to, p.kind, p.closer, p.par, a.recs)
	}
	return a.pats[pi], out
}

// records appends the records of messages o to recs (with their labels
// where labels is given).
func (a *aggregator) records(recs []msgRec, ms []trace.Message, labels []int32, o []int32) []msgRec {
	recs = slices.Grow(recs, len(o))
	for _, mi := range o {
		recs = recs[:len(recs)+1]
		a.rec(&recs[len(recs)-1], &ms[mi], labels)
	}
	return recs
}

// fillShape fills a pattern's node labels, kinds and closers from an instance's
// messages (records) o in canonical order, whose canonical parents are par.
func fillShape(from, to []int32, kind []trace.Kind, closer, par []int32, o []msgRec) {
	for j := range o {
		from[j], to[j], kind[j] = o[j].from, o[j].to, o[j].kind
		closer[j] = -1
	}
	for j := 1; j < len(o); j++ {
		if pj := par[j]; to[j] == from[pj] {
			closer[pj] = int32(j)
		}
	}
}

// order writes the instance's messages in canonical depth-first order into
// out (children sorted by subtree hash, then by time) and their canonical
// parents (positions in out, −1 at the root) into a.cpar, and returns the
// pattern's hash (the root's subtree hash).
func (a *aggregator) order(ms []trace.Message, labels []int32, msgs, par []int32, out []int32) (uint64, []int32) {
	return a.orderView(&msgView{ms: ms}, labels, msgs, par, out)
}

// msgView is what the aggregation of a whole trace reads of its messages:
// the trace's, or while Options.Lean has them packed (WAP5), their packed
// times with their kinds and their nodes from their edges (so that they
// are made again, if at all, only once the aggregation is done with its
// arrays).
//
// Where the joint linker leaves the messages unmade (Options.DropMessages),
// it reads the joint linker's records (hot) and kinds instead.
type msgView struct {
	ms               []trace.Message
	tm               []msgTimes
	hot              []msgHot
	kinds            []trace.Kind // (with tm or hot)
	edge             []int32
	edgeSrc, edgeDst []trace.NodeID
}

// viewOf is the view of l's messages, packed, unmade or neither.
func (l *linker) viewOf() *msgView {
	switch {
	case l.tm != nil:
		return &msgView{tm: l.tm, kinds: l.lean.kind, edge: l.edge, edgeSrc: l.edgeSrc, edgeDst: l.edgeDst}
	case l.hot != nil:
		return &msgView{hot: l.hot, kinds: l.kinds, edgeSrc: l.edgeSrc, edgeDst: l.edgeDst}
	}
	return &msgView{ms: l.msgs}
}

func (v *msgView) nodes(i int32) (src, dst trace.NodeID) {
	if v.ms != nil {
		m := &v.ms[i]
		return m.Src, m.Dst
	}
	var e int32
	if v.tm != nil {
		e = v.edge[i]
	} else {
		e = v.hot[i].edge
	}
	return v.edgeSrc[e], v.edgeDst[e]
}

func (v *msgView) times(i int32) (send, recv int64) {
	switch {
	case v.ms != nil:
		m := &v.ms[i]
		return m.Send, m.Recv
	case v.tm != nil:
		p := &v.tm[i]
		return p.send, p.recv
	}
	h := &v.hot[i]
	return h.send, h.recv
}

// time is trace.Message.Time.
func (v *msgView) time(i int32) int64 {
	send, recv := v.times(i)
	if send != trace.Unknown {
		return send
	}
	return recv
}

func (v *msgView) kind(i int32) trace.Kind {
	if v.ms != nil {
		return v.ms[i].Kind
	}
	return v.kinds[i]
}

func (v *msgView) prefetch(i int32) {
	switch {
	case v.ms != nil:
		prefetch.At(v.ms, i)
	case v.tm != nil:
		prefetch.At(v.tm, i)
		prefetch.At(v.edge, i) // (its nodes: another line)
	default:
		prefetch.At(v.hot, i)
	}
}

// prefetchKind asks for the cache line of message i's kind, where it is
// apart from its times.
func (v *msgView) prefetchKind(i int32) {
	if v.ms == nil {
		prefetch.At(v.kinds, i)
	}
}

// prefetchNodes asks for the cache line of message i's nodes: what
// orderView reads of a message but where siblings' subtree hashes tie
// (their times). With packed times, that is its edge's line alone.
func (v *msgView) prefetchNodes(i int32) {
	if v.tm != nil {
		prefetch.At(v.edge, i)
		return
	}
	v.prefetch(i)
}

// chainHash is orderView's pattern hash of a chain (each message the only
// child of the one before, the common case: a request and its reply),
// which is in canonical order already; false where msgs is not one.
func chainHash(ms *msgView, labels []int32, msgs, par []int32) (uint64, bool) {
	n := len(msgs)
	for j := 1; j < n; j++ {
		if par[j] != int32(j-1) {
			return 0, false
		}
	}
	var h uint64
	for j := n - 1; j >= 0; j-- {
		src, dst := ms.nodes(msgs[j])
		hj := mix(uint64(uint32(labels[src]))<<32 | uint64(uint32(labels[dst])))
		if j < n-1 {
			hj = mix(hj*0x9e3779b97f4a7c15 + h + 1)
		}
		h = hj
	}
	return h, true
}

// edgeOf is message i's edge (views of packed or unmade messages only).
func (v *msgView) edgeOf(i int32) int32 {
	if v.tm != nil {
		return v.edge[i]
	}
	return v.hot[i].edge
}

// edgeLeaves is every edge's hash as a message of a pattern (a leaf's
// subtree hash: its nodes' labels mixed), for chainHashEdges; nil where
// the view has no edges.
func edgeLeaves(ms *msgView, labels []int32, mem *offHeap) []uint64 {
	if ms.ms != nil {
		return nil
	}
	leaf := aggMake[uint64](mem, len(ms.edgeSrc))
	for e := range leaf {
		leaf[e] = mix(uint64(uint32(labels[ms.edgeSrc[e]]))<<32 | uint64(uint32(labels[ms.edgeDst[e]])))
	}
	return leaf
}

// chainHashEdges is chainHash with the messages' hashes by edge (leaf,
// edgeLeaves'): one table read a message (one cache line) instead of its
// edge's two nodes (two lines: the edges' arrays are larger than the
// caches) and their labels.
func chainHashEdges(ms *msgView, leaf []uint64, msgs, par []int32) (uint64, bool) {
	n := len(msgs)
	for j := 1; j < n; j++ {
		if par[j] != int32(j-1) {
			return 0, false
		}
	}
	var h uint64
	for j := n - 1; j >= 0; j-- {
		hj := leaf[ms.edgeOf(msgs[j])]
		if j < n-1 {
			hj = mix(hj*0x9e3779b97f4a7c15 + h + 1)
		}
		h = hj
	}
	return h, true
}

// orderView is order over a view of the messages.
func (a *aggregator) orderView(ms *msgView, labels []int32, msgs, par []int32, out []int32) (uint64, []int32) {
	if h, ok := chainHash(ms, labels, msgs, par); ok {
		a.cpar = append(a.cpar[:0], par...)
		return h, append(out[:0], msgs...)
	}
	return a.orderTree(ms, labels, msgs, par, out)
}

// orderTree is orderView of any instance, a chain too (the general case:
// children sorted by subtree hash, then by time; depth first).
func (a *aggregator) orderTree(ms *msgView, labels []int32, msgs, par []int32, out []int32) (uint64, []int32) {
	n := len(msgs)
	a.hash = slices.Grow(a.hash[:0], n)[:n]
	hash := a.hash
	if cap(a.kids) < n {
		a.kids = make([][]int32, n)
	}
	kids := a.kids[:n]
	for j := range kids {
		kids[j] = kids[j][:0]
	}
	for j := 1; j < n; j++ {
		kids[par[j]] = append(kids[par[j]], int32(j))
	}
	// Subtree hashes bottom-up (parents precede children).
	for j := n - 1; j >= 0; j-- {
		src, dst := ms.nodes(msgs[j])
		h := mix(uint64(uint32(labels[src]))<<32 | uint64(uint32(labels[dst])))
		ks := kids[j]
		if len(ks) > 1 {
			slices.SortFunc(ks, func(x, y int32) int {
				if hash[x] != hash[y] {
					if hash[x] < hash[y] {
						return -1
					}
					return 1
				}
				return cmpTime(ms.time(msgs[x]), ms.time(msgs[y]))
			})
		}
		for _, c := range ks {
			h = mix(h*0x9e3779b97f4a7c15 + hash[c] + 1)
		}
		hash[j] = h
	}
	out = out[:0]
	a.posOf = slices.Grow(a.posOf[:0], n)[:n]
	a.cpar = a.cpar[:0]
	a.stack = append(a.stack[:0], 0)
	for len(a.stack) > 0 {
		j := a.stack[len(a.stack)-1]
		a.stack = a.stack[:len(a.stack)-1]
		a.posOf[j] = int32(len(out))
		out = append(out, msgs[j])
		if par[j] >= 0 {
			a.cpar = append(a.cpar, a.posOf[par[j]])
		} else {
			a.cpar = append(a.cpar, -1)
		}
		ks := kids[j]
		for c := len(ks) - 1; c >= 0; c-- {
			a.stack = append(a.stack, ks[c])
		}
	}
	return hash[0], out
}

// msgRec is what step 4 reads of a message: its local times, its time
// (trace.Message.Time), its network delay on the reference clock (where
// both times are known), and its labels and kind.
type msgRec struct {
	send, recv, time, net int64
	from, to              int32
	kind                  trace.Kind
}

// rec fills r from message m (its labels only where labels is given).
func (a *aggregator) rec(r *msgRec, m *trace.Message, labels []int32) {
	r.send, r.recv, r.time, r.kind = m.Send, m.Recv, m.Time(), m.Kind
	if m.Send != trace.Unknown && m.Recv != trace.Unknown {
		r.net = a.clock.Reference(m.Dst, m.Recv) - a.clock.Reference(m.Src, m.Send)
	}
	if labels != nil {
		r.from, r.to = labels[m.Src], labels[m.Dst]
	}
}

// accumulate adds one instance (messages in canonical order) with weight w
// to the pattern's delays (step 4).
func (a *aggregator) accumulate(p *pattern, ms []trace.Message, o []int32, w float64) {
	a.recs = a.records(a.recs[:0], ms, nil, o)
	a.accumulateRecs(p, a.recs, w)
}

// accumulateRecs is accumulate with the instance's messages' records in
// canonical order.
func (a *aggregator) accumulateRecs(p *pattern, o []msgRec, w float64) {
	acc := p.acc
	for j := range o {
		m := &o[j]
		if m.send != trace.Unknown && m.recv != trace.Unknown {
			acc.net[j].Add(float64(m.net)/1e9, w)
		}
		if c := p.closer[j]; c >= 0 {
			if ret := &o[c]; m.send != trace.Unknown && ret.recv != trace.Unknown {
				acc.lat[j].Add(float64(ret.recv-m.send)/1e9, w)
			}
		}
		pj := p.par[j]
		if pj < 0 {
			continue
		}
		pm := &o[pj]
		if m.send != trace.Unknown && pm.recv != trace.Unknown {
			acc.wait[j].Add(float64(m.send-pm.recv)/1e9, w)
		}
		acc.off[j].Add(float64(m.time-pm.time)/1e9, w)
	}
}

func (a *aggregator) add(p *pattern, prob float64) {
	p.count++
	p.expected += prob
	p.maxProb = math.Max(p.maxProb, prob)
}

// ranked returns the patterns by expected count, then count, then hash.
func (a *aggregator) ranked() []*pattern {
	ps := slices.Clone(a.pats)
	sort.Slice(ps, func(x, y int) bool {
		p, q := ps[x], ps[y]
		if p.expected != q.expected {
			return p.expected > q.expected
		}
		if p.count != q.count {
			return p.count > q.count
		}
		return p.hash < q.hash
	})
	return ps
}

// linkerLabels maps the linker's nodes to the aggregator's labels (step 5).
func (a *aggregator) linkerLabels(l *linker) []int32 {
	labels := make([]int32, len(l.t.Nodes))
	var clients []bool
	if l.o.AggregateClients {
		clients = Clients(l.t, l.o.FixedPortPeers)
	}
	for i, n := range l.t.Nodes {
		if clients != nil && clients[i] {
			labels[i] = a.label(ClientName)
		} else {
			labels[i] = a.label(n.Name)
		}
	}
	return labels
}

// delayRec is what step 4 reads of a message of a whole trace's instance:
// its local send and receive times and its network delay on the reference
// clock (where both times are known; else 0). Its time
// (trace.Message.Time) is the send time where known, else the receive
// time.
type delayRec struct {
	send, recv, net int64
}

// shapeRec is a pattern's position as its first instance has it: the
// message's labels and kind and its canonical parent.
type shapeRec struct {
	from, to, par int32
	kind          trace.Kind
}

// gather holds the records of a chunk of ranked patterns (step 4, whole
// traces): rank r's instances, in instance order, have probabilities
// prob[byRank[r]-byRank[r0]:] and records recs[msgAt[r]-msgAt[r0]:], n
// records each (n the pattern's size: shape[shapeAt[r]-shapeAt[r0]:][:n]).
type gather struct {
	recs  []delayRec
	prob  []float64
	shape []shapeRec
	// where each rank's instances, messages and shape begin (ranks 0 to
	// full), and each rank's next free places
	byRank, msgAt, shapeAt []int32
	cur                    []rankCursor
	// the chunk's instances, in instance order (load)
	sel []int32
	// mem is the aggregator's (aggMake).
	mem *offHeap
}

// maxFloat is math.Max (its special cases included: +Inf, then NaN, then
// +0 over −0), inlined: on amd64 math.Max is a call into assembly.
func maxFloat(x, y float64) float64 {
	switch {
	case math.IsInf(x, 1) || math.IsInf(y, 1):
		return math.Inf(1)
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x == 0 && x == y:
		if math.Signbit(x) {
			return y
		}
		return x
	}
	if x > y {
		return x
	}
	return y
}

// rankCursor is where a rank's next instance goes (its probability and
// records), where its first went and where its shape goes: what g.load
// reads of a rank, in one cache line.
type rankCursor struct {
	inst, msg, first, shape int32
}

// gatherMessages bounds the records of a chunk (24 bytes each): the
// ranks are gathered in as many passes over the instances as it takes,
// and the chunk's arrays are reused from pass to pass (fresh memory is
// dear on a virtual machine). (A variable for tests.)
var gatherMessages = 1 << 20

// places counts, in one pass over the instances (instRank: every
// instance's rank, or −1 where its pattern is not built in full), each
// rank's instances, messages and size, and sets where each begins in the
// chunk arrays. An instance whose size differs from its rank's first
// (two shapes sharing a 64-bit pattern hash) is left out (its rank set
// to −1); places returns how many were.
func (g *gather) places(in *instances, instRank []int32, full int) (collided int) {
	mem := g.mem
	g.byRank = aggMake[int32](mem, full+1)
	g.msgAt = aggMake[int32](mem, full+1)
	g.shapeAt = aggMake[int32](mem, full+1)
	for i, r := range instRank {
		if r < 0 {
			continue
		}
		n := in.start[i+1] - in.start[i]
		if g.byRank[r+1] == 0 {
			g.shapeAt[r+1] = n
		} else if g.shapeAt[r+1] != n {
			instRank[i] = -1
			collided++
			continue
		}
		g.byRank[r+1]++
		g.msgAt[r+1] += n
	}
	for r := 0; r < full; r++ {
		g.byRank[r+1] += g.byRank[r]
		g.msgAt[r+1] += g.msgAt[r]
		g.shapeAt[r+1] += g.shapeAt[r]
	}
	// The chunks' arrays, once, for the largest chunk.
	var nm, ni, ns int32
	for r0 := 0; r0 < full; {
		r1 := g.chunk(r0, full)
		nm = max(nm, g.msgAt[r1]-g.msgAt[r0])
		ni = max(ni, g.byRank[r1]-g.byRank[r0])
		ns = max(ns, g.shapeAt[r1]-g.shapeAt[r0])
		r0 = r1
	}
	g.recs, g.prob, g.shape = aggMake[delayRec](mem, int(nm)), aggMake[float64](mem, int(ni)), aggMake[shapeRec](mem, int(ns))
	g.sel = aggMake[int32](mem, 2*int(ni)+2)[:0] // (+2: load writes one more)
	g.cur = aggMake[rankCursor](mem, full)
	for r := range g.cur {
		g.cur[r] = rankCursor{inst: g.byRank[r], msg: g.msgAt[r], first: g.byRank[r], shape: g.shapeAt[r]}
	}
	return collided
}

// chunk returns where the chunk of ranks from r0 ends: whole patterns up
// to gatherMessages records (one at least).
func (g *gather) chunk(r0, full int) int {
	r1 := r0 + 1
	for r1 < full && int(g.msgAt[r1+1]-g.msgAt[r0]) <= gatherMessages {
		r1++
	}
	return r1
}

// load gathers the records of the patterns ranked from r0 in one pass over
// the instances in their order (so over the trace's messages nearly in
// theirs), each instance's records written where its rank's go, and
// returns where the chunk ends: the first rank it leaves out, at most
// full.
func (g *gather) load(a *aggregator, in *instances, instRank []int32, r0, full int, order []int32, ms *msgView, labels []int32) int {
	r1 := g.chunk(r0, full)
	i0, m0, s0 := g.byRank[r0], g.msgAt[r0], g.shapeAt[r0]
	lo, hi := int32(r0), int32(r1)
	// 1. The chunk's instances, in instance order, and their ranks (pairs
	// in sel): a chunk holds a part of the instances, so a distance ahead
	// counted in all instances would be a few of the chunk's.
	// (Every instance written, the next one over it unless it is the
	// chunk's: a branch on which chunk an instance is in, scattered,
	// was mispredicted about every other time.)
	sel := g.sel[:cap(g.sel)]
	n := 0
	span := uint32(hi - lo)
	for i, r := range instRank {
		sel[n], sel[n+1] = int32(i), r
		d := 0
		if uint32(r-lo) < span { // r ≥ lo && r < hi
			d = 2
		}
		n += d
	}
	sel = sel[:n]
	// 2. Each one's records. What an instance reads lies in arrays by
	// instance, by message and by rank, each a cache line of its own (a
	// chunk's instances are spread over all of them): it is asked for in
	// three stages, each one's addresses read from what the stage before
	// brought in: 3·gatherAhead instances on, where its messages begin and
	// its probability and its rank's cursor; 2·gatherAhead on, its
	// messages' positions (and parents, for a rank's first instance);
	// gatherAhead on, the messages and where its probability and records
	// will go.
	const far, mid, near = 3 * gatherAhead * 2, 2 * gatherAhead * 2, gatherAhead * 2
	for k := 0; k < len(sel); k += 2 {
		if kf := k + far; kf < len(sel) {
			ia := sel[kf]
			prefetch.At(in.start, ia)
			prefetch.At(in.prob, ia)
			prefetch.At(g.cur, sel[kf+1])
		}
		if km := k + mid; km < len(sel) {
			ia := sel[km]
			s := in.start[ia]
			prefetch.At(order, s)
			if c := &g.cur[sel[km+1]]; c.inst == c.first {
				prefetch.At(in.par, s)
			}
		}
		if kn := k + near; kn < len(sel) {
			ia := sel[kn]
			c := &g.cur[sel[kn+1]]
			first := c.inst == c.first
			for _, mi := range order[in.start[ia]:in.start[ia+1]] {
				ms.prefetch(mi)
				if first {
					ms.prefetchKind(mi)
				}
			}
			prefetch.At(g.recs, c.msg-m0)
			prefetch.At(g.prob, c.inst-i0)
		}
		i, r := sel[k], sel[k+1]
		s, e := in.start[i], in.start[i+1]
		c := &g.cur[r]
		q, k := c.inst-i0, c.msg-m0
		first := c.inst == c.first
		c.inst++
		c.msg += e - s
		g.prob[q] = in.prob[i]
		o := order[s:e]
		recs := g.recs[k : k+e-s]
		for j, mi := range o {
			d := &recs[j]
			send, recv := ms.times(mi)
			d.send, d.recv, d.net = send, recv, 0
			if send != trace.Unknown && recv != trace.Unknown {
				src, dst := ms.nodes(mi)
				d.net = a.clock.Reference(dst, recv) - a.clock.Reference(src, send)
			}
		}
		if first {
			// The pattern's first instance: its shape.
			sh := g.shape[c.shape-s0:][:e-s]
			for j, mi := range o {
				src, dst := ms.nodes(mi)
				sh[j] = shapeRec{from: labels[src], to: labels[dst], par: in.par[s+int32(j)], kind: ms.kind(mi)}
			}
		}
	}
	return r1
}

// accumulateDelays is accumulateRecs for an instance's delayRecs in
// canonical order.
func (a *aggregator) accumulateDelays(p *pattern, o []delayRec, w float64) {
	acc := p.acc
	for j := range o {
		m := &o[j]
		if m.send != trace.Unknown && m.recv != trace.Unknown {
			acc.net[j].Add(float64(m.net)/1e9, w)
		}
		if c := p.closer[j]; c >= 0 {
			if ret := &o[c]; m.send != trace.Unknown && ret.recv != trace.Unknown {
				acc.lat[j].Add(float64(ret.recv-m.send)/1e9, w)
			}
		}
		pj := p.par[j]
		if pj < 0 {
			continue
		}
		pm := &o[pj]
		if m.send != trace.Unknown && pm.recv != trace.Unknown {
			acc.wait[j].Add(float64(m.send-pm.recv)/1e9, w)
		}
		mt, pt := m.send, pm.send
		if mt == trace.Unknown {
			mt = m.recv
		}
		if pt == trace.Unknown {
			pt = pm.recv
		}
		acc.off[j].Add(float64(mt-pt)/1e9, w)
	}
}

// instAhead is how many instances ahead the passes over the instances ask
// for the cache lines of their messages (prefetch).
const instAhead = 16

// gatherAhead is how many of a chunk's instances ahead gather.load asks
// for the cache lines of their messages and cursors.
const gatherAhead = 8

// patCount is a pattern of a whole trace while its instances are counted
// (step 3): its hash and counts.
type patCount struct {
	hash     uint64
	expected float64
	maxProb  float64
	count    int32
}

// patTable finds a whole trace's patterns by hash (step 3): open
// addressing over slots that hold a position in pats (plus one; 0 is
// empty), the hashes compared in pats itself, whose counts the lookup then
// updates: 4 bytes a slot, so that the table stays in the processor's
// caches where a table of keys would not.
type patTable struct {
	slots []int32
	mask  uint64
}

// newPatTable is a table over slots (zero; a power of two).
func newPatTable(slots []int32) *patTable {
	return &patTable{slots: slots, mask: uint64(len(slots) - 1)}
}

// find returns the position in pats of the pattern of hash h, adding a
// new one where there is none.
func (t *patTable) find(pats *patCounts, h uint64) int32 {
	for j := mix(h) & t.mask; ; j = (j + 1) & t.mask {
		pi := t.slots[j]
		if pi == 0 {
			break
		}
		if pats.at(pi-1).hash == h {
			return pi - 1
		}
	}
	pi := pats.add(h)
	if 2*pats.n > len(t.slots) {
		// Twice as many slots, filled again from the hashes in pats.
		t.slots = make([]int32, 2*len(t.slots))
		t.mask = uint64(len(t.slots) - 1)
		for k := range int32(pats.n) {
			t.put(pats.at(k).hash, k)
		}
	} else {
		t.put(h, pi)
	}
	return pi
}

// put places position pi of a hash not in the table.
func (t *patTable) put(h uint64, pi int32) {
	j := mix(h) & t.mask
	for t.slots[j] != 0 {
		j = (j + 1) & t.mask
	}
	t.slots[j] = pi + 1
}

// patCounts holds the patCounts of a whole trace in blocks of patBlock:
// growing a slice of hundreds of thousands of them would allocate five
// times their size, and the garbage collector would run for it.
type patCounts struct {
	blocks [][]patCount
	n      int
	mem    *offHeap // where set, the blocks are outside the heap (offMap)
}

const patBlock = 1 << 14

func (c *patCounts) at(i int32) *patCount { return &c.blocks[i/patBlock][i%patBlock] }

// add appends a pattern of hash h and returns its position.
func (c *patCounts) add(h uint64) int32 {
	if c.n%patBlock == 0 {
		if c.mem != nil {
			c.blocks = append(c.blocks, offMap[patCount](c.mem, patBlock))
		} else {
			c.blocks = append(c.blocks, make([]patCount, patBlock))
		}
	}
	i := int32(c.n)
	c.n++
	c.at(i).hash = h
	return i
}

// byRank orders patterns by expected count, then count, then hash (as
// aggregator.ranked does).
func byRank(p, q *patCount) int {
	return cmpRank(p.expected, q.expected, p.count, q.count, p.hash, q.hash)
}

// cmpRank is the rank order of two patterns by their expected counts
// (pe, qe), counts and hashes: byRank's, and the stream's spill table's.
func cmpRank(pe, qe float64, pc, qc int32, ph, qh uint64) int {
	if pe != qe {
		if pe > qe {
			return -1
		}
		return 1
	}
	if pc != qc {
		if pc > qc {
			return -1
		}
		return 1
	}
	if ph != qh {
		if ph < qh {
			return -1
		}
		return 1
	}
	return 0
}

// rankPatterns returns the positions of the top patterns (all where top
// is 0) of the n at(0), …, at(n−1) in rank order (byRank: a total order,
// as hashes are distinct, so the result does not depend on how it is
// found).
func rankPatterns(n int, at func(int32) *patCount, top int, mem *offHeap) []int32 {
	if top <= 0 || top >= n/4 {
		r := sortByRank(n, at, mem)
		if top > 0 && top < len(r) {
			return r[:top]
		}
		return r
	}
	// A heap of the best top so far, the lowest ranked at its root.
	h := make([]int32, 0, top)
	above := func(x, y int32) bool { return byRank(at(x), at(y)) > 0 }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && above(h[c+1], h[c]) {
				c++
			}
			if !above(h[c], h[i]) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for k := range int32(n) {
		switch {
		case len(h) < top:
			h = append(h, k)
			for i := len(h) - 1; i > 0 && above(h[i], h[(i-1)/2]); i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case byRank(at(k), at(h[0])) < 0:
			h[0] = k
			down(0)
		}
	}
	slices.SortFunc(h, func(x, y int32) int { return byRank(at(x), at(y)) })
	return h
}

// sortByRank returns the positions of the n patterns at(0), …, at(n−1) in
// byRank's order. Where every expected count is a non-negative number
// (sums of probabilities), it sorts integers rather than calling byRank
// n·log n times: each pattern's key is its expected count's bits
// subtracted from 2⁶³−1 (so that larger counts come first; for
// non-negative floats the bits are in the numbers' order) with the low
// bits replaced by the pattern's position, and the runs of patterns whose
// keys agree above those bits (equal expected counts, or nearly) are then
// sorted by byRank itself: as the keys' order never contradicts byRank's,
// the result is byRank's order.
func sortByRank(n int, at func(int32) *patCount, mem *offHeap) []int32 {
	cmp := func(x, y int32) int { return byRank(at(x), at(y)) }
	r := aggMake[int32](mem, n)
	for i := range r {
		r[i] = int32(i)
	}
	shift := uint(bits.Len(uint(n)))
	keys := aggMake[uint64](mem, n)
	for i := range keys {
		e := at(int32(i)).expected
		if !(e >= 0) || math.Signbit(e) {
			slices.SortFunc(r, cmp)
			return r
		}
		keys[i] = (math.MaxInt64-math.Float64bits(e))>>shift<<shift | uint64(i)
	}
	slices.Sort(keys)
	mask := uint64(1)<<shift - 1
	for k, key := range keys {
		r[k] = int32(key & mask)
	}
	// (A run's patterns are copied side by side before they are sorted:
	// byRank's loads through at are scattered, and one run, the patterns
	// seen once with probability 1, can hold most of them.)
	// (The longest run first: its copies' array at once, not grown by
	// doubling. Most patterns can be in one.)
	most := 0
	for a := 0; a < len(keys); {
		b := a + 1
		for b < len(keys) && keys[b]>>shift == keys[a]>>shift {
			b++
		}
		most = max(most, b-a)
		a = b
	}
	run := aggMake[rankRec](mem, most)[:0]
	for a := 0; a < len(keys); {
		b := a + 1
		for b < len(keys) && keys[b]>>shift == keys[a]>>shift {
			b++
		}
		if b-a > 1 {
			run = run[:0]
			for _, x := range r[a:b] {
				p := at(x)
				run = append(run, rankRec{p.expected, p.hash, p.count, x})
			}
			if !sortRunByHash(run, r[a:b], mem) {
				slices.SortFunc(run, func(x, y rankRec) int { return cmpRank(x.expected, y.expected, x.count, y.count, x.hash, y.hash) })
				for k := range run {
					r[a+k] = run[k].pos
				}
			}
		}
		a = b
	}
	return r
}

// sortRunByHash writes the positions of run's patterns to r (as long) in
// byRank's order where they all have the same expected count and count
// (else it returns false): their hashes' order, found by distributing
// them by their top bits over buckets of a few each, then an insertion
// sort of each bucket. (The patterns seen once with probability 1 are
// such a run, most patterns of a large trace: 343 k of 430 k on the
// CoDeeN-sized one, where a comparison sort of them cost ≈ 0.05 s.)
func sortRunByHash(run []rankRec, r []int32, mem *offHeap) bool {
	n := len(run)
	if n < 64 {
		return false
	}
	for k := range run {
		if run[k].expected != run[0].expected || run[k].count != run[0].count {
			return false
		}
	}
	// 1. Each bucket's size (a bucket for every 4–8 patterns), then
	// where each begins.
	nb := bits.Len(uint(n)) - 2
	at := aggMake[int32](mem, 1<<nb+1)
	for k := range run {
		at[run[k].hash>>(64-nb)+1]++
	}
	for b := 1; b < len(at); b++ {
		at[b] += at[b-1]
	}
	// 2. Every pattern's place in run put in its bucket (r).
	fill := at[:1<<nb]
	for k := range run {
		b := run[k].hash >> (64 - nb)
		r[fill[b]] = int32(k)
		fill[b]++
	}
	// (fill[b] is now where bucket b ends, i.e. where b+1 begins.)
	// 3. Each bucket by hash (distinct), then the places made positions.
	lo := int32(0)
	for b := range fill {
		hi := fill[b]
		ks := r[lo:hi]
		if len(ks) > 32 { // (hashes far from uniform)
			slices.SortFunc(ks, func(x, y int32) int { return cmp.Compare(run[x].hash, run[y].hash) })
		}
		for x := 1; x < len(ks); x++ {
			for y := x; y > 0 && run[ks[y]].hash < run[ks[y-1]].hash; y-- {
				ks[y], ks[y-1] = ks[y-1], ks[y]
			}
		}
		lo = hi
	}
	for x, k := range r {
		r[x] = run[k].pos
	}
	return true
}

// rankRec is what byRank reads of a pattern, and its position (sortByRank).
type rankRec struct {
	expected float64
	hash     uint64
	count    int32
	pos      int32
}

// aggregate builds the result paths (res.Paths) from the instances of one
// linker, the linker's and the trace's warnings first; with
// Options.OnPattern, it hands each pattern over as it is built and keeps
// none (the error is OnPattern's). The instances' messages and parents
// (in.msgs, in.par) are rewritten to canonical order and positions.
func (l *linker) aggregate(in *instances, res *Result) error {
	a := newAggregator(l.o.HistTop)
	a.clock = trace.NewClockMap(l.t)
	// A whole trace's arrays outside the heap where the process keeps the
	// memory given back (hugemem.Keeping: wap5 link) and the joint linker
	// drops the messages (its records, l.hot, are what the aggregation
	// reads: --json without --instances), given back at the end: nothing
	// refers to them after (the instances' messages are in.msgs). (The
	// WAP5 method's aggregation is its peak, and its heap has the free
	// memory of its steps to put these arrays in: outside the heap they
	// raised its peak from 292 to 317–320 MB.)
	if hugemem.Keeping() && l.hot != nil {
		a.mem = &offHeap{from: aggMemFrom}
		a.gather.mem = a.mem
		defer a.mem.free()
	}
	labels := a.linkerLabels(l)
	// Step 3: every instance's messages in canonical order and its parents
	// as canonical positions (both in place: order is in.msgs from here
	// on), and its pattern, counted
	// by hash in instance order (so the expected counts are summed in one
	// fixed order).
	// An instance's pattern takes a lookup in a large table and its counts
	// a write far away: these go a batch of instances at a time, in loops
	// of independent loads, which the processor overlaps.
	order := in.msgs
	ms := l.viewOf()
	instPat := aggMake[int32](a.mem, in.len()) // pattern of every instance
	// (The table has a slot per instance at least: unless most instances
	// are patterns of their own, it never grows.)
	pats := &patCounts{mem: a.mem}
	tab := newPatTable(aggMake[int32](a.mem, 1<<bits.Len(uint(in.len()))))
	leaf := edgeLeaves(ms, labels, a.mem)
	// (The hashes of the last instances, by instance mod their number
	// (more than lookAhead): an instance's table slot is asked for when its hash is
	// made, its pattern's counts slotAhead instances later, and its lookup
	// and counts made lookAhead instances later, so that the loads
	// overlap the hashing of the instances in between rather than wait
	// in a burst.)
	const slotAhead, lookAhead = 16, 32
	var hs [2 * lookAhead]uint64
	for i := 0; i < in.len()+lookAhead; i++ {
		if i < in.len() {
			s, e := in.start[i], in.start[i+1]
			// The messages of the instance instAhead on: an instance's
			// messages lie up to seconds apart in the trace.
			if e2 := in.start[min(i+instAhead, in.len())]; e2 > e {
				for _, mi := range in.msgs[in.start[min(i+instAhead-1, in.len())]:e2] {
					ms.prefetchNodes(mi)
				}
			}
			// (A chain is in canonical order as it is.)
			var h uint64
			var chain bool
			if leaf != nil {
				// The hashes of the edges of the instance half as far
				// on (its messages' lines asked for above).
				if k := i + instAhead/2; k < in.len() {
					for _, mi := range in.msgs[in.start[k]:in.start[k+1]] {
						prefetch.At(leaf, ms.edgeOf(mi))
					}
				}
				h, chain = chainHashEdges(ms, leaf, in.msgs[s:e], in.par[s:e])
			} else {
				h, chain = chainHash(ms, labels, in.msgs[s:e], in.par[s:e])
			}
			if !chain {
				h, a.ord = a.orderView(ms, labels, in.msgs[s:e], in.par[s:e], a.ord[:0])
				copy(in.msgs[s:e], a.ord)
				copy(in.par[s:e], a.cpar)
			}
			hs[i%len(hs)] = h
			prefetch.At(tab.slots, int32(mix(h)&tab.mask))
		}
		if k := i - slotAhead; k >= 0 && k < in.len() {
			if pi := tab.slots[mix(hs[k%len(hs)])&tab.mask]; pi > 0 {
				prefetch.Line(uintptr(unsafe.Pointer(pats.at(pi - 1))))
			}
		}
		if k := i - lookAhead; k >= 0 {
			pi := tab.find(pats, hs[k%len(hs)])
			instPat[k] = pi
			p, prob := pats.at(pi), in.prob[k]
			p.count++
			p.expected += prob
			p.maxProb = maxFloat(p.maxProb, prob)
		}
	}
	tab = nil
	ranked := rankPatterns(pats.n, pats.at, l.o.Top, a.mem)
	built := len(ranked)
	// Patterns ranked from full on are handed over with their counts only
	// (Options.Shown).
	full := built
	if l.o.OnPattern != nil && l.o.Shown > 0 && l.o.NoInstances {
		full = min(full, l.o.Shown)
	}
	// Every instance's rank where its pattern is built in full, else −1
	// (instPat rewritten in place), and where each rank's instances,
	// messages and shape go (g.places).
	rank := aggMake[int32](a.mem, pats.n)
	for i := range rank {
		rank[i] = -1
	}
	for r, pi := range ranked[:full] {
		rank[pi] = int32(r)
	}
	instRank := instPat
	for i, pi := range instPat {
		instRank[i] = rank[pi]
	}
	rank, instPat = nil, nil
	g := &a.gather
	collided := g.places(in, instRank, full)
	byRank := g.byRank
	// The instances by rank (CSR), for --instances.
	var insts []int32
	if !l.o.NoInstances {
		insts = make([]int32, byRank[full])
		fill := slices.Clone(byRank[:full])
		for i, r := range instRank {
			if r >= 0 {
				insts[fill[r]] = int32(i)
				fill[r]++
			}
		}
	}
	out := trace.Paths{Algorithm: "linking"}
	// The instances (unless NoInstances) go in the order of their root
	// messages, those of one root as they are built (by rank, then in
	// instance order): the order a stable sort by root gives, found by
	// counting.
	var slot []int32 // the place of insts[q] in out.Instances
	if !l.o.NoInstances && len(insts) > 0 {
		at := make([]int32, l.count()+1)
		for _, ii := range insts {
			at[in.msgs[in.start[ii]]+1]++
		}
		for k := 1; k < len(at); k++ {
			at[k] += at[k-1]
		}
		slot = make([]int32, len(insts))
		for q, ii := range insts {
			root := in.msgs[in.start[ii]]
			slot[q] = at[root]
			at[root]++
		}
		out.Instances = make([]trace.Instance, len(insts))
	}
	if l.o.OnPattern == nil {
		out.Patterns = make([]*trace.Pattern, 0, built)
	}
	out.Warnings = append(append([]string(nil), l.t.Warnings...), l.warnings...)
	if built < pats.n {
		out.Warnings = append(out.Warnings, fmt.Sprintf("linking: %d more patterns not built (top %d)", pats.n-built, l.o.Top))
	}
	if collided > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("linking: %d path instances left out of their patterns' delays and instances: their shapes share a pattern hash with another shape's", collided))
	}
	if l.o.OnPattern != nil && l.o.BeforePatterns != nil {
		res.Paths = out
		l.o.BeforePatterns(res)
	}
	// Step 4, pattern by pattern in rank order: the shape from its first
	// instance, the delays from all of them. The patterns' instances are
	// spread over the trace: rather than chase each pattern's instances
	// through it, their messages' records are gathered in one pass over the
	// instances in their order (near the messages' order), each written
	// where its rank's go (g.load; a chunk of ranks at a time, bounded by
	// gatherMessages), and the patterns then read them in sequence.
	reuse := l.o.OnPattern != nil && l.o.ReusePatterns
	scratch := &patAcc{}
	p := &pattern{}
	for r0 := 0; r0 < full; {
		r1 := g.load(a, in, instRank, r0, full, order, ms, labels)
		i0, m0, s0 := byRank[r0], g.msgAt[r0], g.shapeAt[r0]
		for r := r0; r < r1; r++ {
			sh := g.shape[g.shapeAt[r]-s0 : g.shapeAt[r+1]-s0]
			n := len(sh)
			// (The next pattern's counts, far away in pats.)
			if r+1 < r1 {
				prefetch.Line(uintptr(unsafe.Pointer(pats.at(ranked[r+1]))))
			}
			pc := pats.at(ranked[r])
			p.count, p.expected, p.maxProb, p.hash = int(pc.count), pc.expected, pc.maxProb, pc.hash
			p.par = slices.Grow(p.par[:0], n)[:n]
			p.from = slices.Grow(p.from[:0], n)[:n]
			p.to = slices.Grow(p.to[:0], n)[:n]
			p.kind = slices.Grow(p.kind[:0], n)[:n]
			p.closer = slices.Grow(p.closer[:0], n)[:n]
			for j := range sh {
				p.from[j], p.to[j], p.kind[j], p.par[j] = sh[j].from, sh[j].to, sh[j].kind, sh[j].par
				p.closer[j] = -1
			}
			for j := 1; j < n; j++ {
				if pj := p.par[j]; p.to[j] == p.from[pj] {
					p.closer[pj] = int32(j)
				}
			}
			// The delays' accumulators: new ones where they fill histograms
			// (the steps' Stats keep them), else the previous pattern's,
			// cleared.
			if r < l.o.HistTop {
				p.acc = newPatAcc(n, true)
			} else {
				p.acc = scratch.reset(n)
			}
			recs := g.recs[g.msgAt[r]-m0 : g.msgAt[r+1]-m0]
			for q, w := range g.prob[byRank[r]-i0 : byRank[r+1]-i0] {
				a.accumulateDelays(p, recs[q*n:(q+1)*n], w)
			}
			tp, perm := a.buildPattern(p, reuse)
			tp.Rank = r + 1
			p.acc = nil
			if l.o.OnPattern != nil {
				if err := l.o.OnPattern(tp); err != nil {
					return err
				}
			} else {
				out.Patterns = append(out.Patterns, tp)
			}
			if l.o.NoInstances {
				continue
			}
			// Reorder the instances' messages to the pattern's final child order.
			tmp := make([]int32, len(perm))
			for q := byRank[r]; q < byRank[r+1]; q++ {
				ii := insts[q]
				o := order[in.start[ii]:in.start[ii+1]]
				if perm != nil {
					for k, src := range perm {
						tmp[k] = o[src]
					}
					copy(o, tmp)
				}
				out.Instances[slot[q]] = trace.Instance{Pattern: r + 1, Prob: in.prob[ii], Messages: o}
			}
		}
		r0 = r1
	}
	for r := full; r < built; r++ {
		pc := pats.at(ranked[r])
		tp := &a.tp
		if !reuse {
			tp = new(trace.Pattern)
		}
		*tp = trace.Pattern{Rank: r + 1, Count: int(pc.count), Expected: pc.expected, MaxProb: pc.maxProb}
		if err := l.o.OnPattern(tp); err != nil {
			return err
		}
	}
	res.Paths = out
	return nil
}

func cmpTime(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// build makes a pattern's steps from its accumulated delays and sorts
// children by mean send time. perm maps the final depth-first positions to
// canonical ones (nil when unchanged).
func (a *aggregator) build(p *pattern) (*trace.Pattern, []int32) { return a.buildPattern(p, false) }

// buildPattern is build; with reuse, the pattern, its steps, metrics and
// perm are the aggregator's, overwritten by the next call.
func (a *aggregator) buildPattern(p *pattern, reuse bool) (*trace.Pattern, []int32) {
	n := len(p.par)
	var steps []trace.Step
	if reuse {
		a.steps = slices.Grow(a.steps[:0], n)[:n]
		steps = a.steps
	} else {
		steps = make([]trace.Step, n)
	}
	a.off = slices.Grow(a.off[:0], n)[:n]
	off := a.off
	// Every position's children, in canonical order: kids[kidAt[j]:kidAt[j+1]].
	a.kidAt = slices.Grow(a.kidAt[:0], n+1)[:n+1]
	kidAt := a.kidAt
	clear(kidAt)
	depth := 0
	a.depth = slices.Grow(a.depth[:0], n)[:n]
	for j := 0; j < n; j++ {
		// The step's fields one by one (a trace.Step literal is built on
		// the stack and copied), the Stats set in place.
		s := &steps[j]
		s.From, s.To, s.Kind, s.Count = a.names[p.from[j]], a.names[p.to[j]], p.kind[j], p.count
		s.Delays, s.Children = nil, nil
		if p.acc.hist {
			s.Net, s.Wait = p.acc.net[j].Stats(), p.acc.wait[j].Stats()
		} else {
			setStats(&s.Net, &p.acc.net[j])
			setStats(&s.Wait, &p.acc.wait[j])
		}
		setStats(&s.Latency, &p.acc.lat[j])
		// The offset's mean only (Stats is Mean = 0 without samples, and
		// takes a square root and a math.Max call for the deviation).
		off[j] = 0
		if w, mean, _, _, _ := p.acc.off[j].Sums(); w != 0 {
			off[j] = mean
		}
		a.depth[j] = 1
		if j > 0 {
			kidAt[p.par[j]+1]++
			a.depth[j] = a.depth[p.par[j]] + 1
		}
		depth = max(depth, int(a.depth[j]))
	}
	for j := 0; j < n; j++ {
		kidAt[j+1] += kidAt[j]
	}
	a.kids1 = slices.Grow(a.kids1[:0], n)[:max(n-1, 0)]
	kids := a.kids1
	a.fill = append(a.fill[:0], kidAt[:n]...)
	for j := 1; j < n; j++ {
		pj := p.par[j]
		kids[a.fill[pj]] = int32(j)
		a.fill[pj]++
	}
	var ptrs []*trace.Step
	if reuse {
		a.ptrs = slices.Grow(a.ptrs[:0], len(kids))[:len(kids)]
		ptrs = a.ptrs
	} else if len(kids) > 0 {
		ptrs = make([]*trace.Step, len(kids))
	}
	changed := false
	for j := 0; j < n; j++ {
		lo, hi := kidAt[j], kidAt[j+1]
		ks := kids[lo:hi]
		// sort.SliceIsSorted, then sort.SliceStable (an insertion sort up
		// to 20 elements).
		for i := len(ks) - 1; i > 0; i-- {
			if off[ks[i]] < off[ks[i-1]] {
				changed = true
				if len(ks) <= 20 {
					for x := 1; x < len(ks); x++ {
						for y := x; y > 0 && off[ks[y]] < off[ks[y-1]]; y-- {
							ks[y], ks[y-1] = ks[y-1], ks[y]
						}
					}
				} else {
					sort.SliceStable(ks, func(x, y int) bool { return off[ks[x]] < off[ks[y]] })
				}
				break
			}
		}
		if len(ks) > 0 {
			cs := ptrs[lo:hi:hi]
			for c, k := range ks {
				cs[c] = &steps[k]
			}
			steps[j].Children = cs
		}
	}
	var perm []int32
	if changed {
		// The depth-first order of the sorted children.
		if reuse {
			perm = a.perm[:0]
		} else {
			perm = make([]int32, 0, n)
		}
		a.stack = append(a.stack[:0], 0)
		for len(a.stack) > 0 {
			j := a.stack[len(a.stack)-1]
			a.stack = a.stack[:len(a.stack)-1]
			perm = append(perm, j)
			for c := kidAt[j+1] - 1; c >= kidAt[j]; c-- {
				a.stack = append(a.stack, kids[c])
			}
		}
		if reuse {
			a.perm = perm
		}
	}
	var tp *trace.Pattern
	var metrics map[string]float64
	if reuse {
		if a.metrics == nil {
			a.metrics = make(map[string]float64, 4)
		}
		tp, metrics = &a.tp, a.metrics
	} else {
		tp, metrics = new(trace.Pattern), make(map[string]float64, 4)
	}
	metrics["mean_prob"] = p.expected / float64(p.count)
	metrics["expected_sqrt_count"] = p.expected / math.Sqrt(float64(p.count))
	metrics["depth"] = float64(depth)
	metrics["messages"] = float64(n)
	*tp = trace.Pattern{Count: p.count, Expected: p.expected, MaxProb: p.maxProb, Root: &steps[0], Metrics: metrics}
	return tp, perm
}
