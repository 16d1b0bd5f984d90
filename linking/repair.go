package linking

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"wap5/internal/prefetch"
	"wap5/trace"
)

// countModel is the distribution of how many calls to one destination a
// request span of one class makes (0, 1, 2, 3 or more): "a server usually
// answers each request with the same set of downstream calls". A span's
// class is the node serving it and whether the request came from that node
// itself (classSender), so that two services on one node (a threaded server
// and the helper it calls over a Unix socket) keep their own counts. Its prior comes from the trace
// without any linking — the number of calls from the node to the
// destination per request the node served — and each pass blends in the
// counts of the spans as assigned (the unambiguous spans where a class has
// enough of them).
type countModel struct {
	prior, p [4]float64
	logp     [4]float64
	seen     [4]float64
	// parallel: the class's calls to the destination are made in
	// parallel (parallel.go); their parent is the span's request.
	parallel bool
}

func (c *countModel) set(p [4]float64) {
	c.p = p
	for k := range p {
		c.logp[k] = math.Log(math.Max(p[k], 1e-3))
	}
}

func (ns *nodeSpans) at(c int32) (int32, bool) {
	if c < 0 {
		return -1, false
	}
	s := ns.sidx[c]
	return s, s >= 0
}

// countKey: src is classSender of the requests' senders.
type countKey struct{ src, node, dst trace.NodeID }

// classSender reduces a request's sender to what tells a node's services
// apart: the node itself (the callers of a same-host helper) or anyone else.
// Keying classes by the sender itself made one class per client: on the
// CoDeeN-sized trace (3,000 untraced clients, 115 proxies) linking took 9×
// the time and 4× the memory.
func classSender(src, node trace.NodeID) trace.NodeID {
	if src == node {
		return node
	}
	return -1
}

// spanClass is the class of request c's span: its node, and whether the
// request came from that node itself.
func (j *joint) spanClass(c int32) uint64 {
	src, node := j.spanEnds(c)
	return uint64(uint32(classSender(src, node)))<<32 | uint64(uint32(node))
}

func classOfKey(k countKey) uint64 { return uint64(uint32(k.src))<<32 | uint64(uint32(k.node)) }

type repairScratch struct {
	trig, acts []int32
	open       []int32 // the calls the assignment moves (repair)
	kids       []int
	a, b       []int32
	dsts       []trace.NodeID
	// assignByDest's per-span columns and counts, and the Hungarian
	// algorithm's arrays, reused from block to block.
	colOf, inSpan, ver []int32
	grpSpans           []int32   // assignByDest's spans counted in inSpan (reused)
	col                []int     // the block's assignment: column of every row
	spans              nodeSpans // repair's span arrays, kept for the next node
	cntStart           []int32   // refitCounts' calls per span (CSR)
	cntFound           []int32   // refitCounts' calls
	cntDsts            []trace.NodeID
	cntCalls           []int32        // refitCounts' calls per span
	calls              []int32        // repair's calls of the node
	callDst            []trace.NodeID // and their destinations
	was                []int32        // assignByDest: the spans of a group's calls before
	rounds             roundRec       // assignByDest: the first round's blocks, for the second
	rowv               []float64      // one row's values at its spans' columns
	pend               []pendTerm     // spanCostOf's delay terms, in the sends' order
	rows               sparseRows     // a block's matrix (hungarianSparse)
	ord                []int32        // a row's spans in column order
	sparse             sparseScratch  // hungarianSparse's arrays
	memo               blockMemo
	groups             groupScratch // assignByDest's grouping of the calls
	connLast           pairTable    // connHints' last span per connection
	connPrev           []int32      // connHints' previous span on the connection
	hints              [][]connHint // connHints' lists, reused
	terms              termMemo     // spanCostOf's delay terms of the pass
	costs              costMemo     // span costs of the moves, swaps and call probabilities
	memoVer            []uint32     // nodeSpans.ver, reused
	cw                 []int32      // costWith's calls
	// admStart, admSpans: every call's admissible spans (admissibleAll),
	// CSR by the call's place in the node's calls (admissibleLists).
	admStart, admSpans []int32
	// slotMax is, by destination, the most calls to it per span that a
	// count model allows a block (assignByDest's slots), for the repairs
	// of pass slotGen (termMemo.gen: the models do not change during a
	// pass's repairs); slotAny: a model's destination is not a node.
	slotMax []int8
	slotGen uint32
	slotAny bool
	// spanCi is the count class id (cntCls) of the spans whose request
	// came over an edge, by 2·edge + 1 for a headless span's message
	// (spanClass reads only those): −1 none, −2 not yet looked up; reset
	// where cntCls is made.
	spanCi []int32
	seen   [][4]int32 // refitCounts' counts, by place in cntList
}

// costMemo holds the costs of spans with one call taken out, one added or
// both, as the moves and swaps and then the call probabilities of a node
// ask for them (a second pass of moves asks again for every span nothing
// changed in, the probabilities for what the last pass asked), keyed by
// the span, its version (nodeSpans.ver) and the calls, direct-mapped. A
// span's cost is a function of its calls (in the order the callers make
// them) while the models and the connection hints are as they are, which
// they are from the node's first move to its last probability; epoch
// numbers the nodes' repairs.
type costMemo struct {
	epoch uint32
	ents  []costEnt
}

type costEnt struct {
	s       int32
	ver     uint32
	rm, add int32
	epoch   uint32
	cost    float64
}

// costMemoBits sizes costMemo (32 bytes a slot: 1 MB).
const costMemoBits = 15

// startMemo begins the memo of node's spans ns: every span at version 0.
func (j *joint) startMemo(ns *nodeSpans) {
	m := &j.scr.costs
	if m.ents == nil {
		m.ents = make([]costEnt, 1<<costMemoBits)
	}
	m.epoch++
	if m.epoch == 0 { // wrapped
		clear(m.ents)
		m.epoch = 1
	}
	ns.ver = slices.Grow(j.scr.memoVer[:0], len(ns.req))[:len(ns.req)]
	clear(ns.ver)
	j.scr.memoVer = ns.ver
	ns.memo = !noMemos
}

// changed marks a change of span s's calls.
func (ns *nodeSpans) changed(s int32) {
	if ns.memo {
		ns.ver[s]++
	}
}

// costWith is the cost of span s with call rm taken out of its calls
// (−1: none) and then call add added (−1: none): spanCostAt of
// without(members, rm), or of with(that, add), memoised.
func (j *joint) costWith(b trace.NodeID, ns *nodeSpans, s, rm, add int32) float64 {
	var e *costEnt
	m := &j.scr.costs
	if ns.memo {
		h := mix(uint64(uint32(s))<<32|uint64(ns.ver[s])) ^ mix(uint64(uint32(rm))<<32|uint64(uint32(add)))
		e = &m.ents[h>>(64-costMemoBits)]
		if e.epoch == m.epoch && e.s == s && e.ver == ns.ver[s] && e.rm == rm && e.add == add {
			if memoCheck {
				ns.memo = false
				checkMemo("span cost", e.cost, j.costWith(b, ns, s, rm, add))
				ns.memo = true
			}
			return e.cost
		}
	}
	cw := j.scr.cw[:0]
	if rm >= 0 {
		cw = without(cw, ns.members[s], rm)
	} else {
		cw = append(cw, ns.members[s]...)
	}
	if add >= 0 {
		cw = j.with(cw, cw, add) // in place
	}
	j.scr.cw = cw
	c := j.spanCostAt(b, ns, s, cw)
	if e != nil {
		*e = costEnt{s: s, ver: ns.ver[s], rm: rm, add: add, epoch: m.epoch, cost: c}
	}
	return c
}

// termMemo holds the delay terms −log f of the (trigger, send) pairs that
// span costs read during one pass's repair, direct-mapped: the repair costs
// the same spans with one call more or less over and over (each span's
// reply against its request in every one of them), and a term depends only
// on the pair and on the models, which no step of the repair changes. on
// is set by pass around the repair, which empties the table first (16
// bytes a slot, so that more of it stays in cache).
type termMemo struct {
	on   bool
	ents []termEnt
	gen  uint32 // counts the passes' repairs (start)
}

type termEnt struct {
	trig, act int32 // trig −1: empty
	d         float64
}

// noMemos turns termMemo and costMemo off (tests: the repair must choose
// the same with and without them); memoCheck recomputes every value they
// return and panics where it differs, counting the checks in memoChecked
// (tests).
var (
	noMemos, memoCheck bool
	memoChecked        int
	// stampReused counts the second-round blocks taken as the first
	// round's by their stamps (roundRec.stamp; tests).
	stampReused int
)

// checkMemo is memoCheck's comparison of a memoised value with its
// recomputation (bit for bit).
func checkMemo(what string, got, want float64) {
	memoChecked++
	if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
		panic(fmt.Sprintf("%s memo: %v, recomputed %v", what, got, want))
	}
}

// termMemoBits sizes termMemo (16 bytes a slot: 512 KB).
const termMemoBits = 15

// start begins a pass's repair with an empty table.
func (m *termMemo) start() {
	if m.ents == nil {
		m.ents = make([]termEnt, 1<<termMemoBits)
	}
	for i := range m.ents {
		m.ents[i].trig = -1
	}
	m.on = !noMemos
	m.gen++
}

// negLogf is −logf(p, a, dt) for send a with trigger p received at pr, dt
// the delay from pr to a's send s: pr is p's receive time wherever the span
// costs ask (the request's for t = 0), so the term is a function of the
// pair within a pass.
func (j *joint) negLogf(p, a int32, s, pr int64) float64 {
	e, d, ok := j.termLookup(p, a, s, pr)
	switch {
	case ok:
		return d
	case e == nil:
		return -j.logf(p, a, float64(s-pr)/1e9)
	}
	// (Not through classOfPair's memo of pairs: a pair this memo has not
	// seen in the pass is rarely in that smaller one.)
	d = -j.logfIn(j.classOf(p, a), a, float64(s-pr)/1e9)
	*e = termEnt{trig: p, act: a, d: d}
	return d
}

// termLookup looks the term of (p, a) up in the pass's memo: its value and
// true when it is there; else the entry to fill, nil when the memo is off.
func (j *joint) termLookup(p, a int32, s, pr int64) (*termEnt, float64, bool) {
	m := &j.scr.terms
	if !m.on {
		return nil, 0, false
	}
	e := &m.ents[termSlot(p, a)]
	if e.trig == p && e.act == a {
		if memoCheck {
			checkMemo("term", e.d, -j.logf(p, a, float64(s-pr)/1e9))
		}
		return e, e.d, true
	}
	return e, 0, false
}

