package linking

import (
	"fmt"
	"iter"
	"math"
	"unsafe"

	"wap5/internal/prefetch"
	"wap5/trace"
)

// links is the output of WAP5 step 2: for every message its candidate
// parents with probabilities and its spontaneous probability, and the
// inverted child lists. On a large trace the arrays are outside the Go
// heap (mem), given back by free.
type links struct {
	parStart []int32
	parMsg   []int32
	parProb  []float32
	spont    []float32
	spontML  []bool // spontaneous is the most likely cause
	// best is every message's most likely parent (−1: none): what the
	// fit reads of the parents once they are dropped (step2's last call).
	best []int32

	childStart []int32
	childMsg   []int32
	childProb  []float32
	childML    []bool // the parent is the child's most likely cause

	mem offHeap
}

// free gives k's arrays back; nothing may read them any more.
func (k *links) free() {
	*k = links{mem: k.mem}
	k.mem.free()
}

// candidatesOf calls f(parent, delay seconds) for every candidate parent
// of message i, sent at send by src and received at recv, within the
// window, latest first: messages into its sender before it was sent; for
// a sender without a send time (untraced), messages from its receiver to
// the sender before it was received, on the receiver's clock (WAP5 §5.1).
// (The times and the sender are the caller's: what the joint linker's
// passes know of the message without the trace's messages, Options.Lean.)
func (l *linker) candidatesOf(i int, send, recv int64, src trace.NodeID, rev []int32, f func(p int32, dt float64) bool) {
	ids, ts, lo, p, t := l.candidates(i, send, recv, src, rev)
	for ; p >= lo; p-- {
		dt := t - ts[p]
		if dt > l.x {
			return
		}
		j := ids[p]
		if int(j) == i {
			continue
		}
		if !f(j, float64(dt)/1e9) {
			return
		}
	}
}

// candidates is where candidatesOf finds message i's candidate parents,
// for a loop of the caller's own (step 2's, without a call per
// candidate): ids[p], sent or received at ts[p], for p from at down to
// lo, each t − ts[p] ns before the message, until that passes the window;
// ids[p] == i is not a candidate. (An untraced sender's candidates, sends
// on the reverse edge, never include i, which has no send time.)
func (l *linker) candidates(i int, send, recv int64, src trace.NodeID, rev []int32) (ids []int32, ts []int64, lo, at int, t int64) {
	at = int(l.lastPos[i]) // −1: none
	if at < 0 {
		return nil, nil, 0, -1, 0
	}
	if send != trace.Unknown {
		return l.ins, l.insRecv, int(l.inStart[src]), at, send
	}
	return l.byEdge, l.byEdgeSend, int(l.edgeStart[rev[l.edge[i]]]), at, recv
}

// expGap is math.Exp(x) for a log-weight's gap to the best (x ≤ 0), with
// the best's own (x = 0: one per message, the spontaneous cause or a
// candidate) taken as the 1 that math.Exp gives there, without the call.
func expGap(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Exp(x)
}

// step2Edge is what step 2 reads of an edge for every message on it: its
// delay density, the spontaneous log-weight and the density's mean, in
// one 64-byte cache line.
type step2Edge struct {
	dist
	spont, mean float64
	_           [2]float64
}

// Limits on the candidate parents kept per message (WAP5 step 2).
const (
	minParentProb = 0.01
	maxParents    = 8
)

