package nesting

import (
	"math"
	"slices"

	"wap5/trace"
)

// byNode holds the calls by node, as records for steps 2 and 3: in[inOff[b]:
// inOff[b+1]] are the calls into b in order of their arrival there,
// out[outOff[b]:outOff[b+1]] the calls out of b in order of departure.
type byNode struct {
	inOff, outOff []int32
	in            []inRec
	out           []outRec
}

// inRec is a call into node b as steps 2 and 3 at b see it (32 bytes):
// first and last are its children so far (indexes of b's calls out).
type inRec struct {
	ca, rd      int64
	caller      trace.NodeID
	id          int32 // index in calls
	first, last int32
}

// outRec is a call out of node b as steps 2 and 3 at b see it (32 bytes):
// candOff, candN its candidates.
type outRec struct {
	cs, cr         int64
	callee         trace.NodeID
	id             int32 // index in calls
	candOff, candN int32
}

// group copies the calls into the records of their callee and of their
// caller, in one pass over the calls in order (each node's records are
// written in order too), then sorts each node's records by time. Only a
// node with calls both in and out nests anything (steps 2 and 3): the
// others get no records (a back-end's calls in, a client's calls out).
func (s *state) group() *byNode {
	n := len(s.t.Nodes)
	calls := s.calls
	g := &byNode{inOff: grab[int32](&s.ar, n+1), outOff: grab[int32](&s.ar, n+1)}
	for i := range calls {
		g.inOff[calls[i].callee+1]++
		g.outOff[calls[i].caller+1]++
	}
	fi, fo := grabDirty[int32](&s.ar, n), grabDirty[int32](&s.ar, n) // next record of each node, −1: none
	for b := 0; b < n; b++ {
		if g.inOff[b+1] == 0 || g.outOff[b+1] == 0 {
			g.inOff[b+1], g.outOff[b+1] = 0, 0
			fi[b], fo[b] = -1, -1
		} else {
			fi[b], fo[b] = g.inOff[b], g.outOff[b]
		}
		g.inOff[b+1] += g.inOff[b]
		g.outOff[b+1] += g.outOff[b]
	}
	g.in, g.out = grabDirty[inRec](&s.ar, int(g.inOff[n])), grabDirty[outRec](&s.ar, int(g.outOff[n]))
	for i := range calls {
		c := &calls[i]
		if p := fi[c.callee]; p >= 0 {
			g.in[p] = inRec{ca: c.ca, rd: c.rd, caller: c.caller, id: int32(i), first: -1, last: -1}
			fi[c.callee]++
		}
		if p := fo[c.caller]; p >= 0 {
			g.out[p] = outRec{cs: c.cs, cr: c.cr, callee: c.callee, id: int32(i)}
			fo[c.caller]++
		}
	}
	for b := 0; b < n; b++ {
		sortIn(g.in[g.inOff[b]:g.inOff[b+1]])
		sortOut(g.out[g.outOff[b]:g.outOff[b+1]])
	}
	return g
}

// sortIn and sortOut sort records by time, stably. Traces come nearly
// sorted, so an insertion sort with a budget of moves comes first.
func sortIn(r []inRec) {
	moves, budget := 0, 16*len(r)+64
	for j := 1; j < len(r) && moves <= budget; j++ {
		if r[j].ca >= r[j-1].ca {
			continue
		}
		x := r[j]
		k := j
		for k > 0 && x.ca < r[k-1].ca && moves <= budget {
			r[k] = r[k-1]
			k--
			moves++
		}
		r[k] = x
	}
	if moves > budget {
		slices.SortStableFunc(r, func(a, b inRec) int { return cmpTime(a.ca, b.ca) })
	}
}