// pendTerm is a delay term spanCostOf adds: negLogfKey's arguments, or
// head: the cost of a lost cause (headCost).
type pendTerm struct {
	p, a  int32
	s, pr int64
	tk    termKey
	head  bool
}

// termKey is what the class of a delay term (classOf) reads of the trigger
// and the send's records: the trigger's edge and whether it is a return
// (te, ret), the send's edge and whether it is a reply (ae, reply). The
// span costs have them at hand (spanHead, the records loaded for the
// span's calls): the class is then found without loading the records
// again, scattered over a large trace.
type termKey struct {
	te, ae     int32
	ret, reply bool
}

// negLogfKey is negLogf with the term's key at hand.
func (j *joint) negLogfKey(p, a int32, s, pr int64, tk termKey) float64 {
	e, d, ok := j.termLookup(p, a, s, pr)
	switch {
	case ok:
		return d
	case e == nil:
		return -j.logf(p, a, float64(s-pr)/1e9)
	}
	d = -j.logfEdge(j.classKeyed(p, a, tk), tk.ae, float64(s-pr)/1e9)
	if memoCheck {
		checkMemo("keyed term", d, -j.logf(p, a, float64(s-pr)/1e9))
	}
	*e = termEnt{trig: p, act: a, d: d}
	return d
}

// classKeyOf is the class table (by its node) and key of a term's class
// (classOf's key), from the term's key.
func (j *joint) classKeyOf(tk termKey) (trace.NodeID, uint64) {
	fk := uint64(j.edgeTrig[tk.te])<<33 | uint64(j.edgeAct[tk.ae])<<2
	if tk.reply {
		fk |= 2
	}
	if tk.ret {
		fk |= 1
	}
	return j.edgeSrc[tk.ae], fk
}

// termAhead asks for what negLogfKey(p, a, ...) will read first: the
// term's memo slot and, while the memo is on, its class's table slot.
func (j *joint) termAhead(p, a int32, tk termKey) {
	m := &j.scr.terms
	if !m.on {
		return
	}
	prefetch.At(m.ents, int32(termSlot(p, a)))
	src, fk := j.classKeyOf(tk)
	if tab := j.classTabs[src]; tab != nil {
		tab.prefetch(fk)
	}
}

// termSlot is the slot of the term of (p, a) in termMemo.
func termSlot(p, a int32) uint32 {
	return (uint32(p)*0x9e3779b1 ^ uint32(a)*0x85ebca77) >> (32 - termMemoBits)
}

// classKeyed is classOf(p, a) with the key's parts at hand: the class
// table's key as classOf makes it, found as classOf finds it, else
// classOf itself (which makes the class).
func (j *joint) classKeyed(p, a int32, tk termKey) *classModel {
	src, fk := j.classKeyOf(tk)
	if tab := j.classTabs[src]; tab != nil {
		if c := j.findClass(src, tab, fk); c != nil {
			if memoCheck && c != j.classOf(p, a) {
				panic(fmt.Sprintf("class of terms %d→%d by their key: not classOf's", p, a))
			}
			return c
		}
	}
	return j.classOf(p, a)
}

// logfEdge is logfIn(c, act, dt) for a send act on edge ae.
func (j *joint) logfEdge(c *classModel, ae int32, dt float64) float64 {
	lp := c.d.logpdf(dt) + c.logTrans
	if c.fit {
		// The mixture 0.9·class + 0.1·base, by its larger term.
		lp = math.Max(lp+log09, j.base[ae].logpdf(dt)+log01)
	}
	return lp
}

// roundRec is what the first assignByDest round at a node did, block by
// block, for the second: where a block of the second round finds every
// span its calls could join with the calls the first round's block found
// there, its rows' costs are the same and so is its assignment, which the
// second round then takes as it was instead of recomputing it.
type roundRec struct {
	// hash is, per span, a hash of the set of its calls (kept up to date
	// by assignByDest; a span's calls are in send order, so the set is
	// the content).
	hash   []uint64
	blocks []blockRec
	span   []int32   // the committed rows' spans (−1: none), by block
	cost   []float64 // and the spans' costs after each
	// grpBlk is, per group, where its blocks begin in blocks (one more
	// entry: the end).
	grpBlk []int32
	adm    []int32 // the blocks' admissible spans (blockRec.admFrom)
	// stamp is, per span, the group (first round: its index + 1; second
	// round: after every first-round group) a call of which last left or
	// joined the span, other than for the span it had when the group
	// began.
	stamp []int32
}

// changedSince reports whether one of block br's spans changed after
// stamp st.
func (rec *roundRec) changedSince(br *blockRec, st int32) bool {
	for _, s := range rec.adm[br.admFrom:br.admTo] {
		if rec.stamp[s] > st {
			return true
		}
	}
	return false
}

// blockRec is one block of the first round: fp hashes the admissible spans
// of its rows with their hashes as the block found them; its committed
// rows went to span[from:to].
type blockRec struct {
	fp       uint64
	slots    int32
	from, to int32
	// adm[admFrom:admTo] (roundRec.adm) are the spans admissible for
	// its rows, row by row.
	admFrom, admTo int32
}

// memberHash is a call's part of its span's hash.
func memberHash(k int32) uint64 { return mix(uint64(k) + 0x9e3779b97f4a7c15) }

// spanFP adds span s (with its hash h) to a block's fingerprint.
func spanFP(fp uint64, s int32, h uint64) uint64 { return mix(fp^uint64(uint32(s))) ^ h }

// groupScratch is assignByDest's votes and groups, reused.
type groupScratch struct {
	voteTab, groupTab pairTable
	voteKey           []uint64
	voteN             []int
	best              []int    // by destination node: the most votes (0: none)
	cause             []uint64 // by destination node: the cause with the most votes
	lists             [][]int32
	cis               [][]int32 // the lists' calls by their places in the node's calls
}

// blockMemo holds the span costs of the rows of one assignment block
// (CSR by row) and of the previous block.
type blockMemo struct {
	start, prevStart []int32
	ents, prevEnts   []memoEnt
}

// memoEnt is a span's cost with a call (a), computed at version ver of the
// span's calls.
type memoEnt struct {
	s, ver int32
	a      float64
}

// nodeSpans are the request spans of one node during repair.
type nodeSpans struct {
	req     []int32   // the request opening each span (or a half span's message, loss.go)
	recv    []int64   // when it begins: the request's receive time (a half span's, loss.go), by span (admissibleAll scans these)
	end     []int64   // when it ends: its reply's send time, by span
	sidx    []int32   // request message → span, or −1 (shared, reset after)
	longest int64     // the longest span, ns
	members [][]int32 // calls of each span, by send time
	cost    []float64
	head    []spanHead // what spanCost reads of each span's own messages
	// hints are the outgoing connections of each span's neighbours on its
	// incoming connection; connCost the price of a call on another one.
	hints    [][]connHint
	connCost float64
	// ver counts the changes of each span's calls during the moves and
	// swaps (costMemo's key), from when memo is set.
	ver  []uint32
	memo bool
}