// step2 scores candidate parents (WAP5 §5.1 Step 2) with the current d.
// On its last call (last) the candidate indexes are dropped once the
// parents are scored, and the parent lists once inverted (best stays).
func (l *linker) step2(rev []int32, last bool) *links {
	n := l.count()
	k := &links{}
	mem := &k.mem
	k.parStart, k.spont, k.spontML = offMake[int32](mem, n+1), offMake[float32](mem, n), offMake[bool](mem, n)
	// Room for every candidate kept (maxParents per message at most)
	// outside the heap, where only what is written costs memory; a small
	// trace's in the heap, two per message to begin with (growing by
	// doubling from nothing would leave garbage of the same size behind).
	if c := maxParents * n; 4*c >= 4<<20 {
		k.parMsg, k.parProb = offMakeSparse[int32](mem, c)[:0], offMakeSparse[float32](mem, c)[:0]
	} else {
		k.parMsg, k.parProb = make([]int32, 0, 2*n), make([]float32, 0, 2*n)
	}
	y := l.o.Spontaneous
	// The density and the spontaneous weight per edge, once, in one
	// cache line per edge: a message's edge is at random among many.
	models := make([]step2Edge, len(l.d))
	for e, d := range l.d {
		m := &models[e]
		m.dist = modelDist(l.o.DelayModel, d)
		m.spont = m.dist.logpdf(y * d)
		m.mean = m.dist.mean()
	}
	var lw, ew []float64
	var pm []int32
	window := l.x
	for i := 0; i < n; i++ {
		e := l.edge[i]
		dd := &models[e]
		ls := dd.spont
		lw, pm = lw[:0], pm[:0]
		l.prefetchCands(i+candAhead, rev)
		if j := i + candAhead; j < n {
			prefetch.At(models, l.edge[j])
		}
		best := ls
		send, recv := l.times(int32(i))
		// candidatesOf's loop, here without a call per candidate.
		ids, ts, lo, p, t := l.candidates(i, send, recv, l.edgeSrc[e], rev)
		for ; p >= lo; p-- {
			ns := t - ts[p]
			if ns > window {
				break
			}
			j := ids[p]
			if int(j) == i {
				continue
			}
			dt := float64(ns) / 1e9
			w := dd.logpdf(dt)
			// Beyond the mode a density only falls: stop once a candidate
			// is a millionth of the best so far.
			if dt > dd.mean && w < best-14 {
				break
			}
			if w > best {
				best = w
			}
			lw = append(lw, w)
			pm = append(pm, j)
		}
		es := expGap(ls - best)
		sum := es
		ew = ew[:0]
		for _, w := range lw {
			x := expGap(w - best)
			ew = append(ew, x)
			sum += x
		}
		k.spont[i] = float32(es / sum)
		k.spontML[i] = ls >= best
		// Keep the candidates that can matter: at least 1% likely, at most
		// maxParents of them (memory is per link, and a busy node offers
		// dozens of negligible ones).
		kept := 0
		for j, x := range ew {
			p := x / sum
			if p < minParentProb || kept == maxParents {
				continue
			}
			kept++
			k.parMsg = append(k.parMsg, pm[j])
			k.parProb = append(k.parProb, float32(p))
		}
		k.parStart[i+1] = int32(len(k.parMsg))
	}
	if last {
		l.dropIndex()
	}
	// Invert into child lists, children in time order. childStart[p+1]
	// counts p's children, then holds where they start (the counts
	// before p), then is p's cursor as they are placed, which leaves it
	// where they end, where p+1's start: no array of cursors.
	k.childStart = offMake[int32](mem, n+1)
	for _, p := range k.parMsg {
		k.childStart[p+1]++
	}
	for i, sum := 0, int32(0); i < n; i++ {
		c := k.childStart[i+1]
		k.childStart[i+1] = sum
		sum += c
	}
	k.childMsg = offMake[int32](mem, len(k.parMsg))
	k.childProb = offMake[float32](mem, len(k.parMsg))
	k.childML = offMake[bool](mem, len(k.parMsg))
	k.best = offMake[int32](mem, n)
	pos := k.childStart[1:]
	for c := 0; c < n; c++ {
		var mx float32
		k.best[c] = -1
		for q := k.parStart[c]; q < k.parStart[c+1]; q++ {
			if k.parProb[q] > mx {
				mx, k.best[c] = k.parProb[q], k.parMsg[q]
			}
		}
		for q := k.parStart[c]; q < k.parStart[c+1]; q++ {
			p := k.parMsg[q]
			at := pos[p]
			pos[p]++
			k.childMsg[at] = int32(c)
			k.childProb[at] = k.parProb[q]
			k.childML[at] = k.parProb[q] == mx && !k.spontML[c]
		}
	}
	if last {
		for _, s := range []unsafe.Pointer{unsafe.Pointer(unsafe.SliceData(k.parStart)), unsafe.Pointer(unsafe.SliceData(k.parMsg)), unsafe.Pointer(unsafe.SliceData(k.parProb))} {
			mem.release(s)
		}
		k.parStart, k.parMsg, k.parProb = nil, nil, nil
	}
	return k
}