func sortOut(r []outRec) {
	moves, budget := 0, 16*len(r)+64
	for j := 1; j < len(r) && moves <= budget; j++ {
		if r[j].cs >= r[j-1].cs {
			continue
		}
		x := r[j]
		k := j
		for k > 0 && x.cs < r[k-1].cs && moves <= budget {
			r[k] = r[k-1]
			k--
			moves++
		}
		r[k] = x
	}
	if moves > budget {
		slices.SortStableFunc(r, func(a, b outRec) int { return cmpTime(a.cs, b.cs) })
	}
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

type keyed struct {
	k int64
	i int32
}

// sortKeyed sorts ks (ids with their keys) by key, stably, and writes the
// ids in that order. Traces come nearly sorted, so an insertion sort
// with a budget of moves comes first.
func sortKeyed(ids []int32, ks []keyed) {
	moves, budget := 0, 16*len(ks)+64
	for j := 1; j < len(ks) && moves <= budget; j++ {
		if ks[j].k >= ks[j-1].k {
			continue
		}
		x := ks[j]
		k := j
		for k > 0 && x.k < ks[k-1].k && moves <= budget {
			ks[k] = ks[k-1]
			k--
			moves++
		}
		ks[k] = x
	}
	if moves > budget {
		slices.SortStableFunc(ks, func(a, b keyed) int { return cmpTime(a.k, b.k) })
	}
	for j := range ks {
		ids[j] = ks[j].i
	}
}

type triple struct{ a, b, c trace.NodeID }

// nestNodes is steps 2 and 3, node by node, on the records of group: the
// calls into and out of each node in time order, so that finding
// candidates, scoring them and choosing parents read a few MB in order
// rather than the whole call array at random.
func (s *state) nestNodes() {
	scratch := s.ar.mark()
	defer s.ar.release(scratch)
	g := s.group()
	w := int64(s.opt.SkewWindow)
	lo := s.opt.BinLo.Seconds()
	inv := 1 / math.Log(s.opt.BinRatio)
	nb := s.opt.Bins
	bins := newBinner(lo, inv, nb)
	s.bins = bins
	// The scoreboard histogram of (A, b, C) at node b: a dense n×n table
	// per b when the nodes are few, else a map.
	boardIdx := make(map[triple]int32)
	nn := len(s.t.Nodes)
	var dense []int32
	if nn <= 512 {
		dense = make([]int32, nn*nn)
	}
	var b trace.NodeID
	var touched []int32 // entries of dense set for this b
	boardOf := func(a, c trace.NodeID) int32 {
		if dense != nil {
			if h := dense[int(a)*nn+int(c)]; h > 0 {
				return h - 1
			}
		}
		key := triple{a, b, c}
		h, ok := boardIdx[key]
		if !ok {
			h = int32(len(s.board))
			boardIdx[key] = h
			s.board = append(s.board, make([]float64, s.opt.Bins+2))
		}
		if dense != nil {
			dense[int(a)*nn+int(c)] = h + 1
			touched = append(touched, int32(int(a)*nn+int(c)))
		}
		return h
	}
	// Scratch for the largest node.
	most := int32(0)
	for b := 0; b < nn; b++ {
		most = max(most, g.outOff[b+1]-g.outOff[b])
	}
	next := grabDirty[int32](&s.ar, int(most))
	cands := grabDirty[candidate](&s.ar, int(most)+int(most)/2+16)
	var active []int32
	var kern, sbuf []float64
	if s.opt.Smooth > 0 {
		kern, sbuf = gaussian(s.opt.Smooth), make([]float64, nb+2)
	}
	for bi := range s.t.Nodes {
		b = trace.NodeID(bi)
		for _, x := range touched {
			dense[x] = 0
		}
		touched = touched[:0]
		iv := g.in[g.inOff[b]:g.inOff[b+1]]
		ov := g.out[g.outOff[b]:g.outOff[b+1]]
		if len(iv) == 0 || len(ov) == 0 {
			continue
		}
		// 2c. Each of a call's N candidates scores 1/N at its nesting delay.
		score := func(c *outRec) {
			if c.candN == 0 {
				return
			}
			wt := 1 / float64(c.candN)
			for j := c.candOff; j < c.candOff+c.candN; j++ {
				cd := &cands[j]
				pc := &iv[cd.parent]
				h := boardOf(pc.caller, c.callee)
				cd.hist = h
				cd.bin = int32(bins.of(c.cs - pc.ca))
				s.board[h][cd.bin] += wt
			}
		}
		boards := len(s.board)
		cands = cands[:0]
		active = active[:0]
		p := 0
		for k := range ov {
			c := &ov[k]
			// 2a. Calls into b open when c left: arrived before it (within
			// the window) and not yet returned.
			for p < len(iv) && iv[p].ca <= c.cs+w {
				active = append(active, int32(p))
				p++
			}
			start := len(cands)
			n := 0
			for _, pj := range active {
				pc := &iv[pj]
				if pc.rd+w < c.cs {
					continue // returned before c left: no later call nests in it either
				}
				active[n] = pj
				n++
				if pc.rd+w >= c.cr && pc.id != c.id {
					if len(cands) == cap(cands) {
						// Grown in the arena, not by append: a heap
						// slice of millions of candidates (high
						// parallelism) is fresh 4 KB pages cleared and
						// copied in runtime code the collector cannot
						// preempt, so a collection then spins on the
						// other core until it ends.
						more := grabDirty[candidate](&s.ar, 2*cap(cands))
						cands = more[:copy(more, cands)]
					}
					cands = append(cands, candidate{parent: pj})
				}
			}
			active = active[:n]
			c.candOff, c.candN = int32(start), int32(len(cands)-start)
			if c.candN > 0 {
				s.withCand++
				s.ncands += int(c.candN)
				if s.actors == nil {
					score(c)
				}
			}
		}
		// 2b. Where the data shows that calls leave from the actor that
		// received their parent, only such candidates stay.
		if s.actors != nil {
			if st, ok := s.actorFilter(b, iv, ov, cands); ok {
				s.actorStats = append(s.actorStats, st)
			}
			for k := range ov {
				score(&ov[k])
			}
		}
		// 2d. Optional Gaussian smoothing of b's histograms (they are
		// complete: only b's calls score in them).
		if s.opt.Smooth > 0 {
			for _, h := range s.board[boards:] {
				smooth(h, kern, sbuf)
			}
		}
		// 3. One parent per call.
		s.findNestedPairs(iv, ov, next[:len(ov)], cands)
	}
}

// binner is binOf for delays in nanoseconds: a table indexed by the
// exponent and the top mantissa bits of the delay as a float64 gives the bin
// of the smallest delay with those bits, and a step or two up the
// precomputed smallest delay of every bin (found with binOf itself, so both
// agree) finishes; binary search in those edges where the table does not
// reach.
type binner struct {
	th     []int64 // th[i-1]: smallest delay of bin ≥ i
	shift  uint    // float64 bits >> shift = table key
	keyMin uint64
	lut    []int32
}

func newBinner(lo, invLogRatio float64, nb int) *binner {
	b := &binner{th: make([]int64, nb+1)}
	for i := 1; i <= nb+1; i++ {
		l, h := int64(0), int64(1)<<62
		for l < h {
			m := l + (h-l)/2
			if binOf(float64(m)/1e9, lo, invLogRatio, nb) >= i {
				h = m
			} else {
				l = m + 1
			}
		}
		b.th[i-1] = l
	}
	// Mantissa bits per octave: about two table entries per bin.
	k := 1
	for k < 10 && float64(int(1)<<k) < 2*math.Ln2*invLogRatio {
		k++
	}
	lo0, hi0 := b.th[0], b.th[nb]
	if lo0 <= 0 || hi0 >= 1<<53 {
		return b
	}
	b.shift = uint(52 - k)
	b.keyMin = math.Float64bits(float64(lo0)) >> b.shift
	keyMax := math.Float64bits(float64(hi0)) >> b.shift
	b.lut = make([]int32, keyMax-b.keyMin+1)
	for j := range b.lut {
		// The smallest delay whose key is keyMin+j.
		d0 := int64(math.Ceil(math.Float64frombits((b.keyMin + uint64(j)) << b.shift)))
		b.lut[j] = int32(b.search(max(d0, lo0)))
	}
	return b
}

// of is binOf(d/1e9, ...) for d in nanoseconds.
func (b *binner) of(d int64) int {
	th := b.th
	switch {
	case d < th[0]:
		return 0
	case d >= th[len(th)-1]:
		return len(th)
	case b.lut == nil:
		return b.search(d)
	}
	l := int(b.lut[math.Float64bits(float64(d))>>b.shift-b.keyMin])
	for th[l] <= d {
		l++
	}
	return l
}

// search is of by binary search in the edges.
func (b *binner) search(d int64) int {
	l, h := 0, len(b.th)
	for l < h {
		m := int(uint(l+h) >> 1)
		if b.th[m] <= d {
			l = m + 1
		} else {
			h = m
		}
	}
	return l
}

// binOf maps a delay in seconds to a scoreboard bin: 0 below lo, 1..nb on
// the log scale, nb+1 above.
func binOf(x, lo, invLogRatio float64, nb int) int {
	if !(x >= lo) {
		return 0
	}
	i := 1 + int(math.Log(x/lo)*invLogRatio)
	if i > nb {
		return nb + 1
	}
	return i
}

// gaussian returns a normalised kernel of standard deviation sigma (bins),
// cut at 3 sigma; kern[0] is the centre.
func gaussian(sigma float64) []float64 {
	n := int(math.Ceil(3 * sigma))
	k := make([]float64, n+1)
	sum := 0.0
	for i := range k {
		k[i] = math.Exp(-float64(i*i) / (2 * sigma * sigma))
		if i == 0 {
			sum += k[i]
		} else {
			sum += 2 * k[i]
		}
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}

// smooth convolves h with the symmetric kernel in place.
func smooth(h, kern, buf []float64) {
	copy(buf, h)
	for i := range h {
		v := buf[i] * kern[0]
		for d := 1; d < len(kern); d++ {
			if i-d >= 0 {
				v += buf[i-d] * kern[d]
			}
			if i+d < len(h) {
				v += buf[i+d] * kern[d]
			}
		}
		h[i] = v
	}
}