// repair is J4 at node b: starting from the sweep's
// choices, move calls between request spans and swap calls of two spans
// while that lowers the total cost of the spans involved — the delay of
// every send after the latest message of its span before it, the fan-out of
// every received message, and the span's signature — then give every send of
// a span its parent (the latest message the span received before it) and a
// probability (its span against every other admissible span).
func (j *joint) repair(b trace.NodeID, probs bool) {
	// The span arrays are reused from node to node (less garbage: the
	// peak memory of a large trace is the heap grown between collections).
	phaseOf("J4 spans", j.passNo)
	keep := &j.scr.spans
	ns := nodeSpans{sidx: j.spanIdx, req: keep.req[:0], recv: keep.recv[:0], end: keep.end[:0], head: keep.head[:0]}
	calls := j.scr.calls[:0]
	callDst := j.scr.callDst[:0] // each call's destination (improve)
	defer func() {
		for _, c := range ns.req {
			j.spanIdx[c] = -1
		}
		keep.req, keep.recv, keep.end, keep.cost, keep.head = ns.req, ns.recv, ns.end, ns.cost, ns.head
		if ns.members != nil {
			keep.members = ns.members
		}
		j.scr.calls, j.scr.callDst = calls, callDst
	}()
	ins := j.insOf(b)
	// The received messages and their peers are scattered over a large
	// trace: their records are asked for a few messages ahead (as in
	// sweep), and each span's head is read while its messages are at hand.
	for x, c := range ins {
		if a := x + repairAhead; a < len(ins) {
			prefetch.At(j.hot, ins[a])
		}
		if a := x + repairAhead/2; a < len(ins) {
			if ha := &j.hot[ins[a]]; ha.role == roleRequest && ha.peer >= 0 {
				// (And what the span's head reads by the request's
				// edge: its count class and fan-out model.)
				prefetch.At(j.hot, ha.peer)
				prefetch.At(ns.sidx, ins[a])
				if e := 2 * ha.edge; int(e) < len(j.scr.spanCi) {
					prefetch.At(j.scr.spanCi, e)
				}
				prefetch.At(j.fanByEdge, 2*ha.edge)
			}
		}
		hc := &j.hot[c]
		if hc.role != roleRequest {
			continue
		}
		if hp := &j.hot[hc.peer]; j.edgeSrc[hp.edge] == b && hp.send != trace.Unknown && hp.send >= hc.recv {
			ns.sidx[c] = int32(len(ns.req))
			ns.req = append(ns.req, c)
			ns.recv = append(ns.recv, hc.recv)
			ns.end = append(ns.end, hp.send)
			ns.longest = max(ns.longest, hp.send-hc.recv)
			ns.head = j.appendSpanHead(ns.head, c)
		}
	}
	j.addHalfSpans(b, &ns)
	if len(ns.req) == 0 {
		return
	}
	if len(ns.head) != len(ns.req) {
		// Half spans were added (and the spans may have been put in
		// another order): every head again, in the spans' order.
		ns.head = ns.head[:0]
		for _, c := range ns.req {
			ns.head = j.appendSpanHead(ns.head, c)
		}
	}
	ns.members = keep.members[:cap(keep.members)]
	if len(ns.members) < len(ns.req) {
		ns.members = append(ns.members, make([][]int32, len(ns.req)-len(ns.members))...)
	}
	ns.members = ns.members[:len(ns.req)]
	for s := range ns.members {
		ns.members[s] = ns.members[s][:0]
	}
	outs := j.outsOf(b)
	// A settled node (J5c per node, settleNodes) kept its last sweep's
	// links: the assignment below moves only its open calls (those the
	// sweep was unsure of), the others stay in their spans.
	settled := j.settled != nil && j.settled[b] && j.passSettled
	open := j.scr.open[:0]
	defer func() { j.scr.open = open }()
	for x, o := range outs {
		if a := x + repairAhead; a < len(outs) {
			prefetch.At(j.hot, outs[a])
			prefetch.At(j.callSpan, outs[a])
			if settled {
				prefetch.At(j.prob, outs[a]) // (read below)
			}
		}
		if a := x + repairAhead/2; a < len(outs) {
			if c := j.callSpan[outs[a]]; c >= 0 {
				prefetch.At(ns.sidx, c)
			}
		}
		if j.hot[o].role != roleRequest && !j.lostCall(o) {
			continue
		}
		calls = append(calls, o)
		if !settled || j.prob[o] < sureProb {
			open = append(open, o)
			callDst = append(callDst, j.edgeDst[j.hot[o].edge])
		}
		if s, ok := ns.at(j.callSpan[o]); ok {
			ns.members[s] = append(ns.members[s], o)
		}
	}
	j.curSpans = &ns
	defer func() { j.curSpans = nil }()
	// Span costs are computed when first needed (NaN: not yet; most
	// spans of a large trace no call could join): costOf.
	ns.cost = slices.Grow(keep.cost[:0], len(ns.req))[:len(ns.req)]
	for s := range ns.req {
		ns.cost[s] = math.NaN()
	}
	if len(open) > 0 {
		phaseOf("J4 Hungarian", j.passNo)
		j.admissibleLists(b, &ns, open)
		// The second round repeats the first where nothing changed
		// since: after the first round's last change, its groups saw the
		// state the second round starts from (assignByDest).
		if last := j.assignByDest(b, &ns, open, callDst, -1); last >= 0 {
			j.assignByDest(b, &ns, open, callDst, last)
		}
		// The connection tie-breaker, from the assignment as it stands.
		phaseOf("J4 conn hints", j.passNo)
		// (It changes the cost only of a span with calls and hints:
		// elsewhere its term is 0 as it was, the last one added.)
		if j.connHints(b, &ns); ns.connCost > 0 {
			for s := range ns.req {
				if len(ns.hints[s]) > 0 && len(ns.members[s]) > 0 {
					ns.cost[s] = math.NaN()
				} else if memoCheck && !math.IsNaN(ns.cost[s]) {
					checkMemo("span cost kept by the hints", ns.cost[s], j.spanCostAt(b, &ns, int32(s), ns.members[s]))
				}
			}
		}
		phaseOf("J4 moves/swaps", j.passNo)
		j.startMemo(&ns)
		for pass := 0; pass < 2; pass++ {
			if !j.improve(b, &ns, open, callDst) {
				break
			}
		}
	}
	phaseOf("J4 parents", j.passNo)
	if j.tally {
		j.tallySpans(b, &ns, calls) // J5b
	}
	for s, c := range ns.req {
		if a := s + sweepAhead; a < len(ns.req) && ns.head[a].reply >= 0 {
			prefetch.At(j.parent, ns.head[a].reply)
			prefetch.At(j.prob, ns.head[a].reply)
			// (And a span's calls' records, then their returns'.)
			if ms := ns.members[a]; len(ms) > 0 {
				prefetch.At(j.hot, ms[0])
				prefetch.At(j.parent, ms[0])
			}
		}
		if a := s + sweepAhead/2; a < len(ns.req) {
			if ms := ns.members[a]; len(ms) > 0 {
				if r := j.hot[ms[0]].peer; r >= 0 {
					prefetch.At(j.hot, r)
				}
			}
		}
		if len(ns.members[s]) == 0 {
			// A span without calls: its reply's parent is the request
			// (none for a headless span's own message), for certain;
			// what assignSpan does, from the head.
			if hd := &ns.head[s]; hd.reply >= 0 {
				p := c
				if hd.h == halfHead {
					p = -1
				}
				j.parent[hd.reply], j.prob[hd.reply] = p, 1
			}
			continue
		}
		j.assignSpan(b, c, &ns.head[s], ns.members[s])
	}
	// A call the assignment left outside every span starts a path of its
	// own, whatever the sweep had tied it to inside one.
	for ci, k := range calls {
		j.callAhead(&ns, calls, ci)
		if _, ok := ns.at(j.callSpan[k]); ok {
			continue
		}
		if p := j.parent[k]; p >= 0 {
			if _, inSpan := ns.at(j.span[p]); inSpan {
				j.parent[k] = -1
			}
		}
	}
	if probs {
		phaseOf("J4 call probs", j.passNo)
		// (Every call of a settled node: its span against the others, as
		// the assignment left them.)
		// The span costs of a sure call's probability are asked for once
		// (its span without it, every other admissible span with it): they
		// are not memoised (costMemo), where they would only push out the
		// costs the moves and swaps left for the open calls' probabilities.
		list, sure := open, settled && len(open) < len(calls)
		if sure {
			j.admissibleLists(b, &ns, calls)
			list = calls
		}
		memo, x := ns.memo, 0 // x: the next open call (open is in calls' order)
		for ci, k := range list {
			j.callAhead(&ns, list, ci)
			if a := ci + sweepAhead; a < len(list) {
				prefetch.At(j.prob, list[a]) // (written below)
			}
			if sure {
				isOpen := x < len(open) && open[x] == k
				if isOpen {
					x++
				}
				ns.memo = memo && isOpen
			}
			j.prob[k] = float32(j.callProb(b, &ns, k, ci))
		}
		ns.memo = memo
	}
}

// repairAhead is how many messages ahead the repair's loops over a node's
// received messages (J4 spans) and sends (its calls) ask for their records,
// and half of it for their peers' (and spans'): each message does little
// work, less than sweep's, so the records are asked for farther ahead.
const repairAhead = 2 * sweepAhead

// callAhead asks for what a loop over the calls of a node reads of the
// calls a few places after the ci-th (their records and spans, scattered
// over a large trace): by the time the loop gets there they are in cache.
func (j *joint) callAhead(ns *nodeSpans, calls []int32, ci int) {
	if x := ci + repairAhead; x < len(calls) {
		prefetch.At(j.hot, calls[x])
		prefetch.At(j.callSpan, calls[x])
	}
	if x := ci + repairAhead/2; x < len(calls) {
		if c := j.callSpan[calls[x]]; c >= 0 {
			prefetch.At(ns.sidx, c)
		}
	}
}

// need is when call k's span must still be open: its return's arrival (b is
// k's sender). It does not change between passes: the repair reads it from
// msgHot.need rather than from the return, a scattered load.
func (j *joint) need(b trace.NodeID, k int32) int64 {
	if h := &j.hot[k]; h.need != needFar {
		return h.send + int64(h.need)
	}
	return j.needOf(b, k)
}

// needFar marks a need more than 4.29 s after the send in msgHot.need.
const needFar = math.MaxUint32

// needOf computes need for call k from node b.
func (j *joint) needOf(b trace.NodeID, k int32) int64 {
	need := j.hot[k].send
	if r := j.hot[k].peer; r >= 0 && j.dstOf(r) == b && j.hot[r].recv != trace.Unknown && j.hot[r].recv > need {
		need = j.hot[r].recv
	}
	return need
}

func without(dst, s []int32, k int32) []int32 {
	dst = dst[:0]
	for _, x := range s {
		if x != k {
			dst = append(dst, x)
		}
	}
	return dst
}

func (j *joint) with(dst, s []int32, k int32) []int32 {
	if len(s) == 0 {
		// (Most spans have no other call: nothing to sort.)
		return append(dst[:0], k)
	}
	dst = append(dst[:0], s...)
	dst = append(dst, k)
	slices.SortFunc(dst, func(x, y int32) int { return cmp.Or(cmpTime(j.hot[x].send, j.hot[y].send), cmp.Compare(x, y)) })
	return dst
}

// improve makes one pass of moves and swaps; it reports whether anything
// changed. callDst is each call's destination (the calls' records are
// scattered over a large trace).
func (j *joint) improve(b trace.NodeID, ns *nodeSpans, calls []int32, callDst []trace.NodeID) bool {
	changed := false
	for ci, k := range calls {
		// (What the loop reads of the calls a few places on: the
		// records only of those with other spans.)
		if x := ci + sweepAhead; x < len(calls) {
			prefetch.At(j.callSpan, calls[x])
			if j.scr.admStart[x+1]-j.scr.admStart[x] > 0 {
				prefetch.At(j.hot, calls[x])
			}
		}
		if x := ci + sweepAhead/2; x < len(calls) {
			if c := j.callSpan[calls[x]]; c >= 0 {
				prefetch.At(ns.sidx, c)
			}
		}
		sa, ok := ns.at(j.callSpan[k])
		if !ok {
			continue
		}
		// A call that fits no other span can neither move nor swap
		// (a swap puts it into the other call's span): most calls of a
		// large trace. (fits is admissibility without the cap of 16, and
		// a capped list has others.)
		if adm := j.admOf(ci); len(adm) == 0 || len(adm) == 1 && adm[0] == sa {
			if memoCheck {
				for sb := range ns.req {
					if int32(sb) != sa && j.fits(b, ns.req[sb], k) {
						panic(fmt.Sprintf("call %d fits span %d, not among its admissible %v", k, sb, adm))
					}
				}
				memoChecked++
			}
			continue
		}
		bestD, bestS, bestK2 := -1e-9, int32(-1), int32(-1)
		var bestA, bestB float64
		// Moves. (The cost of k's span without k is the same for every
		// span it could move to: computed once.)
		ca, haveCA := 0.0, false
		for _, sb := range j.admOf(ci) {
			if sb == sa {
				continue
			}
			if !haveCA {
				ca, haveCA = j.costWith(b, ns, sa, k, -1), true
			}
			cb := j.costWith(b, ns, sb, -1, k)
			if d := ca + cb - j.costOf(b, ns, sa) - j.costOf(b, ns, sb); d < bestD {
				bestD, bestS, bestK2, bestA, bestB = d, sb, -1, ca, cb
			}
			// Swaps with sb's calls to other destinations: a call
			// to C in the span of a call to D and the other way
			// round (Figure 18's children-d/cc; on multitier a
			// web server's AUTH and AP calls) is two moves that
			// each cost more alone.
			for _, k2 := range ns.members[sb] {
				if j.dstOf(k2) == j.dstOf(k) || !j.fits(b, ns.req[sa], k2) {
					continue
				}
				c1, c2 := j.costWith(b, ns, sa, k, k2), j.costWith(b, ns, sb, k2, k)
				if d := c1 + c2 - j.costOf(b, ns, sa) - j.costOf(b, ns, sb); d < bestD {
					bestD, bestS, bestK2, bestA, bestB = d, sb, k2, c1, c2
				}
			}
		}
		// Swaps with the next calls to the same node.
		for cj := ci + 1; cj < len(calls) && cj <= ci+6; cj++ {
			if callDst[cj] != callDst[ci] {
				continue
			}
			k2 := calls[cj]
			sb, ok := ns.at(j.callSpan[k2])
			if !ok || sb == sa || !j.fits(b, ns.req[sb], k) || !j.fits(b, ns.req[sa], k2) {
				continue
			}
			ca, cb := j.costWith(b, ns, sa, k, k2), j.costWith(b, ns, sb, k2, k)
			if d := ca + cb - j.costOf(b, ns, sa) - j.costOf(b, ns, sb); d < bestD {
				bestD, bestS, bestK2, bestA, bestB = d, sb, k2, ca, cb
			}
		}
		if bestS < 0 {
			continue
		}
		sb := bestS
		if bestK2 < 0 {
			ns.members[sa] = without(nil, ns.members[sa], k)
			ns.members[sb] = j.with(nil, ns.members[sb], k)
		} else {
			ns.members[sa] = j.with(nil, without(nil, ns.members[sa], k), bestK2)
			ns.members[sb] = j.with(nil, without(nil, ns.members[sb], bestK2), k)
			j.setCallSpan(b, bestK2, ns.req[sa])
		}
		ns.changed(sa)
		ns.changed(sb)
		j.setCallSpan(b, k, ns.req[sb])
		ns.cost[sa], ns.cost[sb] = bestA, bestB
		changed = true
	}
	return changed
}