// reestimate sets d to the probability-weighted mean delay of the links and
// returns the largest relative change (iterating steps 1–2).
func (l *linker) reestimate(k *links) float64 {
	sum := make([]float64, len(l.d))
	w := make([]float64, len(l.d))
	for c := range int32(l.count()) {
		e := l.edge[c]
		send, recv := l.times(c)
		for q := k.parStart[c]; q < k.parStart[c+1]; q++ {
			psend, precv := l.times(k.parMsg[q])
			var dt int64
			if send != trace.Unknown {
				dt = send - precv
			} else {
				dt = recv - psend
			}
			sum[e] += float64(k.parProb[q]) * float64(dt) / 1e9
			w[e] += float64(k.parProb[q])
		}
	}
	change := 0.0
	for e := range l.d {
		if w[e] == 0 {
			continue
		}
		nd := l.floorDelay(sum[e] / w[e])
		change = math.Max(change, math.Abs(nd-l.d[e])/l.d[e])
		l.d[e] = nd
	}
	return change
}

// runWAP5 is WAP5 §5.1 steps 1–3.
func (l *linker) runWAP5() (*instances, Fit, int) {
	rev := l.reverseEdges()
	// Step 1.
	phase("step 1")
	l.step1()
	// Step 2 (repeated with step 1's estimate refined when iterating).
	// Its last call drops the per-node and per-edge indexes before step 3
	// and the aggregation build their own arrays.
	phase("step 2")
	k := l.step2(rev, !l.o.Iterate || l.o.MaxIterations <= 1)
	iters := 1
	fit := Fit{}
	if l.o.Iterate {
		for iters < l.o.MaxIterations {
			ch := l.reestimate(k)
			fit.Change = ch
			k.free()
			iters++
			k = l.step2(rev, iters == l.o.MaxIterations || ch < 0.01)
			if ch < 0.01 {
				fit.Settled = true
				break
			}
		}
	}
	l.dropIndex()
	// Step 3.
	phase("step 3")
	in := l.buildTrees(k)
	fit = l.fitWAP5(k, fit)
	k.free()
	// Options.Lean: the aggregation reads the packed messages (msgView),
	// and run makes them again after it, but where clients are
	// aggregated: their labels are found from the trace's messages.
	if l.tm != nil && l.o.AggregateClients {
		l.unpackMessages()
	}
	return in, fit, iters
}

// decision of step 3 for a link (or a root) of probability p.
type decision uint8

const (
	probablyFalse decision = iota
	probablyTrue
	tryBoth
)

func (l *linker) decide(p float32, mostLikely bool) decision {
	band := float32(l.o.TryBothBand)
	switch {
	case p >= 0.5+band:
		return probablyTrue
	case p <= 0.5-band && !mostLikely:
		return probablyFalse
	}
	return tryBoth
}

// maxTree bounds the messages of one instance.
const maxTree = 1 << 10

// partial is an instance under construction.
type partial struct {
	msgs, par []int32
	cur, pos  int32 // message whose children are being decided, and the next child link
	prob      float64
	budget    int
}

func (st *partial) has(m int32) bool {
	for _, x := range st.msgs {
		if x == m {
			return true
		}
	}
	return false
}

// clone is a copy of st whose messages and parents are placed right after
// st's in their arrays (new ones only where those are full): the trees are
// grown depth first, so st is not grown again until its clone is done
// with, and it then takes the clone's places.
func (st *partial) clone() partial {
	c := *st
	n := len(st.msgs)
	c.msgs = append(st.msgs[n:n], st.msgs...)
	c.par = append(st.par[n:n], st.par...)
	return c
}

