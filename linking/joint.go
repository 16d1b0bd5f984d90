package linking

import (
	"cmp"
	"math"
	"math/bits"
	"runtime/debug"
	"slices"
	"unsafe"

	"wap5/internal/hugemem"
	"wap5/internal/prefetch"
	"wap5/trace"
)

// Span markers for received messages (J3).
const (
	spanRoot = -2 // the return of a spontaneous call: its path ends there
)

// classKey is a transition class: a message from trig into node, causing a
// message from node to act; reply says the caused message is a reply.
type classKey struct {
	trig, node, act trace.NodeID
	reply           bool
	ret             bool // the trigger is a return
}

func compareClassKeys(a, b classKey) int {
	return cmp.Or(cmp.Compare(a.trig, b.trig), cmp.Compare(a.node, b.node), cmp.Compare(a.act, b.act),
		compareBool(a.reply, b.reply), compareBool(a.ret, b.ret))
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

type fanKey struct {
	trig, node trace.NodeID
	ret        bool // the trigger is a return
}

// models are the joint linker's learned delay and fan-out models, carried
// between iterations and between stream chunks.
type models struct {
	// class holds a stream's carried classes, those resident (spill,
	// classspill.go, holds the others).
	class classTab
	// The models keyed by node pairs, outside the heap (pairmodels.go,
	// in pairMem).
	fan   keyedModels[fanKey, fanModel]
	count keyedModels[countKey, countModel]
	// Dense ids of the groups refit pools classes by (given once, when a
	// class is made), so that refit indexes slices instead of maps.
	poolID keyTable[poolKey]
	trigID keyTable[trigKey]
	// pairMem holds fan, count, poolID and trigID; it is referred to by
	// pointer from them, so models are not copied.
	pairMem *offHeap
	// peaks are the classes' candidate peaks (classModel.peak).
	peaks []dist
	// moms are the classes' moments (classModel.momAt).
	moms []moments
	// A stream's classes, carried from chunk to chunk, come from slab; they
	// and moms live outside the heap (mem, freed with the stream): they
	// grow with the classes the trace meets, and in the heap they would
	// count twice towards the peak.
	slab []classModel
	mem  offHeap
	// slabs are all the slabs made (outside the heap, in mem; class's
	// slots point to them).
	slabs [][]classModel
	// The slots and moments given back by classes spilled (models.evict).
	freeCls []*classModel
	freeMom []int32
	spill   *classSpill
	chunk   int32 // the stream's chunks linked so far (classModel.seen)
}

// free gives back m's classes and moments; nothing may refer to them any
// more.
func (m *models) free() {
	if m.spill != nil && m.spill.f != nil {
		m.spill.f.Close()
		m.spill.f = nil
	}
	m.mem.free()
	m.slab, m.slabs, m.moms, m.freeCls, m.freeMom = nil, nil, nil, nil, nil
	m.class.reset()
	m.pairMem.free()
	m.fan, m.count = keyedModels[fanKey, fanModel]{}, keyedModels[countKey, countModel]{}
	m.poolID, m.trigID = keyTable[poolKey]{}, keyTable[trigKey]{}
}

// poolKey groups the classes of one node and action over the senders of
// their triggers; trigKey the classes of one trigger class.
type poolKey struct {
	node, act  trace.NodeID
	reply, ret bool
}

type trigKey struct {
	trig, node trace.NodeID
	ret        bool
}

// intern returns the id of k in ids, adding it when new.
func intern[K comparable](ids *keyTable[K], k K) int32 {
	id, _ := ids.intern(k)
	return id
}

type classModel struct {
	// What a link's cost reads (d, logTrans, fit) comes first, within
	// one cache line for most classes of the slab.
	d dist
	// logTrans is log P(this class | its trigger's class): how often a
	// message like the trigger causes a message like this one.
	logTrans float64
	// The delays of a pass are kept outside the classes (a large trace
	// has millions of classes, most with a delay or two), by idx:
	// refit collects the delays of the chosen links (seconds) node by
	// node; joint.certain are those of links that had no alternative (one
	// admissible parent): the unbiased start of the iteration;
	// joint.cand the delays to every earlier received message in the
	// first pass, node by node: true links pile up in a peak above the
	// spread of false ones.
	idx    int32 // position in joint.classes of the current run
	fit    bool  // d was fitted from chosen links
	active bool  // has data in the current pass (listed in joint.active)
	seen   uint16
	peak   int32 // the peak found in cand (kept for the passes before repair): models.peaks[peak−1], 0: none
	pool   int32 // models.poolID of its poolKey
	trig   int32 // models.trigID of its trigKey
	// momAt is where a stream's class keeps the moments of its chosen
	// delays in the last pass (compare reads them): models.moms[momAt−1];
	// 0: none (momOf). A whole trace's are summed by compare alone
	// (classMoments): 32 bytes less for each of its millions of classes.
	momAt int32
	// seen is the stream chunk (modulo 2¹⁶) that last used a carried
	// class (classspill.go; in the padding after active).
	// (64 bytes, no pointers: a whole trace's classes live outside the
	// Go heap; its key is known to whoever looks it up.)
}

type fanModel struct {
	cost [3]float64 // −log P(≥k children | ≥k−1), k = 1, 2, ≥3
	hist [4]float64 // triggers with 0, 1, 2, ≥3 children in the last pass
}

// fitCosts sets the costs from the histogram, smoothed; with fewer than 10
// triggers the costs stay as they were.
func (f *fanModel) fitCosts() {
	n := f.hist[0] + f.hist[1] + f.hist[2] + f.hist[3]
	if n < 10 {
		return
	}
	ge1 := f.hist[1] + f.hist[2] + f.hist[3]
	ge2 := f.hist[2] + f.hist[3]
	ge3 := f.hist[3]
	f.cost[0] = -math.Log((ge1 + 1) / (n + 2))
	f.cost[1] = -math.Log((ge2 + 0.5) / (ge1 + 1))
	f.cost[2] = -math.Log((ge3 + 0.5) / (ge2 + 1))
}

func newModels() *models {
	pm := &offHeap{}
	m := &models{pairMem: pm,
		fan:    newKeyedModels[fanKey, fanModel](pm, hashFanKey),
		count:  newKeyedModels[countKey, countModel](pm, hashCountKey),
		poolID: newKeyTable(pm, hashPoolKey), trigID: newKeyTable(pm, hashTrigKey)}
	m.class.mem = &m.mem
	return m
}

// maxCand bounds the candidate delays collected per class for the peak.
const maxCand = 50000

// sureProb: a sweep's choice whose parent is at least this likely is sure
// (J5c).
const sureProb = 0.99

// spanCallBonus is the extra cost (nats) of calling a send spontaneous when
// an open request span could have made it.
const spanCallBonus = 10

var defaultFan = fanModel{cost: [3]float64{-math.Log(0.9), -math.Log(0.3), -math.Log(0.3)}}

// joint is the state of one J3 pass.
type joint struct {
	*linker
	r      *rpcs
	mod    *models
	base   []dist // per edge: the WAP5 exponential from step 1
	parent []int32
	prob   []float32
	span   []int32 // received messages: the request whose span they belong to
	kids   []uint8 // children chosen so far (saturating)
	keep   bool
	// callSpan is, for every send of a traced node, the span it was given
	// (the request it serves, or spanRoot).
	callSpan []int32
	// spanBits marks the spans by request (bit k%64 of word k/64): a
	// request received whose reply its receiver sent (J2's setup tests
	// every request so; refitCounts counts them every refit).
	spanBits  []uint64
	countBase []float64 // per span class (id in cntCls): −log P(no call) summed over its destinations
	// Dense ids of the count models' span classes, and the models by class
	// id and destination (indexCounts).
	cntCls, cntTab *pairTable
	cntList        []*countModel
	cntMemo        cntMemo // countModelIn's last lookup
	// cntDense is cntList's index by class id and destination
	// (ci·cntND + cntDst[dst], −1: none), where small enough, else nil.
	cntDense, cntDst []int32
	cntND            int
	cntOrder         []int32 // the count models by key (setCountBase)
	// half marks the messages standing for half spans (loss.go);
	// lostCost is −log of the estimated loss rate (+Inf without loss).
	half     []uint8
	lostCost float64
	// actorOn marks the nodes where the same-thread hint holds (J2b,
	// actors.go); nil at none.
	actorOn []bool
	lossy   bool      // lostCost is finite
	marks   [][]int64 // per node: when it sent a call without return or received a return without call
	// halfAt marks the nodes that received a message marked halfOpen or
	// sent one marked halfHead (addHalfSpans scans the others for none).
	halfAt []bool
	// client marks the nodes that use no fixed port (clients.go): as the
	// senders of triggers they share one class.
	client []bool
	// anyParallel: some count model's calls are parallel (parallel.go).
	anyParallel bool

	// tally: repair sums the cost of its assignment into tallySum (J5b,
	// structure.go).
	tally    bool
	tallySum float64

	scr repairScratch
	// curSpans are the spans of the node being repaired (J4), else nil.
	curSpans *nodeSpans

	candI []int32
	candS []int32   // the candidates' spans
	candQ []int32   // the candidates' places in live
	live  []liveMsg // the sweep's received messages still in play
	node  sweepNode // the node being swept, by position (gather)
	candC []float64
	// unsure marks the spans (by request) that a call with more than one
	// admissible parent could have joined: their replies' delays are not
	// certain.
	unsure []bool
	first  bool // the first pass: collect candidate delays
	// sends and doubtful are how many sends the pass's sweeps linked, and
	// of those how many chose a parent with a probability below 0.99
	// (J5c).
	sends, doubtful int
	passNo          int // the pass under way, from 1 (phase names)
	// horizon is, per node, the longest span (request received → reply
	// sent), at most x: no call waits longer for its cause.
	horizon []int64

	// Fast paths to the models, by edge id.
	// classTabs map (trigger edge, action edge, reply, ret) to a class of
	// classes: one probe per lookup, in a table per node (the node the
	// action is sent from), so that a node's sweep and repair stay within
	// a small table rather than probing one as large as the trace's classes.
	classTabs []*classTable
	// edgeTrig and edgeAct are, per edge, trigNode of its sender and of
	// its receiver, plus 2 (≥ 0): the parts of a class table key.
	edgeTrig, edgeAct []uint32
	classes           []*classModel
	pairMemo          []pairMemo // classOfPair's memo
	// clsMemo holds the classes found lately (findClass), by node and
	// table key: the repair's span costs look up a call's class and a
	// reply's in turn, over and over.
	clsMemo []clsMemoEnt
	slab    []classModel // classModels are allocated from here
	// slabs are a whole trace's slabs of classes (classOf): they hold
	// the classes alive for the run, whatever points to them.
	slabs    [][]classModel
	entArena entArena // the class tables' arrays (classTable)
	// The certain delays of the current pass, with their classes'
	// indexes (see classModel).
	certain delayList
	// cand: the candidate delays of the node being swept in the first
	// pass, flat (classes by index in cand.cls), with candN the number
	// each class has (by class index) and candCls the classes that have
	// any, in the order of their first; fitPeaks groups them by class.
	cand    delayList
	candN   []int32
	candCls []*classModel
	// poolByEdge and trigByEdge cache the pool and trigger ids of the
	// classes (poolOf, trigOf).
	poolByEdge, trigByEdge []int32
	fanByEdge              []*fanModel
	countByEdge            []*countModel
	spanIdx                []int32 // request → its span at the node being repaired, or −1
	// hot is what the passes read of every message, in one record; eps
	// and actors (nil where no message names a thread) the rest of what
	// they read of it (pm, actorOf): with Options.Lean the trace's
	// messages are not kept during the passes.
	hot    []msgHot
	eps    []epPair
	actors []actorPair
	// linkMoms are, after the last refit of a whole trace, the moments
	// of the delays of the chosen links of every class that has two or
	// more, and linkOrder their places in class order (linkClasses;
	// compare reads them).
	linkMoms  []moments
	linkOrder []int32
	// active lists the classes with data in the current pass, so that
	// refitting does not walk every class a large trace ever had.
	active []*classModel
	// refitScr holds refit's per-pool and per-trigger sums (reset after use).
	refitScr struct {
		// A node's pools (by their ids, in the order its classes
		// name them), their local numbers (poolLocal, by pool id; −1:
		// none) and their certain delays side by side (pBy from
		// pStart): refitNode.
		pools, poolLocal []int32
		pStart           []int32
		pBy              []float32
		poolFit          []dist // a pool's fit (by local number), where poolDone
		poolDone         []bool
		// A node's trigger classes (by their ids, in the order its
		// classes name them), their local numbers (trigLocal, by
		// trigger id; −1: none) and their sums (by local number).
		trigs, trigLocal      []int32
		certainN, allN, kinds []float64
		// A node's chosen delays (smp), its classes (acts) and their
		// local numbers (local, by class index), and its chosen and
		// certain delays grouped by class (sBy, cBy from sStart,
		// cStart): refitNode.
		smp   delayList
		acts  []*classModel
		local []int32
		// linkClasses' pending links, a node's links (their table
		// keys, messages and delays), its classes' numbers by table
		// slot (slotLocal), their slots and moments.
		pend, lnk      []int32
		keys           []uint64
		dts            []float64
		slotLocal      []int32
		slots          []int32
		nodeMoms       []moments
		lk             []int32    // the local number of each of the node's links' classes
		fanN           [][4]int32 // the fan-out counts by fanOf slot
		sortTmp        []uint32   // robustFitWith's scratch
		found          []uint64   // the classes with two delays or more, by index
		sStart, cStart []int32
		sBy, cBy       []float32
	}
	// swept is, per node, where its sweep left active and certain
	// (markSwept): refit reads each node's part.
	swept []refitMark
	// fuse: the pass refits each node's classes after its sweep
	// (refitSwept; a whole trace's passes without repair, set by
	// runJoint's stepLast: refit(true, false) must follow); the sweep
	// records the classes and delays of its links (linkCls, linkVal, in
	// the order of the node's sends), and deferred lists the nodes left
	// to refit (a link whose class is not made yet).
	fuse     bool
	linkCls  []*classModel
	linkVal  []float32
	deferred []int32
	// settled marks the nodes settled for the repair passes (J5c per
	// node, settleNodes; nil: none); passSettled: the pass under way
	// passes over them (a repair pass).
	settled     []bool
	passSettled bool
}

// runJoint is J1–J5.
func (l *linker) runJoint() (*instances, Fit, int) {
	// Options.Lean on a large trace: the collector keeps the heap close
	// to what is live from J1 on, not only in the passes (lowGC), so that
	// J1's and J2's garbage does not double the heap while it still holds
	// the messages.
	if l.o.Lean && l.carried == nil && len(l.msgs) >= lowGCMessages {
		defer collectOften(false)()
	}
	rev := l.reverseEdges()
	// J1.
	phase("J1 pairing")
	r := l.pairRPCs()
	// J2: step 1's d per edge as the starting exponential.
	phase("step 1")
	l.step1()
	phase("J2 setup")
	j := &joint{linker: l, r: r, keep: l.o.KeepRootChains}
	j.base = make([]dist, len(l.d))
	for e, d := range l.d {
		j.base[e] = newDist(1, d)
	}
	j.mod = l.carried
	if j.mod != nil {
		// A stream's chunk: its arrays outside the heap from a smaller
		// size (streamMapFrom).
		l.runMem.from, l.linkMem.from, l.keepMem.from = streamMapFrom, streamMapFrom, streamMapFrom
	}
	if j.mod == nil {
		// A whole trace's models end with the run (their node-pair
		// models and moments are outside the heap).
		j.mod = newModels()
		defer j.mod.free()
	}
	n := len(l.msgs)
	// The per-message arrays outside the Go heap (offHeap), given back
	// when the run ends.
	mem := &l.runMem
	j.markHalves()
	// hot, eps and actors outlive the run's other arrays where
	// Options.Lean makes the messages again from them (keepMem).
	j.hot = offMake[msgHot](&l.keepMem, n)
	j.eps = offMake[epPair](&l.keepMem, n)
	if j.hasActors() {
		j.actors = offMake[actorPair](&l.keepMem, n)
	}
	// The client nodes from the same read of the messages (the fixed
	// endpoints J1 found: FixedEndpoints once per run).
	ct := newClientTally(l.t, l.fixedEndpoints())
	for k := range j.msgs {
		l.prefetchMsgs(int32(k))
		m := &j.msgs[k]
		j.hot[k] = msgHot{send: m.Send, recv: m.Recv, peer: r.peer[k], edge: l.edge[k], role: r.role[k], half: j.half[k]}
		j.eps[k] = epPair{m.SrcEP, m.DstEP}
		if j.actors != nil {
			j.actors[k] = actorPair{m.SrcActor, m.DstActor}
		}
		ct.note(m)
	}
	// J1's peers are read from hot from here on: their array goes back
	// (kept, for the arrays the passes make next).
	l.runMem.release(unsafe.Pointer(unsafe.SliceData(r.peer)))
	r.peer = nil
	j.client = ct.clients()
	j.edgeTrig, j.edgeAct = make([]uint32, len(l.edgeSrc)), make([]uint32, len(l.edgeSrc))
	for e := range l.edgeSrc {
		j.edgeTrig[e] = uint32(j.trigNode(l.edgeSrc[e]) + 2)
		j.edgeAct[e] = uint32(j.trigNode(l.edgeDst[e]) + 2)
	}
	// Options.Lean: from here to J6 the messages are hot, eps and
	// actors; the trace's are dropped — the heap's largest object, given
	// back at once on a large trace, before the run's arrays are made —
	// and made again after J6.
	var lean *leanCols
	if l.o.Lean && l.carried == nil {
		lean = l.dropMessages()
		if n >= lowGCMessages {
			debug.FreeOSMemory()
		}
	}
	// (needOf reads the hot records of the replies: all of them first.)
	// Every request's reply, for need and for the receiver's horizon:
	// asked for a few requests ahead (they are scattered over a large
	// trace).
	j.horizon = make([]int64, len(l.t.Nodes))
	spans := j.newSpanTally() // (J2 count priors)
	j.spanBits = offMake[uint64](mem, (n+63)/64)
	clear(j.spanBits)
	for k := range j.hot {
		if a := k + sweepAhead; a < n {
			if ha := &j.hot[a]; ha.role == roleRequest {
				prefetch.Two(uintptr(unsafe.Pointer(&j.hot[ha.peer])), uintptr(unsafe.Pointer(&spans.perEdge[ha.edge])))
			}
		}
		h := &j.hot[k]
		if h.role != roleRequest {
			continue
		}
		if h.send != trace.Unknown {
			spans.perEdge[h.edge]++
			h.need = needFar
			if d := j.needOf(l.edgeSrc[h.edge], int32(k)) - h.send; d < needFar {
				h.need = uint32(d)
			}
		}
		if p := &j.hot[h.peer]; h.recv != trace.Unknown && p.send != trace.Unknown && l.edgeSrc[p.edge] == l.edgeDst[h.edge] {
			src := l.edgeSrc[p.edge]
			j.horizon[src] = max(j.horizon[src], min(p.send-h.recv, l.x))
			spans.note(j, int32(k))
			j.spanBits[k/64] |= 1 << (k % 64)
		}
	}
	for b := range j.horizon {
		if j.horizon[b] == 0 {
			j.horizon[b] = l.x
		}
	}
	// (parent and prob, which J6 reads, apart: the rest is given back
	// before J6 makes the instances.)
	j.parent = offMake[int32](&l.linkMem, n)
	j.prob = offMake[float32](&l.linkMem, n)
	j.span = offMake[int32](mem, n)
	j.kids = offMake[uint8](mem, n)
	j.callSpan = offMake[int32](mem, n)
	j.unsure = offMake[bool](mem, n)
	j.initCaches()
	// A pass adds at most one certain delay per message: the list at
	// that size at once, outside the heap, where only what is written
	// costs memory (no regrowing copies).
	j.certain.cls, j.certain.val = offMakeSparse[int32](mem, n)[:0], offMakeSparse[float32](mem, n)[:0]
	// The arrays the passes read at random: huge pages where the kernel
	// gives them (hugemem.Collapse).
	hugemem.Collapse(l.msgs)
	hugemem.Collapse(l.edge)
	hugemem.Collapse(r.role)
	hugemem.Collapse(j.parent)
	hugemem.Collapse(j.prob)
	hugemem.Collapse(j.span)
	hugemem.Collapse(j.kids)
	hugemem.Collapse(j.callSpan)
	hugemem.Collapse(j.unsure)
	hugemem.Collapse(j.half)
	hugemem.Collapse(j.hot)
	hugemem.Collapse(j.eps)
	hugemem.Collapse(j.spanIdx)
	phase("J2 count priors, J2b actors")
	j.countPriors(spans)
	j.learnActors()
	// The passes hold little in the heap beyond the trace: on a large
	// trace, the garbage of the steps so far is given back and the heap
	// kept close to what is live (lowGC).
	if n >= lowGCMessages {
		defer lowGC()()
	}
	prev := offMake[int32](mem, n)
	fit := Fit{}
	iters := 0
	// J3–J5: sweeps alone until the choices settle, then two passes with
	// the joint repair (the last one also scores every call).
	greedy := max(1, l.o.MaxIterations-2)
	j.first = true
	// step is one pass (J3, with J4 when repair is set) and its refit
	// (J5); probs scores every call (the last pass), last refits only
	// what the results read (refit). settling: a pass that changed fewer
	// than Options.Settle of the links refits only the count models
	// (what J5b reads) and sets settled; the rest of the refit is for
	// passes that follow (refitRest).
	settled := false
	stepLast := func(repair, probs, last, settling bool) {
		copy(prev, j.parent)
		j.passNo = iters + 1
		// (The refit below is refit(true, false) where repair is not
		// set: refitSwept does its step 2 during the pass.)
		j.fuse = !repair && j.carried == nil
		j.pass(rev, repair, probs)
		iters++
		changed := 0
		for i := range prev {
			if prev[i] != j.parent[i] {
				changed++
			}
		}
		fit.Change = float64(changed) / math.Max(1, float64(n))
		// Unambiguous links seed the models; once the joint repair has
		// run, all chosen links refine them (the unambiguous ones are
		// biased towards short delays: they happen before others arrive).
		phaseOf("J5 refit", j.passNo)
		if settling && fit.Change < l.o.Settle {
			j.refitCountsOf(false)
			settled = true
		} else {
			j.refit(!repair, last)
		}
		j.first = false
	}
	step := func(repair, probs bool) { stepLast(repair, probs, probs, false) }
	for iters < greedy {
		step(false, false)
		if iters > 1 && fit.Change < 1e-3 {
			break
		}
		// J5c: where the first sweep was sure of nearly every choice
		// (fewer than the share Options.SettleSweep of its sends had a
		// parent less likely than sureProb), the models it refitted go
		// to the repair: a second sweep would change next to nothing.
		if iters == 1 && j.carried == nil && l.o.SettleSweep > 0 && float64(j.doubtful) < l.o.SettleSweep*float64(j.sends) {
			break
		}
	}
	// J5c: a whole trace whose first repair pass changed fewer than the
	// share Options.Settle of the links has settled: that pass is the last
	// one (it scores every call, in case), unless J5b doubts a count model.
	settle := j.carried == nil && l.o.Settle > 0
	phase("J5c nodes")
	j.settleNodes()
	stepLast(true, settle, false, settle)
	// J5b: where the assignment doubts a count model's structure, try the
	// other one and keep the cheaper assignment.
	phase("J5b test")
	var doubt []*countModel
	if j.carried == nil && keepAlternative != nil {
		doubt = j.doubtfulCounts()
	}
	if settled && len(doubt) == 0 {
		// (What the last pass's refit does of a whole trace.)
		phase("J5c settled")
		if n >= lowGCMessages {
			// The repair's garbage back to the system before the
			// run's peak (linkClasses, compare): a settled run is
			// short, and the scavenger had less time to return it.
			debug.FreeOSMemory()
		}
		j.linkClasses()
	} else {
		if settled {
			// The pass's whole refit after all (the count models
			// again: the same).
			phaseOf("J5 refit", j.passNo)
			j.refit(false, false)
			phase("J5b test")
		}
		j.tally, j.tallySum = len(doubt) > 0, 0
		step(true, true)
	}
	if len(doubt) > 0 {
		cost := j.tallySum
		saved, savedFit := j.saveState(), fit
		for _, cm := range doubt {
			cm.prior = zeroOrTwo(cm.prior)
			cm.set(cm.prior)
		}
		j.setCountBase()
		j.tally = false
		for range structPasses - 1 {
			step(true, false)
		}
		j.tally, j.tallySum = true, 0
		step(true, true)
		if !keepAlternative(cost, j.tallySum) {
			j.restoreState(saved)
			fit = savedFit
			if j.carried == nil {
				j.linkClasses() // of the restored links
			}
		}
		j.tally = false
	}
	phase("fit compare")
	// The delay list is read no more: given back before compare groups
	// the links by class.
	if j.carried == nil {
		for _, p := range []unsafe.Pointer{unsafe.Pointer(unsafe.SliceData(j.certain.cls)), unsafe.Pointer(unsafe.SliceData(j.certain.val))} {
			l.runMem.release(p)
		}
		j.certain, j.swept = delayList{}, nil
	}
	fit.Settled = fit.Change < 1e-3
	if j.carried == nil {
		fit = j.compare(fit)
	}
	// A stream's chunk leaves it to Stream.Close (models.compare): only
	// the last chunk's counts, and comparing every carried class at
	// every chunk sorted all their keys (hundreds of thousands) anew.
	if afterJoint != nil {
		afterJoint(j) // tests: measure the final state
	}
	for _, c := range j.active {
		c.active = false // the models may be carried into another run
	}
	// Nothing refers to the run's arrays but parent and prob any more:
	// given back before J6 adds the instances to the heap.
	l.dropIndex()
	l.runMem.free()
	// What is kept goes back now (taking J6's arrays from it instead
	// raised the peak by ≈ 20 MB in some runs: their pages were not all
	// resident). Where the messages are not made again (drop), the
	// instances live outside the heap in memory mapped afresh (keepMem,
	// given back after the aggregation): in the heap they made the
	// collector run twice during J6 on the CoDeeN-sized trace, each time
	// over the heap's pointers (the trace's endpoint names).
	hugemem.Trim()
	drop := lean != nil && l.o.DropMessages && l.o.NoInstances && !l.o.AggregateClients
	var inMem *offHeap
	if drop && hugemem.Keeping() {
		inMem = &l.keepMem
	}
	// J6.
	phase("J6 instances")
	in := j.instances(inMem)
	l.linkMem.free()
	if lean != nil {
		if drop {
			// The aggregation reads hot and the kinds (msgView), and
			// the messages are not made again: run gives keepMem back
			// after the aggregation, eps and actors now.
			l.hot, l.kinds = j.hot, lean.kind
			l.keepMem.release(unsafe.Pointer(unsafe.SliceData(j.eps)))
			l.keepMem.release(unsafe.Pointer(unsafe.SliceData(j.actors)))
			j.eps, j.actors = nil, nil
			return in, fit, iters
		}
		l.remakeMessages(j, lean)
	}
	l.keepMem.free()
	return in, fit, iters
}

// afterJoint, when set (tests only), sees the joint linker's final state
// before the instances are built.
var afterJoint func(j *joint)

// closes returns when the span ends: the request's reply send time; never
// for a span without a known reply; already for a root call's return.
func (j *joint) closes(sp int32) int64 {
	if sp == spanRoot {
		if j.keep {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	h := &j.hot[sp]
	if h.role == roleRequest {
		if p := h.peer; j.hot[p].send != trace.Unknown {
			return j.hot[p].send
		}
	}
	if h.half == halfOpen && h.recv != trace.Unknown { // its reply was lost: no longer than the node's spans
		return h.recv + j.horizon[j.edgeDst[h.edge]]
	}
	return math.MaxInt64
}

// classTableKey is the node (the action's sender) whose class table holds
// the class of trig causing act, and the class's key in it; reply and ret
// are the key's flags.
func (j *joint) classTableKey(trig, act int32) (src trace.NodeID, fk uint64, reply, ret bool) {
	ht, ha := &j.hot[trig], &j.hot[act]
	te, ae := ht.edge, ha.edge
	reply, ret = ha.role == roleReply || ha.half == halfHead, ht.role == roleReply
	fk = uint64(j.edgeTrig[te])<<33 | uint64(j.edgeAct[ae])<<2
	if reply {
		fk |= 2
	}
	if ret {
		fk |= 1
	}
	return j.edgeSrc[ae], fk, reply, ret
}

// findClassOf is classOf(trig, act) where the class is made already, else
// nil (it makes nothing).
func (j *joint) findClassOf(trig, act int32) *classModel {
	src, fk, _, _ := j.classTableKey(trig, act)
	tab := j.classTabs[src]
	if tab == nil {
		return nil
	}
	return j.findClass(src, tab, fk)
}

func (j *joint) classOf(trig, act int32) *classModel {
	src, fk, reply, ret := j.classTableKey(trig, act)
	te, ae := j.hot[trig].edge, j.hot[act].edge
	tab := j.classTabs[src]
	if tab == nil {
		tab = j.newClassTable()
		j.classTabs[src] = tab
	}
	// The classes found lately, mostly without a probe: the refit and
	// the repair look up the links of one node in turn, of few classes.
	if c := j.findClass(src, tab, fk); c != nil {
		return c
	}
	return j.newClass(src, tab, fk, te, ae, reply, ret)
}

// newClass is classOf's class of table key fk at node src (table tab),
// which findClass did not find: the trigger's edge te, the action's ae and
// the key's flags reply and ret.
func (j *joint) newClass(src trace.NodeID, tab *classTable, fk uint64, te, ae int32, reply, ret bool) *classModel {
	k := classKey{trig: j.trigNode(j.edgeSrc[te]), node: src, act: j.trigNode(j.edgeDst[ae]), reply: reply, ret: ret}
	// The node's table is keyed by the rest of the class key (the
	// senders of the trigger and the destination as trigNode knows them,
	// reply, ret: one table key per class key), so a class is made at its
	// first lookup: only a stream's classes, carried from chunk to chunk,
	// are kept in the map (a whole trace's classes are j.classes; keeping
	// the clients' in the map too, as until 2026-11-26, cost a map lookup
	// and insert per class, and nothing read them).
	keyed := j.carried != nil
	var c *classModel
	if keyed {
		r, _ := j.mod.class.get(k)
		c = r.c
		if c != nil && int(c.idx) < len(j.classes) && j.classes[c.idx] == c {
			tab.put(fk, c) // in this run already (cannot happen: one key per class)
			return c
		}
		if c == nil {
			c = j.mod.reload(k) // spilled by an earlier chunk (classspill.go)
		}
		if c == nil {
			// Carried to the next chunk: in the models' own slots.
			c = j.mod.newClass()
			*c = classModel{d: j.base[ae], pool: j.poolOf(ae, k), trig: j.trigOf(te, k)}
			j.mod.class.set(k, classRef{c: c, rec: -1})
		}
		c.seen = uint16(j.mod.chunk)
	}
	if c == nil {
		if len(j.slab) == 0 {
			// A whole trace's classes end with the run: in slabs
			// growing to 64k classes, outside the heap from 4 MB
			// (millions of them on a large trace), kept in j.slabs so
			// that the tables and lists outside the heap may point to
			// them.
			j.slab = offMake[classModel](&j.runMem, min(1<<16, max(1024, len(j.classes))))
			j.slabs = append(j.slabs, j.slab)
		}
		c = &j.slab[0]
		j.slab = j.slab[1:]
		*c = classModel{d: j.base[ae], pool: j.poolOf(ae, k), trig: j.trigOf(te, k)}
	}
	c.idx = int32(len(j.classes))
	tab.put(fk, c)
	j.clsMemo[clsMemoSlot(src, fk)] = clsMemoEnt{key: fk, src: src, c: c}
	if j.carried == nil {
		j.classes = offGrow(&j.runMem, j.classes, 1)
	}
	j.classes = append(j.classes, c)
	return c
}

// clsMemoEnt is a slot of joint.clsMemo: the class of table key key at
// node src (c nil: empty).
type clsMemoEnt struct {
	key uint64
	src trace.NodeID
	c   *classModel
}

// clsMemoBits sizes joint.clsMemo (24 bytes a slot: 24 KB).
const clsMemoBits = 10

func clsMemoSlot(src trace.NodeID, fk uint64) uint64 {
	return mix(fk^uint64(uint32(src))*0x9e3779b97f4a7c15) >> (64 - clsMemoBits)
}

// findClass is the class of table key fk in node src's table tab, or nil
// where there is none yet: through clsMemo, which holds only what the
// table held (a key's class never changes in a run).
func (j *joint) findClass(src trace.NodeID, tab *classTable, fk uint64) *classModel {
	e := &j.clsMemo[clsMemoSlot(src, fk)]
	if e.c != nil && e.key == fk && e.src == src {
		return e.c
	}
	c := tab.get(fk)
	if c != nil {
		*e = clsMemoEnt{key: fk, src: src, c: c}
	}
	return c
}

// poolOf is the pool id of class k, whose action is on edge ae: interned
// once per edge (and reply, ret), in the order classes are made.
func (j *joint) poolOf(ae int32, k classKey) int32 {
	x := 4 * int(ae)
	if k.reply {
		x += 2
	}
	if k.ret {
		x++
	}
	if x >= len(j.poolByEdge) {
		n := len(j.poolByEdge)
		j.poolByEdge = append(j.poolByEdge, make([]int32, 4*len(j.edgeSrc)-n)...)
		for i := n; i < len(j.poolByEdge); i++ {
			j.poolByEdge[i] = -1
		}
	}
	if id := j.poolByEdge[x]; id >= 0 {
		return id
	}
	id := intern(&j.mod.poolID, poolKey{k.node, k.act, k.reply, k.ret})
	j.poolByEdge[x] = id
	return id
}

// trigOf is the trigger id of class k, whose trigger is on edge te:
// interned once per edge (and ret) where the trigger's receiver is the
// class's node (always in a whole trace's passes).
func (j *joint) trigOf(te int32, k classKey) int32 {
	if j.edgeDst[te] != k.node {
		return intern(&j.mod.trigID, trigKey{k.trig, k.node, k.ret})
	}
	x := 2 * int(te)
	if k.ret {
		x++
	}
	if x >= len(j.trigByEdge) {
		n := len(j.trigByEdge)
		j.trigByEdge = append(j.trigByEdge, make([]int32, 2*len(j.edgeSrc)-n)...)
		for i := n; i < len(j.trigByEdge); i++ {
			j.trigByEdge[i] = -1
		}
	}
	if id := j.trigByEdge[x]; id >= 0 {
		return id
	}
	id := intern(&j.mod.trigID, trigKey{k.trig, k.node, k.ret})
	j.trigByEdge[x] = id
	return id
}

// classTable maps a class's key at one node (the key classOf builds) to the
// class: pairTable's probing with the model itself in the slot, so that a
// lookup does not follow an index through joint.classes (a scattered load
// on a large trace). It grows at three quarters full, not half (pairTable):
// the lookups that repeat a key skip the table (classOf, classLive), and a
// large trace's tables hold millions of classes (CoDeeN-sized trace: peak
// RSS −60 MB).
type classTable struct {
	ents []classEnt
	n    int
	// arena, where set, holds ents outside the heap (a whole trace's
	// run: its classes are in joint.slabs); nil: in the heap (a stream's).
	arena *entArena
}

type classEnt struct {
	key uint64
	c   *classModel // nil: empty slot
}

// newClassTable is a node's empty class table.
func (j *joint) newClassTable() *classTable {
	if j.carried == nil {
		if j.entArena.mem == nil {
			j.entArena.mem = &j.runMem
		}
		return &classTable{ents: j.entArena.get(64), arena: &j.entArena}
	}
	return &classTable{ents: make([]classEnt, 64)}
}

// entArena hands out the class tables' arrays of a whole trace's run
// outside the heap: a large trace's tables hold millions of entries, grown
// by doubling, node after node. Sizes are powers of two; an array given
// back (a table that grew) is reused by the next table of its size.
type entArena struct {
	mem    *offHeap
	chunk  []classEnt   // the rest of the current chunk
	chunks [][]classEnt // every chunk, held for the run
	made   int          // entries in chunks so far
	free   [32][][]classEnt
}

// entChunk is the largest size of an arena's chunks, in entries (4 MB:
// outside the heap, offMake); larger arrays are made on their own. The
// chunks grow to it from 1024 entries, with what the arena handed out, so
// that a small trace's tables stay in the heap.
const entChunk = 1 << 18

// get is a zeroed array of n entries, n a power of two.
func (a *entArena) get(n int) []classEnt {
	k := bits.Len(uint(n)) - 1
	if f := a.free[k]; len(f) > 0 {
		s := f[len(f)-1]
		a.free[k] = f[:len(f)-1]
		clear(s)
		return s
	}
	if n >= entChunk {
		return offMake[classEnt](a.mem, n)
	}
	if len(a.chunk) < n {
		size := max(n, min(entChunk, max(1024, a.made)))
		a.chunk = offMake[classEnt](a.mem, size)
		a.chunks = append(a.chunks, a.chunk)
		a.made += size
	}
	s := a.chunk[:n:n]
	a.chunk = a.chunk[n:]
	return s
}

// put gives s (from get) back for reuse.
func (a *entArena) put(s []classEnt) {
	k := bits.Len(uint(len(s))) - 1
	a.free[k] = append(a.free[k], s)
}

func (t *classTable) slot(k uint64) int {
	mask := len(t.ents) - 1
	h := int(mix(k) & uint64(mask))
	for e := &t.ents[h]; e.c != nil && e.key != k; e = &t.ents[h] {
		h = (h + 1) & mask
	}
	return h
}

func (t *classTable) get(k uint64) *classModel { return t.ents[t.slot(k)].c }

// prefetch asks for the cache line of key k's first slot.
func (t *classTable) prefetch(k uint64) {
	prefetch.At(t.ents, int32(mix(k)&uint64(len(t.ents)-1)))
}

func (t *classTable) put(k uint64, c *classModel) {
	if 4*(t.n+1) > 3*len(t.ents) {
		old := t.ents
		if t.arena != nil {
			// Outside the heap, the old array reused: a large
			// trace's tables grow to millions of entries.
			t.ents = t.arena.get(2 * len(old))
		} else {
			t.ents = make([]classEnt, 2*len(old))
		}
		for _, e := range old {
			if e.c != nil {
				t.ents[t.slot(e.key)] = e
			}
		}
		if t.arena != nil {
			t.arena.put(old)
		}
	}
	e := &t.ents[t.slot(k)]
	if e.c == nil {
		t.n++
	}
	*e = classEnt{k, c}
}

// pairMemo is a slot of joint.pairMemo: the class of a (trigger, action)
// pair of messages.
type pairMemo struct {
	trig, act int32
	c         *classModel
}

// pairMemoBits sizes joint.pairMemo (16 bytes a slot: 256 KB).
const pairMemoBits = 14

// classOfPair is classOf through a small direct-mapped memo of the pairs
// looked up lately: the repair costs the same spans, so the same pairs,
// over and over, and a pair's class never changes within a run (a miss
// calls classOf, which makes the class where new, as before).
func (j *joint) classOfPair(trig, act int32) *classModel {
	h := (uint32(trig)*0x9e3779b1 ^ uint32(act)*0x85ebca77) >> (32 - pairMemoBits)
	e := &j.pairMemo[h]
	if e.c != nil && e.trig == trig && e.act == act {
		return e.c
	}
	c := j.classOf(trig, act)
	*e = pairMemo{trig, act, c}
	return c
}

// delayList collects delays of a pass flat, with the index of their class
// (classModel.idx).
type delayList struct {
	cls   []int32
	val   []float32
	byCls []float32 // fitPeaks: cand's delays grouped by class
}

func (d *delayList) add(c *classModel, v float32) {
	d.cls = append(d.cls, c.idx)
	d.val = append(d.val, v)
}

func (d *delayList) reset() { d.cls, d.val = d.cls[:0], d.val[:0] }

func (j *joint) fanOf(trig int32) *fanModel {
	h := &j.hot[trig]
	ret := h.role == roleReply
	slot := 2 * h.edge
	if ret {
		slot++
	}
	if f := j.fanByEdge[slot]; f != nil {
		return f
	}
	k := fanKey{trig: j.trigNode(j.edgeSrc[h.edge]), node: j.edgeDst[h.edge], ret: ret}
	f, added := j.mod.fan.getOrAdd(k)
	if added {
		*f = defaultFan
	}
	j.fanByEdge[slot] = f
	return f
}

// logf is the log density of trig causing act after dt seconds.
func (j *joint) logf(trig, act int32, dt float64) float64 {
	return j.logfIn(j.classOfPair(trig, act), act, dt)
}

// logfIn is logf with the pair's class c at hand.
func (j *joint) logfIn(c *classModel, act int32, dt float64) float64 {
	lp := c.d.logpdf(dt) + c.logTrans
	if c.fit {
		// The mixture 0.9·class + 0.1·base, by its larger term.
		lp = math.Max(lp+log09, j.base[j.hot[act].edge].logpdf(dt)+log01)
	}
	return lp
}

// The mixture's weights (logf), computed once.
var log09, log01 = math.Log(0.9), math.Log(0.1)

// resetPass clears the links and the active classes' moments before a
// pass's sweeps.
func (j *joint) resetPass(settled bool) {
	if settled {
		j.resetUnsettled()
	} else {
		// (The zeros by clear: memclr, not an element at a time.)
		clear(j.prob)
		clear(j.kids)
		clear(j.unsure)
		for i := range j.parent {
			j.parent[i] = -1
			j.span[i] = int32(i)
			if j.half[i] == halfHead {
				// A reply whose request was lost ends its path where it
				// arrives, like the return of a spontaneous call (loss.go).
				j.span[i] = spanRoot
			}
		}
	}
	for _, c := range j.active {
		if c.momAt > 0 {
			j.mod.moms[c.momAt-1] = moments{}
		}
		c.active = false
	}
	j.certain.reset()
	j.active = j.active[:0]
	j.sends, j.doubtful = 0, 0
}

// pass is J3 (and J4 when repair is set) over all nodes.
func (j *joint) pass(rev []int32, repair, probs bool) {
	// J5c per node: a repair pass passes over the settled nodes
	// (settleNodes).
	settled := repair && j.settled != nil
	j.passSettled = settled
	j.resetPass(settled)
	phaseOf("J3 sweep", j.passNo)
	// Where fuse is set (a whole trace's pass without repair, which
	// refit(true, false) follows: stepLast), each node's classes are
	// refitted right after its sweep (refitSwept), from the links the
	// sweep records: refit (J5) then need not read the links again.
	j.deferred = j.deferred[:0]
	for b := range j.t.Nodes {
		if settled && j.settled[b] {
			// Its links stand as its last sweep left them.
			j.markSwept(trace.NodeID(b))
			continue
		}
		j.sweep(trace.NodeID(b))
		j.markSwept(trace.NodeID(b))
		if j.first {
			phase("J2 peaks")
			j.fitPeaks()
			phaseOf("J3 sweep", j.passNo)
		}
		if j.fuse && (len(j.linkCls) > 0 || j.swept[b].active > j.sweptFrom(trace.NodeID(b)).active) {
			// (Not at a node with nothing to refit: the phase marks
			// cost as much as a small node's refit.)
			phaseOf("J5 refit", j.passNo)
			j.refitSwept(trace.NodeID(b))
			phaseOf("J3 sweep", j.passNo)
		}
	}
	j.dropNode() // (not held through the repair)
	if repair {
		// The span costs' delay terms are memoised while the models stay
		// as they are: this pass's repair (termMemo).
		j.scr.terms.start()
		for b := range j.t.Nodes {
			j.repair(trace.NodeID(b), probs)
		}
		j.scr.terms.on = false
	}
	phaseOf("J3 untraced senders", j.passNo)
	// Messages from untraced senders: the paired request, else the most
	// likely message the other way (A→B→A causality, §5.1).
	for i := range j.hot {
		h := &j.hot[i]
		if h.send != trace.Unknown {
			continue
		}
		if h.role == roleReply {
			p := h.peer
			j.parent[i], j.prob[i] = p, 1
			j.kids[p] = min(j.kids[p]+1, 255)
			continue
		}
		// A request from an untraced node starts a call of its own: what
		// came before it from this node is the return of an earlier one.
		if j.r.role[i] == roleRequest && !j.keep {
			continue
		}
		d := j.base[j.edge[i]]
		best, bc, sum := int32(-1), math.Inf(1), 0.0
		ls := d.logpdf(j.o.Spontaneous * d.mean())
		j.candidatesOf(i, h.send, h.recv, j.edgeSrc[h.edge], rev, func(p int32, dt float64) bool {
			c := -d.logpdf(dt)
			if c < bc {
				best, bc = p, c
			}
			sum += math.Exp(-c + ls)
			return true
		})
		if best >= 0 && bc < -ls {
			j.parent[i] = best
			j.prob[i] = float32(math.Exp(-bc+ls) / (sum + 1))
			j.kids[best] = min(j.kids[best]+1, 255)
		}
	}
}

// msgHot is what the passes read of a message, in one 32-byte record (two
// per cache line): a node's messages are scattered over a large trace, and
// the message (72 bytes) and each per-message array cost a cache miss of
// their own. Its sender and receiver are edgeSrc and edgeDst of its edge
// (small tables that stay in cache).
type msgHot struct {
	send, recv int64  // the message's Send and Recv
	peer       int32  // r.peer
	edge       int32  // linker.edge
	need       uint32 // calls: when their span must still be open, after the send (needFar: too far, computed)
	role, half uint8  // r.role, joint.half
}

// epPair and actorPair are a message's endpoints and threads (SrcEP,
// DstEP; SrcActor, DstActor).
type epPair struct{ src, dst trace.EndpointID }

type actorPair struct{ src, dst trace.ActorID }

// passMsg is what the passes read of a message besides hot's fields (pm).
type passMsg struct {
	Send, Recv   int64
	Src, Dst     trace.NodeID
	SrcEP, DstEP trace.EndpointID
}

// pm is message i as the passes know it: from hot, its edge's nodes and
// eps, which hold while Options.Lean has dropped the trace's messages.
func (j *joint) pm(i int32) passMsg {
	h := &j.hot[i]
	e := j.eps[i]
	return passMsg{h.send, h.recv, j.edgeSrc[h.edge], j.edgeDst[h.edge], e.src, e.dst}
}

// dstOf is message i's receiver.
func (j *joint) dstOf(i int32) trace.NodeID { return j.edgeDst[j.hot[i].edge] }

// actorOf is message i's threads (NoActor where the trace names none).
func (j *joint) actorOf(i int32) actorPair {
	if j.actors == nil {
		return actorPair{trace.NoActor, trace.NoActor}
	}
	return j.actors[i]
}

// liveMsg is a received message in play in a sweep, with what the sweep
// reads of it at hand: its receive time, its span and the span's closing
// time (updated when its span changes), its part of the class key, whether it is a return,
// its children so far and its fan-out model. On a large trace the messages
// and the per-message arrays are scattered (a node's messages are spread
// over the whole trace): each candidate of each send would otherwise load
// several cache lines.
type liveMsg struct {
	i, sp int32
	spP   int32  // sp's position in the node's received messages, −1: spanRoot (sweepNode)
	trig  uint32 // its part of the class table key: j.edgeTrig of its edge
	// edge is its edge (hot's): costLive finds its fan-out model by
	// edge without loading the message's record again.
	edge        int32
	kids        uint8 // j.kids[i], kept equal (only this sweep changes it)
	ret         bool  // a return: j.r.role[i] == roleReply
	spReq       bool  // sp is a request
	recv, close int64
	fan         *fanModel
	// ckey and cls are the last class classLive found for it (the
	// node's table key): the sends of a node mostly go to few
	// destinations, so an entry's class repeats from send to send.
	// (64 bytes in all: one cache line.)
	ckey uint64
	cls  *classModel
}

// sendCtx is what the class lookups of one send share: the send, its
// node's class table and the send's part of the table key (classOf).
type sendCtx struct {
	o    int32
	ae   int32        // the send's edge
	rep  bool         // the send is a reply (or stands for one): the key's reply flag
	src  trace.NodeID // the send's node, whose table tab is
	tab  *classTable
	key  uint64
	base dist // the send's WAP5 exponential (j.base of its edge)
	// memoKey and memo are the last class classLive found: a send's
	// candidates mostly share a few classes (every client's message is
	// one trigger class), so most lookups need no probe of the table.
	memoKey uint64
	memo    *classModel
}

func (j *joint) newSendCtx(o int32) sendCtx {
	h := &j.hot[o]
	return j.sendCtxOf(o, h.edge, h.role == roleReply || h.half == halfHead)
}

// sendCtxOf is newSendCtx(o) from o's edge ae and whether it is a reply
// (rep: its role is roleReply, or it is halfHead).
func (j *joint) sendCtxOf(o, ae int32, rep bool) sendCtx {
	src := j.edgeSrc[ae]
	tab := j.classTabs[src]
	if tab == nil {
		tab = j.newClassTable()
		j.classTabs[src] = tab
	}
	k := uint64(j.edgeAct[ae]) << 2
	if rep {
		k |= 2
	}
	return sendCtx{o: o, ae: ae, rep: rep, src: src, tab: tab, key: k, base: j.base[ae]}
}

// classLive is classOf(e.i, x.o), the table probed without reloading
// either message.
func (j *joint) classLive(x *sendCtx, e *liveMsg) *classModel {
	fk := uint64(e.trig)<<33 | x.key
	if e.ret {
		fk |= 1
	}
	if x.memo != nil && x.memoKey == fk {
		return x.memo
	}
	if e.cls != nil && e.ckey == fk {
		x.memoKey, x.memo = fk, e.cls
		return e.cls
	}
	c := j.findClass(x.src, x.tab, fk)
	if c == nil {
		// classOf(e.i, x.o) from what the entry and x hold: neither
		// message's record is loaded again.
		c = j.newClass(x.src, x.tab, fk, e.edge, x.ae, x.rep, e.ret)
	}
	x.memoKey, x.memo = fk, c
	e.ckey, e.cls = fk, c
	return c
}

// costLive is cost(e.i, x.o, dt) from the live entry.
func (j *joint) costLive(x *sendCtx, e *liveMsg, dt float64) float64 {
	k := min(e.kids, 2)
	c := j.classLive(x, e)
	lp := c.d.logpdf(dt) + c.logTrans
	if c.fit {
		lp = math.Max(lp+log09, x.base.logpdf(dt)+log01)
	}
	if e.fan == nil {
		slot := 2 * e.edge
		if e.ret {
			slot++
		}
		if e.fan = j.fanByEdge[slot]; e.fan == nil {
			e.fan = j.fanOf(e.i)
		}
	}
	return -lp + e.fan.cost[k]
}

// sweepAhead is how many messages ahead the sweep asks for the records of
// its sends and received messages (and the other loops over a node's
// messages for theirs).
const sweepAhead = 8

// prefetchAt asks for the cache line of s[i] (prefetch).

// viaAhead asks, in a loop at x over keys, for via[keys[x+sweepAhead]]
// and, half as far on, for to[via[keys[...]]] when that is an index (≥ 0):
// the two loads of a lookup through a scattered index, overlapped.
func viaAhead[T any](keys []int32, x int, via []int32, to []T) {
	if a := x + sweepAhead; a < len(keys) {
		prefetch.At(via, keys[a])
	}
	if a := x + sweepAhead/2; a < len(keys) {
		if v := via[keys[a]]; v >= 0 {
			prefetch.At(to, v)
		}
	}
}

// linkAhead asks for what a pass over a node's sends (outs) and their
// parents' links reads a few sends after x: the sends' records and
// parents sweepAhead on, their parents' records half as far (they are
// scattered over a large trace).
func (j *joint) linkAhead(outs []int32, x int) {
	if a := x + sweepAhead; a < len(outs) {
		prefetch.At(j.hot, outs[a])
		prefetch.At(j.parent, outs[a])
	}
	if a := x + sweepAhead/2; a < len(outs) {
		if p := j.parent[outs[a]]; p >= 0 {
			prefetch.At(j.hot, p)
		}
	}
}

// sweep is J3 at node b: every send, in time order, takes its cheapest
// admissible parent.
func (j *joint) sweep(b trace.NodeID) {
	ins, outs := j.insOf(b), j.outsOf(b)
	recv := j.insRecvOf(b) // receive times, aligned with ins
	// The node laid out by position (sweepNode): the loops below read
	// the node's own arrays, not the scattered messages.
	nd := j.gather(b, ins, recv, outs)
	j.linkCls, j.linkVal = j.linkCls[:0], j.linkVal[:0]
	rootClose := j.closes(spanRoot)
	live := j.live[:0]
	defer func() { j.live = live }()
	hi := 0
	for oi, o := range outs {
		// What the sweep writes of a send and of its return is
		// scattered: the lines are asked for ahead, or the stores that
		// miss fill the store buffer and stall the loop.
		if x := oi + sweepAhead; x < len(outs) {
			a := outs[x]
			sp := addrAt(j.parent, a) // (asked for twice where not needed)
			if w := &nd.out[x]; w.flags&outRetHere != 0 {
				sp = addrAt(j.span, w.peer)
			}
			prefetch.Four(addrAt(j.parent, a), addrAt(j.prob, a), addrAt(j.callSpan, a), sp)
		}
		ho := &nd.out[oi]
		s := ho.send
		for hi < len(ins) && recv[hi] <= s {
			if x := hi + sweepAhead; x < len(ins) {
				prefetch.At(j.kids, ins[x])
			}
			// (No children yet: pass cleared them, and only this sweep
			// gives any, to messages already live.)
			hm := &nd.in[hi]
			live = append(live, liveMsg{i: ins[hi], sp: hm.sp, spP: hm.spp, spReq: hm.req, recv: recv[hi], close: hm.close,
				trig: j.edgeTrig[hm.edge], ret: hm.ret, edge: hm.edge})
			hi++
		}
		// Drop what the window or a closed span rules out for good. (A
		// live message's span changes only below, where it is updated.)
		// (Entries are moved only behind the first one dropped.)
		w := 0
		for q := range live {
			if e := &live[q]; s-e.recv <= j.x && e.close >= s {
				if w != q {
					live[w] = *e
				}
				w++
			}
		}
		live = live[:w]

		isReply := ho.role == roleReply
		if ho.flags&outOrphan != 0 {
			// A reply whose request was lost: it starts nothing and
			// belongs to no span it could be attached to.
			j.callSpan[o] = spanRoot
			j.prob[o] = 1
			continue
		}
		need := s
		var ret int32 = -1
		retRecv := ho.retRecv // ret's receive time when b received it
		if ho.role == roleRequest {
			ret = ho.peer
			if retRecv != trace.Unknown && retRecv > need {
				need = retRecv
			}
		}
		var req int32 = -1
		if isReply {
			req = ho.peer
		}
		x := j.sendCtxOf(o, ho.edge, ho.role == roleReply || ho.half == halfHead)
		// The next send's classes with the entries live now (most of
		// them will be live for it too): their slots in the node's
		// class table are asked for ahead, a cache miss each otherwise.
		if oi+1 < len(outs) {
			hn := &nd.out[oi+1]
			k := uint64(j.edgeAct[hn.edge]) << 2
			if hn.role == roleReply || hn.half == halfHead {
				k |= 2
			}
			for q := range live {
				e := &live[q]
				fk := uint64(e.trig)<<33 | k
				if e.ret {
					fk |= 1
				}
				// (Not where the entry holds that key's class: classLive
				// finds it there without the table.)
				if e.cls == nil || e.ckey != fk {
					x.tab.prefetch(fk)
				}
			}
		}
		if j.first {
			// Every earlier received message, admissible or not: false
			// pairs spread evenly, true ones pile up at the class's delay.
			for q := len(live) - 1; q >= 0 && q >= len(live)-256; q-- {
				e := &live[q]
				if s-e.recv > j.horizon[b] {
					break
				}
				if e.i != ret {
					c := j.classLive(&x, e)
					if n := int(c.idx) + 1; n > len(j.candN) {
						j.candN = append(j.candN, make([]int32, max(n, 2*len(j.candN))-len(j.candN))...)
					}
					if j.candN[c.idx] < maxCand {
						if j.candN[c.idx] == 0 {
							j.candCls = append(j.candCls, c)
						}
						j.candN[c.idx]++
						j.cand.add(c, float32(float64(s-e.recv)/1e9))
						j.touch(c)
					}
				}
			}
		}
		j.candI, j.candC, j.candS, j.candQ = j.candI[:0], j.candC[:0], j.candS[:0], j.candQ[:0]
		for q := range live {
			e := &live[q]
			i := e.i
			if i == ret {
				continue
			}
			sp := e.sp // current: updated where it changes
			if isReply {
				if sp != req {
					continue
				}
			} else if e.close < need {
				continue
			}
			dt := float64(s-e.recv) / 1e9
			c := j.costLive(&x, e, dt)
			if ret >= 0 && j.actorOn != nil && j.actorOn[b] {
				c += j.actorCost(b, o, sp, i) // J2b
			}
			j.candI = append(j.candI, i)
			j.candC = append(j.candC, c)
			j.candS = append(j.candS, sp)
			j.candQ = append(j.candQ, int32(q))
		}
		// The spontaneous alternative: a link of delay y·d (WAP5 §5.1); a
		// reply is never spontaneous when its request is known.
		bd := x.base
		sc := -bd.logpdf(j.o.Spontaneous*bd.mean()) + defaultFan.cost[0]
		if isReply && len(j.candI) > 0 {
			sc = math.Inf(1)
		}
		// A call made while a request's span is open is that span's work
		// far more often than a timer's: spontaneity must clearly win.
		if !isReply {
			for _, q := range j.candQ {
				if live[q].spReq {
					sc += spanCallBonus
					break
				}
			}
		}
		best, bc, bq := int32(-1), sc, -1
		for q, c := range j.candC {
			if c < bc {
				best, bc, bq = j.candI[q], c, q
			}
		}
		sum := 0.0
		if !math.IsInf(sc, 1) {
			sum = expGap(bc - sc)
		}
		for _, c := range j.candC {
			sum += expGap(bc - c)
		}
		if best < 0 && isReply {
			if hr := &j.hot[max(req, 0)]; j.edgeDst[hr.edge] == b && hr.recv != trace.Unknown && hr.recv <= s {
				// No admissible parent (an earlier choice went wrong):
				// keep the reply with its request rather than orphan it.
				best, sum, bq = req, 1, -1
			}
		}
		j.prob[o] = float32(1 / math.Max(sum, 1))
		j.sends++
		if sum > 1/sureProb {
			j.doubtful++
		}
		span := sweepSpan{close: rootClose, sp: spanRoot, spp: -1}
		if best >= 0 {
			j.parent[o] = best
			if bq >= 0 {
				// A candidate: its live entry holds its children
				// (j.kids[best] is only written, not loaded again) and
				// its span.
				e := &live[j.candQ[bq]]
				e.kids = min(e.kids+1, 255)
				j.kids[best] = e.kids
				span = sweepSpan{close: e.close, sp: e.sp, spp: e.spP, req: e.spReq}
				if j.fuse {
					// (Its class is made: costLive looked it up.)
					j.linkCls = append(j.linkCls, j.classLive(&x, e))
					j.linkVal = append(j.linkVal, float32(float64(s-e.recv)/1e9))
				}
			} else {
				if j.fuse {
					// (Its class may not be made yet: refit makes it,
					// in its order, where it is not — refitSwept.)
					j.linkCls = append(j.linkCls, j.findClassOf(best, o))
					j.linkVal = append(j.linkVal, float32(float64(s-j.hot[best].recv)/1e9))
				}
				j.kids[best] = min(j.kids[best]+1, 255)
				for q := range live {
					if live[q].i == best {
						live[q].kids = j.kids[best]
						break
					}
				}
				sp := j.span[best]
				span = sweepSpan{close: j.closes(sp), sp: sp, spp: -1}
				if sp >= 0 {
					span.spp = posIn(ins, recv, sp, j.hot[sp].recv)
					span.req = j.hot[sp].role == roleRequest
				}
			}
			if !isReply && len(j.candI) > 1 {
				for _, q := range j.candQ {
					// (nd.uns is unsure by position: a span marked
					// already is not stored to again, a scattered
					// store that may miss.)
					if e := &live[q]; e.sp >= 0 && !nd.uns[e.spP] {
						j.unsure[e.sp] = true
						nd.uns[e.spP] = true
					}
				}
			}
			// (A reply's one candidate is in its request's span: req's
			// unsure bit is that candidate's span's.)
			if len(j.candI) == 1 && (!isReply || !nd.uns[live[j.candQ[0]].spP]) {
				var c *classModel
				var dt float32
				if j.candI[0] == best { // the one candidate, live[candQ[0]]
					e := &live[j.candQ[0]]
					c, dt = j.classLive(&x, e), float32(float64(s-e.recv)/1e9)
				} else {
					c, dt = j.classOf(best, o), float32(float64(s-j.hot[best].recv)/1e9)
				}
				j.certain.add(c, dt)
				j.touch(c)
			}
		}
		j.callSpan[o] = span.sp
		if ho.flags&outRetHere != 0 {
			j.span[ret] = span.sp
			if retRecv != trace.Unknown && retRecv > s {
				// Not received yet: it will be live with this span
				// (after every message received at s or before: from hi).
				if p := posFrom(ins, recv, ret, retRecv, hi); p >= 0 {
					nd.in[p].setSpan(span)
				}
			} else if retRecv != trace.Unknown {
				// Already live (received before this send): its span
				// changed.
				for q := range live {
					if e := &live[q]; e.i == ret {
						e.sp, e.spP, e.close, e.spReq = span.sp, span.spp, span.close, span.req
						break
					}
				}
			}
		}
	}
}

// fitPeaks finds the peaks of the candidate delays of the node just swept
// (its classes': a class belongs to the node its action is sent from) and
// drops the delays: on a large trace they would be the peak of the memory.
// refit reads the peaks.
func (j *joint) fitPeaks() {
	// Grouped by class (a counting sort over the node's classes, each
	// class's delays in the order added; peakFit sorts them anyway), for
	// the classes with enough of them.
	cd := &j.cand
	if len(j.candCls) > 0 {
		end := 0
		for _, c := range j.candCls {
			n := int(j.candN[c.idx])
			if n < 50 {
				j.candN[c.idx] = -1 // not needed
				continue
			}
			j.candN[c.idx] = int32(end)
			end += n
		}
		cd.byCls = slices.Grow(cd.byCls[:0], end)[:end]
		for k, ci := range cd.cls {
			if p := j.candN[ci]; p >= 0 {
				cd.byCls[p] = cd.val[k]
				j.candN[ci]++
			}
		}
		from := 0
		for _, c := range j.candCls {
			to := int(j.candN[c.idx])
			if to < 0 {
				j.candN[c.idx] = 0
				continue
			}
			if d, ok := peakFit(cd.byCls[from:to], j.o.DelayModel); ok {
				j.mod.peaks = append(j.mod.peaks, d)
				c.peak = int32(len(j.mod.peaks))
			}
			j.candN[c.idx] = 0
			from = to
		}
	}
	cd.reset()
	j.candCls = j.candCls[:0]
}

// refit is J5: class densities, transitions and fan-out costs from the
// chosen links. After the last pass (last) only the moments that compare
// reads are needed, unless the models are carried into a next stream chunk.
func (j *joint) refit(useCertain, last bool) {
	if j.fuse && (!useCertain || last) {
		panic("linking: refit of a fused pass must be refit(true, false)")
	}
	if last {
		// The moments compare reads (only the last pass's are), in
		// message order as they always were summed. A whole trace's
		// are summed by compare itself (classMoments): here its
		// classes are only looked up, so that the classes made by
		// the lookups are made when they always were.
		if j.carried == nil {
			j.linkClasses()
			return
		}
		for i, p := range j.parent {
			if p < 0 {
				continue
			}
			if m, q := &j.hot[i], &j.hot[p]; m.send != trace.Unknown && q.recv != trace.Unknown && j.edgeDst[q.edge] == j.edgeSrc[m.edge] {
				j.momOf(j.classOf(p, int32(i))).add(float64(m.send-q.recv) / 1e9)
			}
		}
	}
	// (A pass without repair gave every parent its child as it chose
	// it, once: its kids are the count already. The repair moves links.)
	if !j.fuse {
		clear(j.kids)
		for _, p := range j.parent {
			if p >= 0 {
				j.kids[p] = min(j.kids[p]+1, 255)
			}
		}
	}
	j.refitCounts()
	// 1. The classes this refit made active are touched again below:
	// the pass's sweeps made the rest (j.swept, node by node).
	sw := j.swept
	end := 0
	if len(sw) > 0 {
		end = int(sw[len(sw)-1].active)
	}
	for _, c := range j.active[end:] {
		c.active = false
	}
	j.active = j.active[:end]
	// 2. Node by node: a class, its pool and its trigger class belong to
	// the node its action is sent from, so each node's classes are
	// fitted from its own links' delays alone, in small arrays that stay
	// in the caches (the trace's links grouped by class at once took
	// ~60 MB of fresh memory on the CoDeeN-sized trace, and scattered
	// loads over it). The sums over a node's classes are counts, and
	// the fits sort their delays: the order does not matter.
	rs := &j.refitScr
	from := refitMark{}
	for b := range j.t.Nodes {
		if j.fuse {
			// Refitted after its sweep (refitSwept) but the
			// deferred nodes, in order.
			if len(j.deferred) == 0 || j.deferred[0] != int32(b) {
				continue
			}
			j.deferred = j.deferred[1:]
			if b > 0 {
				from = sw[b-1]
			}
		}
		// 2a. The delays of the node's chosen links (its sends in
		// message order; the records of the sends and of their
		// parents asked for a few sends ahead, as in sweep: they are
		// scattered over a large trace).
		a0 := len(j.active)
		rs.smp.reset()
		keys, lnk := rs.keys[:0], rs.lnk[:0]
		outs := j.outsOf(trace.NodeID(b))
		for x, i := range outs {
			j.linkAhead(outs, x)
			p := j.parent[i]
			if p < 0 {
				continue
			}
			if m, q := &j.hot[i], &j.hot[p]; q.recv != trace.Unknown && j.edgeDst[q.edge] == j.edgeSrc[m.edge] {
				_, fk, _, _ := j.classTableKey(p, i)
				keys, lnk = append(keys, fk), append(lnk, i)
				rs.smp.val = append(rs.smp.val, float32(float64(m.send-q.recv)/1e9))
			}
		}
		// (Then their classes, in the same order, the node's table's
		// slots asked for ahead: classOf makes the new ones.)
		tab := j.classTabs[b]
		for x, fk := range keys {
			if a := x + sweepAhead; a < len(keys) && tab != nil {
				tab.prefetch(keys[a])
			}
			var c *classModel
			if tab != nil {
				c = j.findClass(trace.NodeID(b), tab, fk)
			}
			if c == nil {
				i := lnk[x]
				c = j.classOf(j.parent[i], i)
				tab = j.classTabs[b]
			}
			rs.smp.cls = append(rs.smp.cls, c.idx)
			j.touch(c)
		}
		rs.keys, rs.lnk = keys, lnk
		to := from
		if b < len(sw) {
			to = sw[b]
		}
		j.refitNode(useCertain, j.active[from.active:to.active], j.active[a0:],
			j.certain.cls[from.certain:to.certain], j.certain.val[from.certain:to.certain])
		from = to
	}
	j.fuse = false
	j.certain.reset()
	j.candN = nil
	// 3. The fan-out: every received message's children, counted by its
	// fanOf slot (edge and role: fanByEdge) in a small array, then added
	// to the slots' models (counts: the order does not matter; the
	// models are made, where new, in message order as always).
	for i := range j.mod.fan.len() {
		_, f := j.mod.fan.at(i)
		f.hist = [4]float64{}
	}
	kn := slices.Grow(rs.fanN[:0], len(j.fanByEdge))[:len(j.fanByEdge)]
	clear(kn)
	for i := range j.hot {
		h := &j.hot[i]
		if h.recv == trace.Unknown {
			continue
		}
		slot := 2 * h.edge
		if h.role == roleReply {
			slot++
		}
		if j.fanByEdge[slot] == nil {
			j.fanOf(int32(i))
		}
		kn[slot][min(j.kids[i], 3)]++
	}
	for slot, n := range kn {
		if n != [4]int32{} {
			f := j.fanByEdge[slot]
			for k := range n {
				f.hist[k] += float64(n[k])
			}
		}
	}
	rs.fanN = kn
	for i := range j.mod.fan.len() {
		_, f := j.mod.fan.at(i)
		f.fitCosts()
	}
}

// refitMark is where a node's sweep left joint.active and joint.certain
// (pass records one per node in joint.swept): refit reads each node's
// classes and certain delays from there.
type refitMark struct{ active, certain int32 }

// markSwept records where node b's sweep left the active classes and the
// certain delays (refit).
func (j *joint) markSwept(b trace.NodeID) {
	if b == 0 {
		j.swept = j.swept[:0]
	}
	j.swept = append(j.swept, refitMark{int32(len(j.active)), int32(len(j.certain.cls))})
}

// refitSwept is refit's step 2 for node b, right after its sweep (pass,
// where fuse is set), from the links the sweep recorded (linkCls, linkVal:
// those refit would read, in the same order): the node's classes are at
// hand in the caches, and refit does not read every link again. A node
// with a link whose class is not made yet is left to refit (deferred),
// which makes it when it always was.
func (j *joint) refitSwept(b trace.NodeID) {
	for _, c := range j.linkCls {
		if c == nil {
			j.deferred = append(j.deferred, int32(b))
			return
		}
	}
	rs := &j.refitScr
	from, to := j.sweptFrom(b), j.swept[b]
	// 1. The links' classes touched (those the sweep did not: after
	// the sweep's, as refit adds them) and numbered, as refit's 2a.
	a0 := len(j.active)
	rs.smp.reset()
	for _, c := range j.linkCls {
		rs.smp.cls = append(rs.smp.cls, c.idx)
		j.touch(c)
	}
	rs.smp.val = append(rs.smp.val, j.linkVal...)
	j.refitNode(true, j.active[from.active:to.active], j.active[a0:],
		j.certain.cls[from.certain:to.certain], j.certain.val[from.certain:to.certain])
	// 2. The classes touched here belong to b: the next node's begin
	// after them.
	j.swept[b].active = int32(len(j.active))
}

// sweptFrom is where node b's part of joint.active and joint.certain
// begins (the mark of the node before it).
func (j *joint) sweptFrom(b trace.NodeID) refitMark {
	if b == 0 {
		return refitMark{}
	}
	return j.swept[b-1]
}

// refitNode fits the classes of one node (step 2 of refit): act are the
// classes its sweep made active, and more those of its links the refit
// made active; cls and val are its sweep's certain delays, refitScr.smp
// the delays of its chosen links.
func (j *joint) refitNode(useCertain bool, act, more []*classModel, cls []int32, val []float32) {
	rs := &j.refitScr
	nc := len(act) + len(more)
	if nc == 0 {
		return
	}
	// 1. The node's classes numbered 0..nc−1 (local, by class index),
	// and their delays grouped by that number (a counting sort each,
	// every class's delays in the order added).
	if len(rs.local) < len(j.classes) {
		rs.local = offSized(&j.runMem, rs.local, max(len(j.classes), 2*len(rs.local)))
	}
	rs.acts = append(append(rs.acts[:0], act...), more...)
	for k, c := range rs.acts {
		rs.local[c.idx] = int32(k)
	}
	rs.sStart = groupLocal(rs.sStart, rs.local, rs.smp.cls, rs.smp.val, &rs.sBy, nc)
	rs.cStart = groupLocal(rs.cStart, rs.local, cls, val, &rs.cBy, nc)
	// 2. Certain delays pooled over the senders of the trigger, for
	// classes with too few of their own: each pool's, in its classes'
	// order, side by side (a counting sort by the pools' local numbers;
	// a slice per pool id was pointers for the collector to scan and
	// their regrowth its garbage).
	rs.poolLocal = growUnset(rs.poolLocal, j.mod.poolID.n)
	rs.pools = rs.pools[:0]
	for _, c := range rs.acts {
		rs.pools = addLocal(rs.poolLocal, rs.pools, c.pool)
	}
	np := len(rs.pools)
	rs.pStart = slices.Grow(rs.pStart[:0], np+1)[:np+1]
	clear(rs.pStart)
	for k, c := range rs.acts {
		rs.pStart[rs.poolLocal[c.pool]+1] += rs.cStart[k+1] - rs.cStart[k]
	}
	for q := 0; q < np; q++ {
		rs.pStart[q+1] += rs.pStart[q]
	}
	rs.pBy = slices.Grow(rs.pBy[:0], int(rs.pStart[np]))[:rs.pStart[np]]
	for k, c := range rs.acts {
		q := rs.poolLocal[c.pool]
		rs.pStart[q] += int32(copy(rs.pBy[rs.pStart[q]:], rs.cBy[rs.cStart[k]:rs.cStart[k+1]]))
	}
	for q := np; q > 0; q-- {
		rs.pStart[q] = rs.pStart[q-1]
	}
	rs.pStart[0] = 0
	// (The pools' fits by their local numbers: a trace's pool ids are
	// met node by node, refitSwept's refits a few at a time.)
	rs.poolFit = slices.Grow(rs.poolFit[:0], np)[:np]
	rs.poolDone = slices.Grow(rs.poolDone[:0], np)[:np]
	clear(rs.poolDone)
	// (The candidates' peaks were found as each node was swept:
	// fitPeaks.)
	// 3. Transition probabilities from the certain links of each trigger
	// class (all links where too few are certain): the sums by the
	// trigger classes' local numbers (trigLocal, by trigger id; −1:
	// none), in the order the node's classes name them.
	rs.trigLocal = growUnset(rs.trigLocal, j.mod.trigID.n)
	rs.trigs = rs.trigs[:0]
	for _, c := range rs.acts {
		rs.trigs = addLocal(rs.trigLocal, rs.trigs, c.trig)
	}
	nt := len(rs.trigs)
	rs.certainN = slices.Grow(rs.certainN[:0], nt)[:nt]
	rs.allN = slices.Grow(rs.allN[:0], nt)[:nt]
	rs.kinds = slices.Grow(rs.kinds[:0], nt)[:nt]
	clear(rs.certainN)
	clear(rs.allN)
	clear(rs.kinds)
	certainN, allN, kinds := rs.certainN, rs.allN, rs.kinds
	for k, c := range rs.acts {
		q := rs.poolLocal[c.pool]
		pc := rs.pBy[rs.pStart[q]:rs.pStart[q+1]]
		samples, certain := rs.sBy[rs.sStart[k]:rs.sStart[k+1]], rs.cBy[rs.cStart[k]:rs.cStart[k+1]]
		switch {
		case !useCertain && len(samples) >= 30:
			c.d = robustFitWith(samples, j.o.DelayModel, &rs.sortTmp)
			c.fit = true
		case len(certain) >= 30:
			c.d = robustFitWith(certain, j.o.DelayModel, &rs.sortTmp)
			c.fit = true
		case c.peak != 0:
			c.d, c.fit = j.mod.peaks[c.peak-1], true
		case len(pc) >= 30:
			// The pool's fit, once for all its classes (the same
			// delays; robustFit sorts them, so the fit is the same).
			if !rs.poolDone[q] {
				rs.poolFit[q] = robustFitWith(pc, j.o.DelayModel, &rs.sortTmp)
				rs.poolDone[q] = true
			}
			c.d = rs.poolFit[q]
			c.fit = true
		case len(samples) >= 3 && !(c.fit && j.carried != nil):
			c.d = robustFitWith(samples, j.o.DelayModel, &rs.sortTmp)
			c.fit = true
		}
		tk := rs.trigLocal[c.trig]
		certainN[tk] += float64(len(certain))
		allN[tk] += float64(len(samples))
		kinds[tk]++
	}
	for k, c := range rs.acts {
		tk := rs.trigLocal[c.trig]
		n, tot := float64(rs.cStart[k+1]-rs.cStart[k]), certainN[tk]
		if tot < 30 || !useCertain {
			n, tot = float64(rs.sStart[k+1]-rs.sStart[k]), allN[tk]
		}
		// A stream chunk with too little to say keeps what was learnt.
		if tot > 0 && !(j.carried != nil && tot < 30) {
			c.logTrans = math.Log((n + 0.5) / (tot + 0.5*kinds[tk]))
		}
	}
	for _, p := range rs.pools {
		rs.poolLocal[p] = -1
	}
	for _, t := range rs.trigs {
		rs.trigLocal[t] = -1
	}
}

// growZero is s with zeros added up to n elements, its capacity at least
// doubled where it grows: refitSwept's refits meet a trace's pool and
// trigger ids node by node, a few at a time.
func growZero[T any](s []T, n int) []T {
	m := len(s)
	if n > cap(s) {
		s = slices.Grow(s, max(n, 2*cap(s))-m)
	}
	s = s[:n]
	clear(s[m:])
	return s
}

// groupLocal groups the delays val by their classes' local numbers
// (local[cls[k]], 0..nc−1) into *by, each class's in the order given, and
// returns where each class's begin (start, reused: nc+1 entries).
// growUnset grows local, a table of local numbers by id, to n entries,
// the new ones −1 (none yet); the old ones are kept (−1 after use).
func growUnset(local []int32, n int) []int32 {
	if m := len(local); m < n {
		local = growZero(local, n)
		for i := m; i < n; i++ {
			local[i] = -1
		}
	}
	return local
}

// addLocal gives id the next local number (len(ids)) if it has none yet
// in local, and lists it in ids.
func addLocal(local, ids []int32, id int32) []int32 {
	if local[id] < 0 {
		local[id] = int32(len(ids))
		ids = append(ids, id)
	}
	return ids
}

func groupLocal(start, local, cls []int32, val []float32, by *[]float32, nc int) []int32 {
	start = slices.Grow(start[:0], nc+1)[:nc+1]
	clear(start)
	for _, c := range cls {
		start[local[c]+1]++
	}
	for k := 0; k < nc; k++ {
		start[k+1] += start[k]
	}
	*by = slices.Grow((*by)[:0], len(val))[:len(val)]
	for k, c := range cls {
		l := local[c]
		(*by)[start[l]] = val[k]
		start[l]++
	}
	for k := nc; k > 0; k-- {
		start[k] = start[k-1]
	}
	start[0] = 0
	return start
}

// linkClasses is refit(last) of a whole trace: the classes of the links
// whose delays compare reads, looked up (made where new, when they always
// were), and the moments of every class's delays summed, in message order
// as they always were, into linkMoms (classMoments yields them).
func (j *joint) linkClasses() {
	rs := &j.refitScr
	n0 := len(j.classes)
	// (At most one class with two delays or more per two links.)
	j.linkMoms = offSized(&j.runMem, j.linkMoms, len(j.parent)/2+1)[:0]
	if len(rs.local) < n0 {
		rs.local = offSized(&j.runMem, rs.local, n0)
	}
	rs.found = slices.Grow(rs.found[:0], n0/64+1)[:n0/64+1]
	clear(rs.found)
	pend := rs.pend[:0]
	// 1. The links node by node, as refit reads them: each node's classes
	// are in its own table (in message order every link went to another
	// node's table, a cache miss each: 0.59 against 0.07 CPU-s on the
	// CoDeeN-sized trace). A class's links are all at one node (the node
	// its action is sent from), and a node's sends are in message order:
	// each class's delays are summed here in message order, in the
	// node's own small arrays. Only the classes made already are found
	// here; a link whose class is not made yet is pending.
	for b := range j.t.Nodes {
		tab := j.classTabs[b]
		// 1a. The node's links: their table keys and delays (the
		// records of the sends and of their parents asked for a few
		// sends ahead: they are scattered over a large trace).
		keys, lnk, dts := rs.keys[:0], rs.lnk[:0], rs.dts[:0]
		outs := j.outsOf(trace.NodeID(b))
		for x, i := range outs {
			// (Three stages, each reading what the one before asked
			// for: the send's record and parent, its parent's record,
			// the parent's edge.)
			if a := x + 4*linkAhead; a < len(outs) {
				prefetch.Two(uintptr(unsafe.Pointer(&j.hot[outs[a]])), uintptr(unsafe.Pointer(&j.parent[outs[a]])))
			}
			if a := x + 2*linkAhead; a < len(outs) {
				if p := j.parent[outs[a]]; p >= 0 {
					prefetch.At(j.hot, p)
				}
			}
			if a := x + linkAhead; a < len(outs) {
				if p := j.parent[outs[a]]; p >= 0 {
					e := j.hot[p].edge
					prefetch.Two(uintptr(unsafe.Pointer(&j.edgeDst[e])), uintptr(unsafe.Pointer(&j.edgeTrig[e])))
				}
			}
			p := j.parent[i]
			if p < 0 {
				continue
			}
			// (Every message in outs has a send time.)
			if m, q := &j.hot[i], &j.hot[p]; q.recv != trace.Unknown && j.edgeDst[q.edge] == j.edgeSrc[m.edge] {
				if tab == nil {
					pend = append(pend, i)
					continue
				}
				// (classTableKey's key.)
				fk := uint64(j.edgeTrig[q.edge])<<33 | uint64(j.edgeAct[m.edge])<<2
				if m.role == roleReply || m.half == halfHead {
					fk |= 2
				}
				if q.role == roleReply {
					fk |= 1
				}
				keys, lnk, dts = append(keys, fk), append(lnk, i), append(dts, float64(m.send-q.recv)/1e9)
			}
		}
		rs.keys, rs.lnk, rs.dts = keys, lnk, dts
		if len(keys) == 0 {
			continue
		}
		// 1b. Their classes in the table (its slots asked for ahead),
		// each class numbered by its slot (local; a number whose slot
		// is not the one looked up is stale), and its moments.
		if len(rs.slotLocal) < len(tab.ents) {
			rs.slotLocal = make([]int32, len(tab.ents))
		}
		slotLocal := rs.slotLocal
		slots, moms, lk := rs.slots[:0], rs.nodeMoms[:0], rs.lk[:0]
		for x, fk := range keys {
			if a := x + sweepAhead; a < len(keys) {
				tab.prefetch(keys[a])
			}
			h := int32(tab.slot(fk))
			if tab.ents[h].c == nil {
				pend = append(pend, lnk[x])
				lk = append(lk, -1)
				continue
			}
			k := slotLocal[h]
			if k < 0 || int(k) >= len(slots) || slots[k] != h {
				k = int32(len(slots))
				slotLocal[h] = k
				slots, moms = append(slots, h), append(moms, moments{})
			}
			moms[k].addNoLog(dts[x])
			lk = append(lk, k)
		}
		// 1c. The logs of the delays, in the same order, of the classes
		// compare reads: those with two delays or more (a large trace's
		// classes have one, most of them; the log is most of add's
		// cost).
		for x, k := range lk {
			if k >= 0 && moms[k].n >= 2 {
				moms[k].addLog(dts[x])
			}
		}
		for k := range moms {
			if moms[k].n >= 2 {
				idx := tab.ents[slots[k]].c.idx
				rs.local[idx] = int32(len(j.linkMoms))
				rs.found[idx/64] |= 1 << (idx % 64)
				j.linkMoms = append(j.linkMoms, moms[k])
			}
		}
		rs.slots, rs.nodeMoms, rs.lk = slots, moms, lk
	}
	// 2. The found classes' moments in class order (found marks them by
	// class index, local holds where each is in linkMoms).
	j.linkOrder = offSized(&j.runMem, j.linkOrder, len(j.linkMoms))[:0]
	for w, f := range rs.found {
		for ; f != 0; f &= f - 1 {
			j.linkOrder = append(j.linkOrder, rs.local[w*64+bits.TrailingZeros64(f)])
		}
	}
	// 3. The pending links in message order: classOf makes their classes
	// in the order the lookups in message order always made them (a
	// class is made by its first link in message order; every class made
	// before this refit was found in step 1), and sums their delays.
	if len(pend) > 0 {
		slices.Sort(pend)
		moms := rs.nodeMoms[:0]
		for _, i := range pend {
			p := j.parent[i]
			k := int(j.classOf(p, i).idx) - n0
			if k >= len(moms) {
				moms = append(moms, make([]moments, k+1-len(moms))...)
			}
			moms[k].add(float64(j.hot[i].send-j.hot[p].recv) / 1e9)
		}
		for k := range moms {
			if moms[k].n >= 2 {
				j.linkOrder = append(j.linkOrder, int32(len(j.linkMoms)))
				j.linkMoms = append(j.linkMoms, moms[k])
			}
		}
		rs.nodeMoms = moms
	}
	rs.pend = pend
}

// linkAhead is how many sends apart linkClasses' stages ask for their
// records (the last stage's distance).
const linkAhead = 4

// classMoments yields the moments of the chosen links' delays of every
// class of a whole trace that has two or more, in class order, each summed
// in message order (linkClasses); compare reads no others.
func (j *joint) classMoments(yield func(*moments) bool) {
	for _, k := range j.linkOrder {
		if !yield(&j.linkMoms[k]) {
			return
		}
	}
}

// momOf is class c's moments (a stream's: classMoments sums a whole
// trace's), made (empty) where it has none yet: valid until the next call.
func (j *joint) momOf(c *classModel) *moments {
	if c.momAt == 0 {
		return j.mod.newMoments(c)
	}
	return &j.mod.moms[c.momAt-1]
}

// compare reports how the delay families fit the chosen links of a whole
// trace (a whole trace's classes are j.classes: no map of copies, there
// are millions).
func (j *joint) compare(fit Fit) Fit {
	return compareFits(j.classMoments, fit)
}

// compare is joint.compare for a stream's carried classes, after its last
// chunk: the moments each class kept from the last pass of the last chunk
// that used it.
func (m *models) compare(fit Fit) (Fit, error) {
	// In key order: float sums in map order differ from run to run.
	all, err := m.allMoments()
	if err != nil {
		return fit, err
	}
	return compareFits(func(yield func(*moments) bool) {
		for i := range all {
			if !yield(&all[i].mo) {
				return
			}
		}
	}, fit), nil
}

// instances is J6: the trees under parentless messages; their arrays
// outside the heap in mem where it is set (wap5 link --json: keepMem, given
// back after the aggregation), else in the heap.
func (j *joint) instances(mem *offHeap) *instances {
	n := len(j.parent)
	// 1. Every message's children, in message order, as lists through
	// the messages' records: tree[p].first is p's first child plus one
	// (0: none), tree[c].next the child after c plus one; made in one
	// pass from the last message to the first, each child put at the
	// head of its parent's list. A child's record holds both where its
	// siblings' list goes on and where its own children's begins, so
	// that the walk below reads one record a message besides its
	// probability (lists by parent, CSR, took two more reads a message:
	// its list's bounds and the list, each a cache miss on a large
	// trace, and a second pass to make). (Outside the heap, given back
	// with parent: linkMem.)
	tree := offMake[kidLinks](&j.linkMem, n)
	roots := 0
	for c := n - 1; c >= 0; c-- {
		if p := j.parent[c]; p >= 0 {
			tree[c].next = tree[p].first
			tree[p].first = int32(c) + 1
		} else {
			roots++
		}
	}
	// 2. The trees from their roots, breadth first, each written where it
	// goes in the instances' arrays (in.add's layout). Every message is
	// in at most one tree: the arrays are sized at once (no doubling
	// garbage on a large trace, and no append beyond their capacity).
	var in *instances
	if mem != nil {
		in = &instances{start: offMake[int32](mem, roots+1)[:1], msgs: offMake[int32](mem, n)[:0], par: offMake[int32](mem, n)[:0],
			prob: offMake[float64](mem, roots)[:0]}
	} else {
		in = &instances{start: make([]int32, 1, roots+1), msgs: make([]int32, 0, n), par: make([]int32, 0, n), prob: make([]float64, 0, roots)}
	}
	msgs, par := in.msgs, in.par
	for r := 0; r < n; r++ {
		if j.parent[r] >= 0 {
			continue
		}
		s := len(msgs) // the instance's first message
		msgs, par = append(msgs, int32(r)), append(par, -1)
		prob := float64(j.prob[r])
		if prob == 0 {
			prob = 1
		}
		for q := s; q < len(msgs); q++ {
			m := msgs[q]
			for c := tree[m].first - 1; c >= 0; c = tree[c].next - 1 {
				msgs = append(msgs, c)
				par = append(par, int32(q-s))
				prob *= float64(j.prob[c])
			}
		}
		in.start = append(in.start, int32(len(msgs)))
		in.prob = append(in.prob, prob)
	}
	in.msgs, in.par = msgs, par
	return in
}

// kidLinks is a message's links in J6's lists of children: its first
// child's and its next sibling's positions, plus one (0: none).
type kidLinks struct {
	first, next int32
}

func (j *joint) initCaches() {
	ne := len(j.edgeSrc)
	j.classTabs, j.classes = make([]*classTable, len(j.t.Nodes)), nil
	j.pairMemo = make([]pairMemo, 1<<pairMemoBits)
	j.clsMemo = make([]clsMemoEnt, 1<<clsMemoBits)
	j.fanByEdge = make([]*fanModel, 2*ne)
	j.countByEdge = make([]*countModel, ne)
	j.spanIdx = offMake[int32](&j.runMem, len(j.parent))
	for i := range j.spanIdx {
		j.spanIdx[i] = -1
	}
}

func (j *joint) touch(c *classModel) {
	if !c.active {
		c.active = true
		if j.carried == nil {
			j.active = offGrow(&j.runMem, j.active, 1) // see classOf
		}
		j.active = append(j.active, c)
	}
}

// clientClass stands for every client node as the sender of a trigger.
const clientClass trace.NodeID = -2

// trigNode is the sender of a trigger, or the destination of a send, as
// transition classes know it: the node, or clientClass for every client.
// One class per client split the evidence of a server's behaviour over its
// clients (on Figure 18's cases, ten clients: the request → call and the
// reply classes fitted to the wrong delays; pooled, children-d/cc went from
// 0.19 to 0.49 of the instances).
func (j *joint) trigNode(n trace.NodeID) trace.NodeID {
	if int(n) < len(j.client) && j.client[n] {
		return clientClass
	}
	return n
}