// fits reports whether call k can belong to request c's span.
func (j *joint) fits(b trace.NodeID, c, k int32) bool {
	start, end := j.spanBounds(c, j.curSpans.longest)
	return start <= j.hot[k].send && end >= j.need(b, k)
}

func (j *joint) setCallSpan(b trace.NodeID, k, c int32) {
	j.callSpan[k] = c
	if r := j.hot[k].peer; r >= 0 && j.edgeDst[j.hot[r].edge] == b {
		j.span[r] = c
	}
}

// spanCost is the cost of request c's span at b with the given calls (by
// send time): every send (the calls and the reply) after the latest message
// the span received before it, the fan-out of the received messages, and the
// span's signature.
func (j *joint) spanCost(b trace.NodeID, c int32, calls []int32) float64 {
	if ns := j.curSpans; ns != nil && len(ns.head) == len(ns.req) {
		if s, ok := ns.at(c); ok {
			return j.spanCostAt(b, ns, s, calls)
		}
	}
	hd := j.spanHeadOf(c)
	return j.spanCostOf(b, c, &hd, calls)
}

// spanHead is what spanCost reads of a span's own messages: kept per span
// of the node being repaired (nodeSpans.head), as the messages are
// scattered over a large trace.
type spanHead struct {
	reply     int32 // the reply sent (a headless span's own message), or −1
	ci        int32 // the span's count class (cntCls id), or −1
	rs, start int64 // when the reply is sent (MaxInt64: none); when the span begins for its calls (MinInt64: headless)
	recv      int64 // the request's receive time (its message's Recv)
	// fan is the request's fan-out model (fanOf; nil for a headless
	// span, which pays none): a model's place never changes in a run.
	fan      *fanModel
	h        uint8 // half span kind
	replyReq bool  // the reply is a request (then parallelIn may hold for it)
	// What the class of a delay term reads of the request as trigger and
	// of the reply as the send (termKey): their edges, whether the
	// request is a return and whether the reply is one.
	reqEdge, replyEdge int32
	reqRet, replyRet   bool
}

// spanHeadOf is request c's span head.
func (j *joint) spanHeadOf(c int32) spanHead {
	var hd spanHead
	j.setSpanHead(&hd, c)
	return hd
}

// appendSpanHead appends request c's span head to heads: written in place,
// field by field (a spanHead returned by value was built on the stack and
// copied in 16-byte pieces over its fields' smaller stores, which stalled
// J4 spans at every span).
func (j *joint) appendSpanHead(heads []spanHead, c int32) []spanHead {
	n := len(heads)
	if n == cap(heads) {
		heads = append(heads, spanHead{})
	} else {
		heads = heads[:n+1]
	}
	j.setSpanHead(&heads[n], c)
	return heads
}

// setSpanHead sets *hd to request c's span head (spanHeadOf), every field.
func (j *joint) setSpanHead(hd *spanHead, c int32) {
	h := &j.hot[c]
	hd.reply, hd.ci, hd.rs, hd.start, hd.recv, hd.h = -1, -1, math.MaxInt64, h.recv, h.recv, h.half
	hd.reqEdge, hd.reqRet = h.edge, h.role == roleReply
	hd.replyReq, hd.replyEdge, hd.replyRet = false, 0, false
	switch hd.h {
	case halfNone:
		hd.reply = h.peer
		hr := &j.hot[hd.reply]
		hd.rs, hd.replyReq = hr.send, hr.role == roleRequest
		hd.replyEdge, hd.replyRet = hr.edge, hr.role == roleReply || hr.half == halfHead
	case halfHead:
		hd.reply, hd.rs, hd.start = c, h.send, math.MinInt64
		hd.replyReq = h.role == roleRequest
		hd.replyEdge, hd.replyRet = h.edge, h.role == roleReply || h.half == halfHead
	}
	if hd.h != halfHead {
		hd.fan = j.fanOf(c)
	} else {
		hd.fan = nil
	}
	hd.ci = j.spanCiOf(c)
}

// spanCiOf is the count class id of request c's span (cntCls of
// spanClass), or −1: looked up once per edge (repairScratch.spanCi).
func (j *joint) spanCiOf(c int32) int32 {
	x := 2 * int(j.hot[c].edge)
	if j.hot[c].half == halfHead {
		x++
	}
	m := j.scr.spanCi
	if x >= len(m) {
		n := len(m)
		m = append(m, make([]int32, max(x+1, 2*len(j.edgeSrc))-n)...)
		for i := n; i < len(m); i++ {
			m[i] = -2
		}
		j.scr.spanCi = m
	}
	if m[x] == -2 {
		m[x] = -1
		if ci, ok := j.cntCls.get(j.spanClass(c)); ok {
			m[x] = ci
		}
	}
	return m[x]
}

// spanCostAt is spanCost of span s of ns.
func (j *joint) spanCostAt(b trace.NodeID, ns *nodeSpans, s int32, calls []int32) float64 {
	return j.spanCostOf(b, ns.req[s], &ns.head[s], calls)
}

// spanCostOf is spanCost of request c's span with header hd.
func (j *joint) spanCostOf(b trace.NodeID, c int32, hd *spanHead, calls []int32) float64 {
	sc := &j.scr
	h := hd.h
	reply, rs, start := hd.reply, hd.rs, hd.start
	sc.trig = append(sc.trig[:0], c)
	for _, k := range calls {
		hk := &j.hot[k]
		if hk.send < start {
			return math.Inf(1)
		}
		if r := hk.peer; r >= 0 {
			if hr := &j.hot[r]; j.edgeDst[hr.edge] == b && hr.recv != trace.Unknown {
				if hr.recv > rs {
					return math.Inf(1)
				}
				sc.trig = append(sc.trig, r)
			}
		}
	}
	if len(sc.trig) > 2 {
		slices.SortFunc(sc.trig[1:], func(x, y int32) int { return cmpTime(j.hot[x].recv, j.hot[y].recv) })
	}
	sc.kids = slices.Grow(sc.kids[:0], len(sc.trig))[:len(sc.trig)]
	for i := range sc.kids {
		sc.kids[i] = 0
	}
	cost := 0.0
	// (The reply's send time and whether it may be parallel come from
	// the head: its record is not loaded.)
	// ae, aRet: the send's edge and whether it is a reply (termKey).
	send := func(a int32, s int64, mayPar bool, ae int32, aRet bool) {
		t := 0
		q := 1
		if mayPar && j.anyParallel && j.parallelIn(hd.ci, a) {
			q = len(sc.trig) // a parallel call: the request is its cause
		}
		for ; q < len(sc.trig); q++ {
			if j.hot[sc.trig[q]].recv <= s {
				t = q
			}
		}
		p := sc.trig[t]
		pr := hd.recv // the request's receive time
		if t > 0 {
			pr = j.hot[p].recv
		}
		sc.kids[t]++
		if t == 0 && h == halfHead {
			sc.pend = append(sc.pend, pendTerm{head: true}) // its cause was lost
			return
		}
		// (The trigger's key: the request's from the head, a return's
		// from its record, loaded above.)
		var tk termKey
		if t == 0 {
			tk = termKey{te: hd.reqEdge, ret: hd.reqRet, ae: ae, reply: aRet}
		} else {
			hp := &j.hot[p]
			tk = termKey{te: hp.edge, ret: hp.role == roleReply, ae: ae, reply: aRet}
		}
		sc.pend = append(sc.pend, pendTerm{p: p, a: a, s: s, pr: pr, tk: tk})
		j.termAhead(p, a, tk)
	}
	// 1. Every send's trigger, and its delay term asked for (termAhead):
	// the terms' memo slots and class table slots are scattered, a cache
	// miss each, which the sends' lookups then wait for together rather
	// than one after another.
	sc.pend = sc.pend[:0]
	for _, k := range calls {
		hk := &j.hot[k]
		send(k, hk.send, true, hk.edge, hk.role == roleReply || hk.half == halfHead)
	}
	if reply >= 0 {
		send(reply, rs, hd.replyReq, hd.replyEdge, hd.replyRet)
	}
	// 2. The terms, added in the sends' order. A send's cause may have
	// been lost (loss.go): then the delay is uniform over the span, at
	// the price of the loss.
	for x := range sc.pend {
		pt := &sc.pend[x]
		if pt.head {
			cost += j.headCost()
			continue
		}
		d := j.negLogfKey(pt.p, pt.a, pt.s, pt.pr, pt.tk)
		if j.lossy {
			d = math.Min(d, j.lostCause(b, pt.pr, pt.a))
		}
		cost += d
	}
	for q, p := range sc.trig {
		if q > 0 {
			cost += fanCost(j.fanOf(p), sc.kids[q])
		} else if h != halfHead {
			cost += fanCost(hd.fan, sc.kids[q])
		}
	}
	if j.actorOn != nil && j.actorOn[b] {
		cost += j.actorSpanCost(b, c, calls) // J2b
	}
	return cost + j.countCostIn(hd.ci, calls) + j.connCostOf(j.curSpans, c, calls)
}

func fanCost(f *fanModel, k int) float64 {
	if k == 0 {
		return -math.Log(math.Max(1-math.Exp(-f.cost[0]), 1e-3))
	}
	c := f.cost[0]
	for i := 1; i < k; i++ {
		c += f.cost[min(i, 2)]
	}
	return c
}