// buildTrees is Step 3: path instances from every root down.
func (l *linker) buildTrees(k *links) *instances {
	// Room for every message once (each is in about one instance; try-both
	// adds a few).
	n := l.count()
	in := l.newInstances(n)
	big := false
	// Every root's instance is grown in these arrays, and its try-both
	// alternatives after it (clone): no allocation per root.
	msgArena, parArena := make([]int32, 8*maxTree), make([]int32, 8*maxTree)
	var grow func(st partial)
	grow = func(st partial) {
		for int(st.cur) < len(st.msgs) {
			m := st.msgs[st.cur]
			for q := k.childStart[m] + st.pos; q < k.childStart[m+1]; q++ {
				st.pos++
				c := k.childMsg[q]
				if st.has(c) {
					continue
				}
				p := k.childProb[q]
				take := false
				switch l.decide(p, k.childML[q]) {
				case probablyTrue:
					take = true
				case probablyFalse:
				case tryBoth:
					if st.budget > 0 {
						st.budget--
						alt := st.clone()
						alt.msgs = append(alt.msgs, c)
						alt.par = append(alt.par, st.cur)
						alt.prob *= float64(p)
						if alt.prob >= l.o.MinProb {
							grow(alt)
						}
						st.prob *= 1 - float64(p)
						if st.prob < l.o.MinProb {
							return
						}
						continue
					}
					take = p >= 0.5 || k.childML[q]
				}
				if take && len(st.msgs) >= maxTree {
					big, take = true, false
				}
				if take {
					st.msgs = append(st.msgs, c)
					st.par = append(st.par, st.cur)
					st.prob *= float64(p)
				} else {
					st.prob *= 1 - float64(p)
				}
				if st.prob < l.o.MinProb {
					return
				}
			}
			st.cur++
			st.pos = 0
		}
		in.add(st.msgs, st.par, st.prob)
	}
	for r := range n {
		ps := k.spont[r]
		if l.decide(ps, k.spontML[r]) == probablyFalse {
			continue
		}
		if float64(ps) < l.o.MinProb {
			continue
		}
		msgArena[0], parArena[0] = int32(r), -1
		grow(partial{msgs: msgArena[:1], par: parArena[:1], prob: float64(ps), budget: l.o.TryBoth})
	}
	if big {
		l.warnings = append(l.warnings, fmt.Sprintf("linking: some instances were cut at %d messages", maxTree))
	}
	return in
}

// fitWAP5 compares the delay models on the most likely link of each message.
func (l *linker) fitWAP5(k *links, fit Fit) Fit {
	perEdge := make([]moments, len(l.edgeSrc)) // by edge: no map per message
	n := int32(l.count())
	for c := range n {
		// The edge's moments and the parent's times of the message
		// candAhead on: both at random.
		if a := c + candAhead; a < n && !k.spontML[a] && k.best[a] >= 0 {
			prefetch.At(perEdge, l.edge[a])
			l.prefetchTimes(k.best[a])
		}
		best := k.best[c]
		if k.spontML[c] || best < 0 {
			continue
		}
		send, recv := l.times(c)
		psend, precv := l.times(best)
		dt := send - precv
		if send == trace.Unknown {
			dt = recv - psend
		}
		perEdge[l.edge[c]].add(float64(dt) / 1e9)
	}
	// Sum in edge order: a map's order would change the log-likelihoods'
	// last bits from run to run.
	return compareFits(func(yield func(*moments) bool) {
		for e := range perEdge {
			if perEdge[e].n > 0 && !yield(&perEdge[e]) {
				return
			}
		}
	}, fit)
}

func compareFits(per iter.Seq[*moments], fit Fit) Fit {
	fit.LogLik = map[string]float64{}
	for m := range per {
		if m.n < 2 {
			continue
		}
		e, g, f := m.logLik()
		fit.LogLik[DelayExp] += e
		fit.LogLik[DelayGamma] += g
		fit.LogLik[DelayFit] += f
		fit.Samples += int(m.n)
	}
	if fit.Samples > 0 {
		fit.Best = DelayExp
		if fit.LogLik[DelayGamma] > fit.LogLik[fit.Best] {
			fit.Best = DelayGamma
		}
		if fit.LogLik[DelayFit] > fit.LogLik[fit.Best] {
			fit.Best = DelayFit
		}
	}
	return fit
}