// countModelOf is the count model of calls to d from the spans of request
// c's class.
func (j *joint) countModelOf(c int32, d trace.NodeID) *countModel {
	ci := j.spanCiOf(c)
	if ci < 0 {
		return nil
	}
	return j.countModelIn(ci, d)
}

// countModelIn is the count model of calls to d from the spans of the
// class with id ci (in cntCls), or nil.
func (j *joint) countModelIn(ci int32, d trace.NodeID) *countModel {
	if mi := j.countIdxIn(ci, d); mi >= 0 {
		return j.cntList[mi]
	}
	return nil
}

// countIdxIn is the index in cntList of countModelIn(ci, d), or −1.
func (j *joint) countIdxIn(ci int32, d trace.NodeID) int32 {
	k := uint64(uint32(ci))<<32 | uint64(uint32(d))
	e := &j.cntMemo.ents[mix(k)>>(64-cntMemoBits)]
	if e.ok && e.key == k {
		return e.mi
	}
	mi := int32(-1)
	if x, ok := j.cntTab.get(k); ok {
		mi = x
	}
	*e = cntMemoEnt{key: k, mi: mi, ok: true}
	return mi
}

// cntMemo holds the lookups of countIdxIn, direct-mapped (the span costs
// of a node ask for the same class and destination over and over, the
// count refit for a node's few in turn); reset where cntTab is made.
type cntMemo struct {
	ents [1 << cntMemoBits]cntMemoEnt
}

type cntMemoEnt struct {
	key uint64
	mi  int32 // index in cntList, −1: none
	ok  bool
}

// cntMemoBits sizes cntMemo (16 bytes a slot: 4 KB).
const cntMemoBits = 8

// indexCounts gives the span classes of the count models dense ids
// (cntCls) and the models a table by class id and destination (cntTab):
// the repair looks them up for every span cost.
func (j *joint) indexCounts() {
	j.cntCls, j.cntTab, j.cntList, j.cntOrder = newPairTable(64), newPairTable(64), j.cntList[:0], nil
	j.cntMemo = cntMemo{}
	j.scr.spanCi = j.scr.spanCi[:0]
	for i := range j.mod.count.len() {
		key, cm := j.mod.count.at(i)
		k := classOfKey(key)
		ci, ok := j.cntCls.get(k)
		if !ok {
			ci = int32(j.cntCls.n)
			j.cntCls.put(k, ci)
		}
		j.cntTab.put(uint64(uint32(ci))<<32|uint64(uint32(key.dst)), int32(len(j.cntList)))
		j.cntList = append(j.cntList, cm)
	}
	// The same by class id and destination's dense id, where that table
	// is small (refitCounts: every span's destinations, at random).
	j.cntDense, j.cntDst, j.cntND = nil, nil, 0
	dst := make([]int32, len(j.t.Nodes))
	for i := range dst {
		dst[i] = -1
	}
	nd := int32(0)
	for i := range j.mod.count.len() {
		key, _ := j.mod.count.at(i)
		if key.dst < 0 || int(key.dst) >= len(dst) {
			return // (not a node: the table by key alone)
		}
		if dst[key.dst] < 0 {
			dst[key.dst] = nd
			nd++
		}
	}
	if j.cntCls.n*int(nd) > maxCntDense {
		return
	}
	dense := make([]int32, j.cntCls.n*int(nd))
	for i := range dense {
		dense[i] = -1
	}
	for mi := range j.cntList {
		key, _ := j.mod.count.at(mi)
		ci, _ := j.cntCls.get(classOfKey(key))
		dense[ci*nd+dst[key.dst]] = int32(mi)
	}
	j.cntDense, j.cntDst, j.cntND = dense, dst, int(nd)
}

// maxCntDense bounds joint.cntDense (4 bytes an entry).
const maxCntDense = 1 << 20

// countCost is −log of the call counts per destination of request c's span.
func (j *joint) countCost(c int32, calls []int32) float64 {
	ci, known := j.cntCls.get(j.spanClass(c))
	if !known {
		ci = -1
	}
	return j.countCostIn(ci, calls)
}

// countCostIn is countCost for a span of count class ci (−1: none).
func (j *joint) countCostIn(ci int32, calls []int32) float64 {
	sc := &j.scr
	sc.dsts = sc.dsts[:0]
	for _, k := range calls {
		sc.dsts = append(sc.dsts, j.edgeDst[j.hot[k].edge])
	}
	slices.Sort(sc.dsts)
	cost := 0.0
	known := ci >= 0
	if known {
		cost = j.countBase[ci]
	}
	for i := 0; i < len(sc.dsts); {
		n := 1
		for i+n < len(sc.dsts) && sc.dsts[i+n] == sc.dsts[i] {
			n++
		}
		var cm *countModel
		if known {
			cm = j.countModelIn(ci, sc.dsts[i])
		}
		if cm != nil {
			cost += -cm.logp[min(n, 3)] + cm.logp[0]
		} else {
			cost += 7 // a destination the node never calls from a span
		}
		i += n
	}
	return cost
}

// assignSpan gives the sends of c's span their parents: the latest message
// the span received before each.
// (The request's half kind and its reply come from the span's head hd.)
func (j *joint) assignSpan(b trace.NodeID, c int32, hd *spanHead, calls []int32) {
	reply, first := hd.reply, c
	if hd.h == halfHead {
		first = -1 // the sends before any return: their cause was lost
	}
	trig := append(j.scr.trig[:0], c)
	for _, k := range calls {
		if r := j.hot[k].peer; r >= 0 {
			if hr := &j.hot[r]; j.edgeDst[hr.edge] == b && hr.recv != trace.Unknown {
				trig = append(trig, r)
			}
		}
	}
	slices.SortFunc(trig[1:], func(x, y int32) int { return cmpTime(j.hot[x].recv, j.hot[y].recv) })
	j.scr.trig = trig
	// (s is a's send time: the reply's is the head's rs, not read again
	// from its record, a cache miss by now.)
	set := func(a int32, s int64) {
		p := first
		if j.anyParallel && j.parallelCall(c, a) {
			j.parent[a] = p // a parallel call: the request is its cause
			return
		}
		for _, t := range trig[1:] {
			if j.hot[t].recv <= s {
				p = t
			}
		}
		j.parent[a] = p
	}
	for _, k := range calls {
		set(k, j.hot[k].send)
	}
	if reply >= 0 {
		if memoCheck && hd.rs != j.hot[reply].send {
			panic("linking: a span head's reply send time is not its reply's")
		}
		set(reply, hd.rs)
		j.prob[reply] = 1
	}
}

// callProb is call k's probability of belonging to its span rather than to
// any other admissible span, from the cost differences.
func (j *joint) callProb(b trace.NodeID, ns *nodeSpans, k int32, ci int) float64 {
	sa, ok := ns.at(j.callSpan[k])
	if !ok {
		return float64(j.prob[k])
	}
	// The other admissible spans first: with none, the call is its span's
	// for certain (and its span's cost without it is not needed).
	others := j.scr.a[:0]
	for _, sb := range j.admOf(ci) {
		if sb != sa {
			others = append(others, sb)
		}
	}
	j.scr.a = others
	if len(others) == 0 {
		return 1
	}
	sum := 1.0
	ca := j.costWith(b, ns, sa, k, -1)
	for _, sb := range others {
		d := ca + j.costWith(b, ns, sb, -1, k) - j.costOf(b, ns, sa) - j.costOf(b, ns, sb)
		if d < 50 {
			sum += math.Exp(-d)
		}
	}
	return 1 / sum
}

// costOf is span s's cost, computed when not known (NaN).
func (j *joint) costOf(b trace.NodeID, ns *nodeSpans, s int32) float64 {
	if math.IsNaN(ns.cost[s]) {
		ns.cost[s] = j.spanCostAt(b, ns, s, ns.members[s])
	}
	return ns.cost[s]
}

// countPriors sets the count models' priors from the trace: calls from b
// to each destination per request span at b (n ≤ 1: one call with
// probability n; 1 < n ≤ 2: one or two; more: spread over 2 and 3+).
func (j *joint) countPriors(st *spanTally) {
	spans, classes, perEdge := st.spans, st.classes, st.perEdge
	// The calls per node and destination: counted per edge (the node and
	// the destination: st.perEdge), then summed by the pair.
	type nodeDst struct{ node, dst trace.NodeID }
	calls := map[nodeDst]float64{}
	for e, n := range perEdge {
		if n > 0 && spans[j.edgeSrc[e]] > 0 {
			calls[nodeDst{j.edgeSrc[e], j.edgeDst[e]}] += n
		}
	}
	// Every class at a node starts from the node's calls per request; the
	// passes tell the classes apart.
	for nd, n := range calls {
		r := n / spans[nd.node]
		var p [4]float64
		switch {
		case r <= 1:
			// (Allowing two calls with r/4 helped children-0/2 a little,
			// 0.57 → 0.60 of the instances, but opened a second slot per
			// span in the assignment everywhere: +10 % link CPU.)
			p = [4]float64{1 - r, r, 0, 0}
		case r <= 2:
			p = [4]float64{0, 2 - r, r - 1, 0}
		default:
			p = [4]float64{0, 0, 0.5, 0.5}
		}
		for i := range p {
			p[i] = 0.98*p[i] + 0.005
		}
		for _, src := range classes[nd.node] {
			key := countKey{src, nd.node, nd.dst}
			cm, added := j.mod.count.getOrAdd(key)
			if added {
				cm.set(p)
			}
			cm.prior = p
		}
	}
	j.indexCounts()
	j.setCountBase()
}

// spanTally is what countPriors learns of the spans, noted as J2 reads
// every request and its reply (for need and the horizons: one scattered
// read of the replies, not two).
type spanTally struct {
	spans   []float64                       // per node, its spans
	classes map[trace.NodeID][]trace.NodeID // node → the senders of its spans
	// The span classes seen (spanClass): a node's are two at most, the
	// requests from the node itself and from anyone else (classSender),
	// so by node and which (a map lookup per span cost more).
	seen []bool
	// perEdge is, per edge, the calls sent on it (by traced nodes).
	perEdge []float64
}

func (j *joint) newSpanTally() *spanTally {
	return &spanTally{spans: make([]float64, len(j.t.Nodes)), classes: map[trace.NodeID][]trace.NodeID{}, seen: make([]bool, 2*len(j.t.Nodes)),
		perEdge: make([]float64, len(j.edgeSrc))}
}

// note counts request c's span: c was received, and its reply sent by its
// receiver; the requests in message order.
func (st *spanTally) note(j *joint, c int32) {
	hc := &j.hot[c]
	b := j.edgeDst[hc.edge]
	st.spans[b]++
	src, node := j.spanEnds(c)
	k := 2 * int(node)
	if classSender(src, node) != node {
		k++
	}
	if !st.seen[k] {
		st.seen[k] = true
		st.classes[b] = append(st.classes[b], classSender(j.edgeSrc[hc.edge], b))
	}
}

// setCountBase sums −log P(no call) over the destinations of each class.
func (j *joint) setCountBase() {
	j.countBase = slices.Grow(j.countBase[:0], j.cntCls.n)[:j.cntCls.n]
	clear(j.countBase)
	// In key order: float sums in map order differ from run to run.
	// (The models are made before indexCounts: their order is sorted
	// once.)
	if len(j.cntOrder) != j.mod.count.len() {
		keys := make([]int32, j.mod.count.len())
		for i := range keys {
			keys[i] = int32(i)
		}
		slices.SortFunc(keys, func(x, y int32) int {
			a, _ := j.mod.count.at(int(x))
			b, _ := j.mod.count.at(int(y))
			return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.node, b.node), cmp.Compare(a.dst, b.dst))
		})
		j.cntOrder = keys
	}
	for _, i := range j.cntOrder {
		key, cm := j.mod.count.at(int(i))
		ci, _ := j.cntCls.get(classOfKey(key))
		j.countBase[ci] -= cm.logp[0]
	}
}

// refitCounts blends the counts of the spans as assigned into the count
// models.
func (j *joint) refitCounts() { j.refitCountsOf(true) }

// refitCountsOf is refitCounts; without all, only the models' counts and
// probabilities (what J5b's test reads after a settled pass: J5c), not
// which calls are parallel nor the classes' base costs, which only passes
// that follow read (a settled pass whose models J5b doubts refits in full).
func (j *joint) refitCountsOf(all bool) {
	// The destinations of every span's calls, grouped by span (CSR over
	// the requests; a map per span cost most of the refit on large traces).
	isCall := func(k int, c int32) bool {
		if c < 0 {
			return false
		}
		hk, hc := &j.hot[k], &j.hot[c]
		return hk.role == roleRequest && hk.send != trace.Unknown && hc.role == roleRequest && j.edgeDst[hc.edge] == j.edgeSrc[hk.edge]
	}
	n := len(j.hot)
	// 1. The calls, in message order, each span's counted at
	// start[c+2] (so that after the sums start[c+1] is where c's calls
	// begin).
	start := offSized(&j.runMem, j.scr.cntStart, n+2)
	clear(start)
	defer func() { j.scr.cntStart = start }()
	found := offSized(&j.runMem, j.scr.cntFound, n)[:0]
	defer func() { j.scr.cntFound = found }()
	// (A call's span is scattered: its record is asked for a few calls
	// ahead.)
	cs := j.callSpan
	for k, c := range cs {
		if a := k + sweepAhead; a < n && cs[a] >= 0 && j.hot[a].role == roleRequest {
			prefetch.At(j.hot, cs[a])
			prefetch.At(start, cs[a]+2)
		}
		if isCall(k, c) {
			start[c+2]++
			found = append(found, int32(k))
		}
	}
	for c := 0; c <= n; c++ {
		start[c+1] += start[c]
	}
	// 2. Each span's calls' destinations (and the calls themselves, for
	// refitParallel), in message order: start[c+1] advances to where c's
	// end, so that they are then dsts[start[c]:start[c+1]].
	dsts := offSized(&j.runMem, j.scr.cntDsts, len(found))
	calls := offSized(&j.runMem, j.scr.cntCalls, len(found))
	defer func() { j.scr.cntDsts, j.scr.cntCalls = dsts, calls }()
	for x, k := range found {
		if a := x + sweepAhead; a < len(found) {
			prefetch.At(start, cs[found[a]]+1)
		}
		c := cs[k]
		dsts[start[c+1]] = j.edgeDst[j.hot[k].edge]
		calls[start[c+1]] = k
		start[c+1]++
	}
	// Counts come from every span as assigned. (Only the spans no
	// ambiguous call could have joined, where a class had enough, was the
	// rule until 2026-11-22: they are biased towards spans without calls —
	// on Figure 18's children-0/2 every one of them had none, and the model
	// learnt that B rarely calls C.) The sure spans still tell which calls
	// are parallel (parallel.go).
	nc := j.cntCls.n
	sure, tot := make([]float64, nc), make([]float64, nc)
	// Every span's count class (none: a class without count models:
	// nothing to count), and its calls counted by destination, in one
	// loop over the spans J2 marked (spanBits), in message order. (The
	// counts are whole numbers: their sums do not depend on the order.
	// refitParallel reads neither them nor dsts. Testing every message
	// for a span again read every request's reply, scattered: ≈ 0.05
	// CPU-s a refit on the CoDeeN-sized trace.)
	// (Counted by the models' places in cntList, side by side, rather
	// than in the models themselves, scattered.)
	seen := slices.Grow(j.scr.seen[:0], len(j.cntList))[:len(j.cntList)]
	clear(seen)
	dense, dstID, nd := j.cntDense, j.cntDst, int32(j.cntND)
	defer func() { j.scr.seen = seen }()
	for w, f := range j.spanBits {
		for ; f != 0; f &= f - 1 {
			c := w*64 + bits.TrailingZeros64(f)
			ci := j.spanCiOf(int32(c))
			if ci < 0 {
				continue
			}
			if !j.unsure[c] {
				sure[ci]++
			}
			tot[ci]++
			ds := dsts[start[c]:start[c+1]]
			if len(ds) > 1 {
				slices.Sort(ds)
			}
			for i := 0; i < len(ds); {
				m := 1
				for i+m < len(ds) && ds[i+m] == ds[i] {
					m++
				}
				mi := int32(-1)
				if dense != nil {
					if d := dstID[ds[i]]; d >= 0 {
						mi = dense[ci*nd+d]
					}
				} else {
					mi = j.countIdxIn(ci, ds[i])
				}
				if mi >= 0 {
					seen[mi][min(m, 3)]++
				}
				i += m
			}
		}
	}
	for i := range j.mod.count.len() {
		_, cm := j.mod.count.at(i)
		cm.seen = [4]float64{}
	}
	for mi, cm := range j.cntList {
		for k, v := range seen[mi] {
			cm.seen[k] = float64(v)
		}
	}
	if all {
		j.refitParallel(sure, start, calls)
	}
	for i := range j.mod.count.len() {
		key, cm := j.mod.count.at(i)
		ci, _ := j.cntCls.get(classOfKey(key))
		t := tot[ci]
		if t == 0 {
			continue
		}
		cm.seen[0] = t - cm.seen[1] - cm.seen[2] - cm.seen[3]
		var p [4]float64
		for i := range p {
			p[i] = 0.2*cm.prior[i] + 0.8*cm.seen[i]/t
		}
		cm.set(p)
	}
	if all {
		j.setCountBase()
	}
}

// Block sizes of the joint assignment: calls are assigned in blocks of
// assignBlock, of which the first assignCommit are kept before the next
// block (which starts there) is solved.
const (
	assignBlock  = 24
	assignCommit = 12
	noSpanCost   = 1e6
	// overCapacity is the price (nats) of a call joining a span beyond the
	// group's usual number of calls per span.
	overCapacity = 20
	// rootCost is the price of leaving a call out of every span (a call
	// whose request was lost, or a timer's): beyond over-capacity.
	rootCost = 40
)

// assignByDest re-assigns the calls to one destination at a time, all at
// once: a minimum-cost assignment of calls to spans (at most one call of the
// block per span), where putting call k into span s costs what it adds to
// s's cost with s's other calls as they are. Calls of a block past its
// committed part are left out of every span until their own block.
//
// It returns the index of the last group whose calls changed spans (−1:
// none). A group's assignment is a function of the spans' calls as the
// group finds them (a span's calls are kept in send order, ties by index),
// so a later round can stop early: with last ≥ 0, the round it is given to
// stops after group last when no group so far changed anything — every
// later group then finds the state it found in the round that returned
// last, and would assign as it did. The first round (last < 0) records its
// blocks (roundRec); a block of the second that finds the same calls in
// the spans its rows could join takes the first round's assignment.
func (j *joint) assignByDest(b trace.NodeID, ns *nodeSpans, calls []int32, callDst []trace.NodeID, last int) int {
	j.slotBounds()
	// (The groups depend on the calls' parents, which the rounds do not
	// change: the second round takes the first's.)
	if last < 0 {
		j.groupCalls(calls, callDst)
	}
	gs := &j.scr.groups
	groups, cis := gs.lists, gs.cis
	var cols []int32 // span of each column; a span has one column per slot
	var slot []int
	var over []int32 // per row: the span its own column stands for, or −1
	// colOf is the first column of each span in the block (−1: none),
	// reset after every block.
	colOf := j.scr.colOf[:0]
	for range ns.req {
		colOf = append(colOf, -1)
	}
	defer func() { j.scr.colOf = colOf }()
	inSpan := j.scr.inSpan[:0]
	for range ns.req {
		inSpan = append(inSpan, 0)
	}
	defer func() { j.scr.inSpan = inSpan }()
	spans := j.scr.grpSpans[:0] // the spans counted in inSpan
	defer func() { j.scr.grpSpans = spans }()
	// ver counts the changes of every span's calls: a memoised cost is
	// valid while its span's version is unchanged.
	ver := j.scr.ver[:0]
	for range ns.req {
		ver = append(ver, 0)
	}
	defer func() { j.scr.ver = ver }()
	j.scr.memo.prevStart = j.scr.memo.prevStart[:0]
	rec := &j.scr.rounds
	first := last < 0
	if first {
		rec.blocks, rec.span, rec.cost = rec.blocks[:0], rec.span[:0], rec.cost[:0]
		rec.hash = slices.Grow(rec.hash[:0], len(ns.req))[:len(ns.req)]
		for s, ms := range ns.members {
			h := uint64(0)
			for _, k := range ms {
				h ^= memberHash(k)
			}
			rec.hash[s] = h
		}
		rec.grpBlk, rec.adm = rec.grpBlk[:0], rec.adm[:0]
		rec.stamp = slices.Grow(rec.stamp[:0], len(ns.req))[:len(ns.req)]
		clear(rec.stamp)
	}
	nextBlock := 0 // the second round's place in rec.blocks
	var ma []int32
	changedLast := -1
	for gi, g := range groups {
		gc := cis[gi] // g's calls' places in calls (admOf)
		if last >= 0 && gi > last && changedLast < 0 {
			break // every later group would assign as before
		}
		// The group's stamp (roundRec.stamp): the first round's groups
		// 1, 2, ..., the second's after them.
		st := int32(gi + 1)
		if first {
			rec.grpBlk = append(rec.grpBlk, int32(len(rec.blocks)))
		} else {
			st += int32(len(rec.grpBlk) - 1)
		}
		// The group's spans as it finds them: a change is a call that
		// ends in another one.
		// Slots: how many calls of the group one span may take in a block
		// (parallel or repeated calls), from the count models; first
		// the calls per span. (In one loop with the spans the calls
		// had, and, in the first round, with taking every call out of
		// its span, below for the second: the calls' spans are
		// scattered, asked for a few calls ahead.)
		was := j.scr.was[:0]
		spans = spans[:0]
		for x, k := range g {
			viaAhead(g, x, j.callSpan, ns.sidx)
			c := j.callSpan[k]
			was = append(was, c)
			if s, ok := ns.at(c); ok {
				if inSpan[s] == 0 {
					spans = append(spans, s)
				}
				inSpan[s]++
				if first {
					j.takeOut(ns, rec, ver, s, k)
				}
			}
		}
		j.scr.was = was
		prevKeep := 0
		slots := 1
		var atLeast [4]int
		for _, s := range spans {
			n := int(inSpan[s])
			inSpan[s] = 0
			for q := 1; q <= min(n, 3); q++ {
				atLeast[q]++
			}
		}
		for q := 2; q <= 3; q++ {
			if atLeast[q]*5 >= atLeast[1] && atLeast[q] > 0 {
				slots = q
			}
		}
		// (No call of the group can raise slots beyond what the count
		// models of its destinations allow: where that is not more,
		// the calls' spans and models need not be looked up.)
		u := slots + 1
		if !j.scr.slotAny {
			u = 0
			for _, ci := range gc {
				u = max(u, int(j.scr.slotMax[callDst[ci]]))
			}
		}
		pre := slots
		for _, k := range g {
			if u <= slots && !memoCheck {
				break
			}
			c := j.callSpan[k]
			if c < 0 {
				continue
			}
			var cm *countModel
			if s, ok := ns.at(c); ok && ns.head[s].h == halfNone {
				// A whole span's request (a request: repair): its
				// count class is in its head.
				if ci := ns.head[s].ci; ci >= 0 {
					cm = j.countModelIn(ci, j.edgeDst[j.hot[k].edge])
				}
			} else if j.hot[c].role == roleRequest {
				cm = j.countModelOf(c, j.edgeDst[j.hot[k].edge])
			}
			if cm != nil {
				for q := 3; q > slots; q-- {
					if cm.p[q] >= 0.05 {
						slots = q
						break
					}
				}
			}
		}
		if memoCheck {
			// (memoCheck: every call looked up, against the bound.)
			memoChecked++
			if slots > max(pre, u) {
				panic(fmt.Sprintf("group %d: %d slots, beyond the models' bound %d", gi, slots, u))
			}
		}
		// The second round: from the group's first block on, every
		// block that finds what the first round's found would take its
		// assignment, which its calls still have (from that round, and
		// no other group moves them). What a block finds is the spans it
		// could join with the calls the earlier groups and its group's
		// earlier blocks left there: the same wherever no span in its
		// range changed after the first round's group (roundRec.stamp;
		// its earlier blocks, taken as they were, changed none). Those
		// blocks are passed over with their calls left where they are.
		i := 0
		if !first && gi+1 < len(rec.grpBlk) && !noMemos {
			nextBlock = int(rec.grpBlk[gi])
			for i < len(g) && nextBlock < int(rec.grpBlk[gi+1]) {
				br := &rec.blocks[nextBlock]
				keep := min(len(g)-i, assignBlock)
				if i+assignBlock < len(g) {
					keep = assignCommit
				}
				if int(br.slots) != slots || int(br.to-br.from) != keep || rec.changedSince(br, int32(gi+1)) {
					break
				}
				nextBlock++
				i += keep
				stampReused++
			}
		}
		// Take the rest of the group out of the spans (the first round
		// did above).
		for x, k := range g[i:] {
			if first {
				break
			}
			if a := x + sweepAhead/2; i+a < len(g) {
				if c := was[i+a]; c >= 0 {
					prefetch.At(ns.sidx, c)
				}
			}
			if s, ok := ns.at(j.callSpan[k]); ok {
				j.takeOut(ns, rec, ver, s, k)
			}
		}
		for i < len(g) {
			i0 := i // the block's first call in g
			blk := g[i:min(i+assignBlock, len(g))]
			for _, s := range cols {
				colOf[s] = -1
			}
			cols, slot = cols[:0], slot[:0]
			keep := len(blk)
			if i+assignBlock < len(g) {
				keep = assignCommit
			}
			if !first && nextBlock < len(rec.blocks) {
				// The second round: the first's assignment where the
				// block finds what the first found.
				br := rec.blocks[nextBlock]
				nextBlock++
				if int(br.slots) == slots && int(br.to-br.from) == keep {
					// (Where no span of the block changed since, it
					// finds them as they were; else by their calls.)
					same := !noMemos && !rec.changedSince(&br, int32(gi+1))
					if same {
						stampReused++
					} else {
						fp := uint64(0)
						for r := range blk {
							for _, s := range j.admOf(int(gc[i+r])) {
								fp = spanFP(fp, s, rec.hash[s])
							}
						}
						same = fp == br.fp
					}
					if same {
						for r, x := range rec.span[br.from:br.to] {
							k := blk[r]
							if x < 0 {
								j.setCallSpan(b, k, spanRoot)
								continue
							}
							ns.members[x] = j.with(ns.members[x], ns.members[x], k) // in place
							ns.cost[x] = rec.cost[int(br.from)+r]
							ver[x]++
							rec.hash[x] ^= memberHash(k)
							j.setCallSpan(b, k, ns.req[x])
						}
						j.stampMoves(ns, rec, g[i0:i0+keep], was[i0:i0+keep], st)
						i += keep
						prevKeep = keep
						j.scr.memo.prevStart = j.scr.memo.prevStart[:0] // no costs of this block's rows
						continue
					}
				}
			}
			fp := uint64(0)
			admFrom := int32(len(rec.adm))
			// Every row's admissible spans and its cost in each (the
			// span's cost with the call), once: rows the previous block
			// left uncommitted reuse theirs for spans unchanged since.
			mc := &j.scr.memo
			mc.start, mc.ents = append(mc.start[:0], 0), mc.ents[:0]
			// shared: some span is admissible for two rows (else every
			// row's choice is its own, and the assignment needs no matrix).
			shared := false
			// (The rows' records and their returns', which the span
			// costs read, are scattered over a large trace: asked for
			// all at once, before the rows are costed.)
			for _, k := range blk {
				prefetch.At(j.hot, k)
			}
			for _, k := range blk {
				if r := j.hot[k].peer; r >= 0 {
					prefetch.At(j.hot, r)
				}
			}
			for r, k := range blk {
				var pe []memoEnt
				if pr := r + prevKeep; pr+1 < len(mc.prevStart) {
					pe = mc.prevEnts[mc.prevStart[pr]:mc.prevStart[pr+1]]
				}
				q := 0
				rowCol0 := int32(len(cols))
				for _, s := range j.admOf(int(gc[i+r])) {
					fp = spanFP(fp, s, rec.hash[s])
					if first {
						rec.adm = append(rec.adm, s)
					}
					if colOf[s] < 0 {
						colOf[s] = int32(len(cols))
						for q := 1; q <= slots; q++ {
							cols = append(cols, s)
							slot = append(slot, q)
						}
					} else if colOf[s] < rowCol0 {
						shared = true
					}
					e := memoEnt{s: s, ver: ver[s]}
					if q < len(pe) && pe[q].s == s && pe[q].ver == e.ver {
						e.a = pe[q].a
					} else {
						ma = j.with(ma, ns.members[s], k)
						e.a = j.spanCostAt(b, ns, s, ma)
					}
					q++
					mc.ents = append(mc.ents, e)
				}
				mc.start = append(mc.start, int32(len(mc.ents)))
			}
			n, m := len(blk), len(cols)+len(blk)
			over = slices.Grow(over[:0], n)[:n]
			// The matrix of a block whose rows share spans: mostly
			// noSpanCost, so only the rest is written (hungarianSparse).
			sp := &j.scr.rows
			sp.start, sp.col, sp.val = append(sp.start[:0], 0), sp.col[:0], sp.val[:0]
			for s := range cols {
				if math.IsNaN(ns.cost[cols[s]]) {
					ns.cost[cols[s]] = j.spanCostAt(b, ns, cols[s], ns.members[cols[s]])
				}
			}
			col := slices.Grow(j.scr.col[:0], n)[:n]
			j.scr.col = col
			for r := range blk {
				// The row's values at its spans' columns, in its
				// spans' order (noSpanCost: the span cannot take it).
				ents := mc.ents[mc.start[r]:mc.start[r+1]]
				rv := j.scr.rowv[:0]
				d := callDst[gc[i+r]]
				for _, e := range ents {
					s := e.s
					c := e.a - ns.cost[s]
					if c >= noSpanCost {
						for q := 1; q <= slots; q++ {
							rv = append(rv, noSpanCost)
						}
						continue
					}
					if slots == 1 {
						rv = append(rv, c) // (the count model and the span's calls to d only change a second slot)
						continue
					}
					var cm *countModel
					if ci := ns.head[s].ci; ci >= 0 {
						cm = j.countModelIn(ci, d)
					}
					m := 0
					for _, x := range ns.members[s] {
						if j.edgeDst[j.hot[x].edge] == d {
							m++
						}
					}
					for q := 1; q <= slots; q++ {
						// The q-th call of the block into this span is
						// the (m+q)-th to d: the count term changes.
						cq := c
						if cm != nil && q > 1 {
							cq += countStep(cm, m+q) - countStep(cm, m+1)
						}
						rv = append(rv, cq)
					}
				}
				j.scr.rowv = rv
				if !shared {
					// Its spans are its alone, in column order: the
					// assignment gives it its first cheapest column
					// (the Hungarian algorithm's choice for a row whose
					// columns no other row can take; its own column,
					// below, comes last).
					own, ov := float64(rootCost), int32(-1)
					for t, e := range ents {
						if v := rv[t*slots+slots-1] + overCapacity; v < own {
							own, ov = v, e.s
						}
					}
					over[r] = ov
					best, bc := math.Inf(1), len(cols)+r
					for t, e := range ents {
						for q := 0; q < slots; q++ {
							if v := rv[t*slots+q]; v < best {
								best, bc = v, int(colOf[e.s])+q
							}
						}
					}
					if own < best {
						bc = len(cols) + r
					}
					col[r] = bc
					continue
				}
				// The row's entries, its spans' columns ascending (every
				// other column of the row is noSpanCost: the span cannot
				// take it), then its own column.
				ord := j.scr.ord[:0]
				for t := range ents {
					ord = append(ord, int32(t))
				}
				for x := 1; x < len(ord); x++ {
					for y := x; y > 0 && colOf[ents[ord[y-1]].s] > colOf[ents[ord[y]].s]; y-- {
						ord[y-1], ord[y] = ord[y], ord[y-1]
					}
				}
				j.scr.ord = ord
				// Its own column: over capacity into its cheapest span
				// (at a price), or spontaneous when none is admissible.
				own := float64(rootCost)
				over[r] = -1
				for _, t := range ord {
					c0 := colOf[ents[t].s]
					for q := 0; q < slots; q++ {
						sp.col = append(sp.col, c0+int32(q))
						sp.val = append(sp.val, rv[int(t)*slots+q])
					}
					if v := rv[int(t)*slots+slots-1] + overCapacity; v < own {
						own, over[r] = v, cols[c0]
					}
				}
				sp.col = append(sp.col, int32(len(cols)+r))
				sp.val = append(sp.val, own)
				sp.start = append(sp.start, int32(len(sp.col)))
			}
			if shared {
				hungarianSparse(sp, n, m, noSpanCost, col, &j.scr.sparse)
			}
			i += keep
			prevKeep = keep
			mc.prevStart, mc.start = mc.start, mc.prevStart
			mc.prevEnts, mc.ents = mc.ents, mc.prevEnts
			if first {
				n := int32(len(rec.span))
				rec.blocks = append(rec.blocks, blockRec{fp: fp, slots: int32(slots), from: n, to: n + int32(keep), admFrom: admFrom, admTo: int32(len(rec.adm))})
			}
			for r := 0; r < keep; r++ {
				k := blk[r]
				if col[r] >= len(cols) && over[r] < 0 {
					j.setCallSpan(b, k, spanRoot)
					if first {
						rec.span, rec.cost = append(rec.span, -1), append(rec.cost, 0)
					}
					continue
				}
				var s int32
				if col[r] >= len(cols) {
					s = over[r]
				} else {
					s = cols[col[r]]
				}
				ns.members[s] = j.with(ns.members[s], ns.members[s], k) // in place
				// The row's cost in s is the span's new cost while
				// nothing else joined s in this block.
				a, ok := math.NaN(), false
				for _, e := range mc.prevEnts[mc.prevStart[r]:mc.prevStart[r+1]] {
					if e.s == s && e.ver == ver[s] {
						a, ok = e.a, true
						break
					}
				}
				if !ok {
					a = j.spanCostAt(b, ns, s, ns.members[s])
				}
				ns.cost[s] = a
				ver[s]++
				rec.hash[s] ^= memberHash(k)
				if first {
					rec.span, rec.cost = append(rec.span, s), append(rec.cost, a)
				}
				j.setCallSpan(b, k, ns.req[s])
			}
			j.stampMoves(ns, rec, g[i0:i0+keep], was[i0:i0+keep], st)
		}
		j.scr.memo.prevStart = j.scr.memo.prevStart[:0] // the next group starts afresh
		for x, k := range g {
			if j.callSpan[k] != was[x] {
				changedLast = gi
				break
			}
		}
	}
	if first {
		rec.grpBlk = append(rec.grpBlk, int32(len(rec.blocks)))
	}
	for _, s := range cols {
		colOf[s] = -1
	}
	return changedLast
}

// groupCalls groups the calls of a node for assignByDest (groupScratch's
// lists, and their calls' places in calls).
func (j *joint) groupCalls(calls []int32, callDst []trace.NodeID) {
	// Calls are grouped by what usually causes calls to their destination
	// (the sender and role of their parents, by majority): one message
	// causes one call, so within a group a span takes at most one, and
	// replicas of a callee (AP1, AP2) share a group.
	// (Tables and slices reused from node to node instead of maps: the
	// votes are by destination and the sender and role of the parent, one
	// key of 31 + 32 + 1 bits.)
	gs := &j.scr.groups
	nn := len(j.t.Nodes)
	if len(gs.best) < nn {
		gs.best, gs.cause = make([]int, nn), make([]uint64, nn)
	}
	votes := gs.voteTab.reset(64)
	gs.voteKey, gs.voteN = gs.voteKey[:0], gs.voteN[:0]
	for x, k := range calls {
		viaAhead(calls, x, j.parent, j.hot)
		if p := j.parent[k]; p >= 0 {
			hp := &j.hot[p]
			v := uint64(uint32(callDst[x]))<<33 | uint64(uint32(j.edgeSrc[hp.edge]))<<1 | uint64(hp.role&1)
			if x, ok := votes.get(v); ok {
				gs.voteN[x]++
			} else {
				votes.put(v, int32(len(gs.voteKey)))
				gs.voteKey = append(gs.voteKey, v)
				gs.voteN = append(gs.voteN, 1)
			}
		}
	}
	// The most votes, the smallest cause among equals (order-free).
	for x, v := range gs.voteKey {
		d, c, n := v>>33, v&(1<<33-1), gs.voteN[x]
		if n > gs.best[d] || n == gs.best[d] && c < gs.cause[d] {
			gs.best[d], gs.cause[d] = n, c
		}
	}
	groupOf := gs.groupTab.reset(64)
	groups, cis := gs.lists[:0], gs.cis[:0]
	for ci, k := range calls {
		dst := callDst[ci]
		d := uint64(1)<<63 | uint64(dst)
		if gs.best[dst] > 0 {
			d = gs.cause[dst]
		}
		x, ok := groupOf.get(d)
		if !ok {
			x = int32(len(groups))
			groupOf.put(d, x)
			if len(groups) < cap(groups) {
				groups = groups[:len(groups)+1]
				groups[x] = groups[x][:0]
			} else {
				groups = append(groups, nil)
			}
			if len(cis) < cap(cis) {
				cis = cis[:len(cis)+1]
				cis[x] = cis[x][:0]
			} else {
				cis = append(cis, nil)
			}
		}
		groups[x] = append(groups[x], k)
		cis[x] = append(cis[x], int32(ci))
	}
	for _, v := range gs.voteKey {
		gs.best[v>>33], gs.cause[v>>33] = 0, 0
	}
	gs.lists, gs.cis = groups, cis
}

// takeOut takes call k out of span s for assignByDest.
func (j *joint) takeOut(ns *nodeSpans, rec *roundRec, ver []int32, s, k int32) {
	ns.members[s] = without(ns.members[s], ns.members[s], k) // in place
	ns.cost[s] = math.NaN()
	ver[s]++
	rec.hash[s] ^= memberHash(k)
}

// slotBounds sets repairScratch.slotMax for the models as they are in this
// pass: by destination, the largest q of 2 and 3 for which one of its count
// models has p[q] ≥ 0.05 (the test that sets assignByDest's slots), else 0.
func (j *joint) slotBounds() {
	sc := &j.scr
	if sc.slotGen == sc.terms.gen && sc.slotMax != nil {
		return
	}
	sc.slotGen = sc.terms.gen
	sc.slotMax = slices.Grow(sc.slotMax[:0], len(j.t.Nodes))[:len(j.t.Nodes)]
	clear(sc.slotMax)
	sc.slotAny = false
	for mi, cm := range j.cntList {
		key, _ := j.mod.count.at(mi)
		if key.dst < 0 || int(key.dst) >= len(sc.slotMax) {
			sc.slotAny = true
			continue
		}
		for q := 3; q > 1; q-- {
			if cm.p[q] >= 0.05 {
				sc.slotMax[key.dst] = max(sc.slotMax[key.dst], int8(q))
				break
			}
		}
	}
}

// stampMoves stamps (st) the spans that a block's committed calls ks left
// or joined: those not in the span they had when their group began (was).
func (j *joint) stampMoves(ns *nodeSpans, rec *roundRec, ks, was []int32, st int32) {
	for x, k := range ks {
		if c := j.callSpan[k]; c != was[x] {
			if s, ok := ns.at(was[x]); ok {
				rec.stamp[s] = st
			}
			if s, ok := ns.at(c); ok {
				rec.stamp[s] = st
			}
		}
	}
}

// admissibleLists finds the spans every call of node b can belong to
// (admOf): its request arrived before the call was sent, within the node's
// longest span, and its reply is sent after the call's return arrives;
// latest first, at most 16. They depend only on the spans' times and the
// call's, which no step of the repair changes: found once, then read by
// both rounds of the assignment, the moves and swaps and the call
// probabilities (each of which searched them again).
func (j *joint) admissibleLists(b trace.NodeID, ns *nodeSpans, calls []int32) {
	start := append(j.scr.admStart[:0], 0)
	spans := j.scr.admSpans[:0]
	// The calls are mostly in send order: the last span begun at or
	// before a call's send is found from the previous call's.
	p, prev := -1, int64(math.MinInt64)
	for x, k := range calls {
		if a := x + sweepAhead; a < len(calls) {
			prefetch.At(j.hot, calls[a])
		}
		send := j.hot[k].send
		if send >= prev {
			for p+1 < len(ns.recv) && ns.recv[p+1] <= send {
				p++
			}
		} else {
			p = lastAtOrBefore64(ns.recv, send)
		}
		prev = send
		need := j.need(b, k)
		from := send - ns.longest
		n := 0
		for q := p; q >= 0 && n < 16; q-- {
			if ns.recv[q] < from {
				break
			}
			if ns.end[q] < need {
				continue
			}
			n++
			spans = append(spans, int32(q))
		}
		start = append(start, int32(len(spans)))
		if memoCheck {
			checkAdmissible(b, ns, send, need, spans[start[x]:])
		}
	}
	j.scr.admStart, j.scr.admSpans = start, spans
}

// checkAdmissible is memoCheck's test of a call's admissible spans (sent
// at send, its span open until need): every span, latest first, at most 16.
func checkAdmissible(b trace.NodeID, ns *nodeSpans, send, need int64, got []int32) {
	var want []int32
	for s := len(ns.recv) - 1; s >= 0 && len(want) < 16; s-- {
		if ns.recv[s] <= send && ns.recv[s] >= send-ns.longest && ns.end[s] >= need {
			want = append(want, int32(s))
		}
	}
	memoChecked++
	if !slices.Equal(got, want) {
		panic(fmt.Sprintf("node %d: admissible spans %v, by every span %v", b, got, want))
	}
}

// admOf is the admissible spans of the ci-th call of the node being
// repaired (admissibleLists).
func (j *joint) admOf(ci int) []int32 {
	return j.scr.admSpans[j.scr.admStart[ci]:j.scr.admStart[ci+1]]
}

// countStep is the cost of a span's n-th call to a destination given n−1.
func countStep(cm *countModel, n int) float64 {
	return -cm.logp[min(n, 3)] + cm.logp[min(n-1, 3)]
}
