package nesting

import (
	"cmp"
	"slices"
	"strings"
	"unsafe"

	"wap5/internal/hugemem"
	"wap5/trace"
)

// pattern is a call-path pattern under construction: its shape (the calls
// of a depth-first walk, each with its number of children) and per-step
// delay accumulators.
type pattern struct {
	shape      []shapeStep
	wait, lat  []trace.Accumulator
	id         int32  // index in order of creation
	hash       uint64 // of its shape (walker.hash)
	h0         int    // step 4d: index of its first histogram (−1: none)
	count      int
	rank       int
	sig        string
	rootLatSum float64
}

type shapeStep struct {
	caller, callee trace.NodeID
	children       int32
}

// walker does depth-first walks of call trees.
type walker struct {
	calls []call
	ties  []tie
	order []int32 // calls of the last walk, preorder
	shape []shapeStep
	hash  uint64
}

func (w *walker) walk(root int32) {
	w.order, w.shape, w.hash = w.order[:0], w.shape[:0], 1469598103934665603
	w.visit(root)
}

func (w *walker) visit(ci int32) {
	c, t := &w.calls[ci], &w.ties[ci]
	n := t.nkids
	w.order = append(w.order, ci)
	w.shape = append(w.shape, shapeStep{c.caller, c.callee, n})
	for _, v := range [3]uint64{uint64(c.caller), uint64(c.callee), uint64(n)} {
		w.hash = (w.hash ^ v) * 1099511628211
	}
	for k := t.first; k >= 0; k = w.ties[k].next {
		w.visit(k)
	}
}

// findCallPaths is step 4: a call path from every call without a parent,
// aggregated into patterns ranked by count.
func (s *state) findCallPaths(out *trace.Paths) {
	calls, ties := s.calls, s.ties
	scratch := s.ar.mark()
	defer s.ar.release(scratch)
	// One pass over the ties (room for every call to be a root).
	roots := grabDirty[int32](&s.ar, len(ties))[:0]
	for i := range ties {
		if ties[i].parent < 0 {
			roots = append(roots, int32(i))
		}
	}
	s.roots = len(roots)
	// Nearly in order already: sortKeyed's insertion sort (stable).
	ks := grabDirty[keyed](&s.ar, len(roots))
	for j, i := range roots {
		ks[j] = keyed{calls[i].cs, i}
	}
	sortKeyed(roots, ks)
	table := make(map[uint64][]*pattern)
	var recent [256]*pattern
	var pats []*pattern
	w := &walker{calls: calls, ties: ties}
	// The bins of each walked call's call delay and latency, and each
	// walk's pattern.
	bins := grabDirty[stepBins](&s.ar, len(calls))[:0]
	walkPat := grabDirty[int32](&s.ar, len(roots))
	var instPat []*pattern
	var instOff []int32
	var instMsgs []int32
	if !s.opt.NoInstances {
		instPat = make([]*pattern, 0, len(roots))
		instOff = make([]int32, 0, len(roots)+1)
		instMsgs = make([]int32, 0, 2*len(calls)) // returned: not in the arena
	}
	for wi, r := range roots {
		// 4a. Walk the tree and find (or start) its pattern.
		w.walk(r)
		// The last pattern seen with each of 256 hashes, in front of the
		// table (a pattern's shape is its alone: one found is the one).
		pat := recent[w.hash&255]
		if pat == nil || pat.hash != w.hash || !slices.Equal(pat.shape, w.shape) {
			pat = nil
			for _, p := range table[w.hash] {
				if slices.Equal(p.shape, w.shape) {
					pat = p
					break
				}
			}
			if pat == nil {
				pat = &pattern{shape: slices.Clone(w.shape), wait: make([]trace.Accumulator, len(w.shape)), lat: make([]trace.Accumulator, len(w.shape)), id: int32(len(pats)), h0: -1, hash: w.hash}
				table[w.hash] = append(table[w.hash], pat)
				pats = append(pats, pat)
			}
			recent[w.hash&255] = pat
		}
		// 4b. Call delays and latencies of every step.
		pat.count++
		walkPat[wi] = pat.id
		for k, ci := range w.order {
			c, t := &calls[ci], &ties[ci]
			if k > 0 {
				pat.wait[k].Add(float64(c.cs-calls[t.parent].ca)/1e9, 1)
			}
			lat := float64(c.cr-c.cs) / 1e9
			pat.lat[k].Add(lat, 1)
			bins = append(bins, stepBins{t.pbin, int32(s.bins.of(c.cr - c.cs))})
		}
		pat.rootLatSum += float64(calls[r].cr-calls[r].cs) / 1e9
		if !s.opt.NoInstances {
			instPat = append(instPat, pat)
			instOff = append(instOff, int32(len(instMsgs)))
			for _, ci := range w.order {
				instMsgs = append(instMsgs, s.pairs[ci].call, s.pairs[ci].ret)
			}
		}
	}
	// 4c. Rank by count, then by total latency, then by shape.
	names := s.t.Nodes
	for _, p := range pats {
		p.sig = signature(p.shape, names)
	}
	slices.SortFunc(pats, func(a, b *pattern) int {
		if c := cmp.Compare(b.count, a.count); c != 0 {
			return c
		}
		if c := cmp.Compare(b.rootLatSum, a.rootLatSum); c != 0 {
			return c
		}
		return strings.Compare(a.sig, b.sig)
	})
	// 4d. Histograms of both delays for the most frequent patterns.
	byID := make([]*pattern, len(pats))
	for i, p := range pats {
		p.rank = i + 1
		byID[p.id] = p
	}
	s.histograms(pats[:min(max(s.opt.HistPatterns, 0), len(pats))], byID, walkPat, bins)
	out.Patterns = make([]*trace.Pattern, len(pats))
	// The patterns' steps and their children lists in two allocations.
	nsteps := 0
	for _, p := range pats {
		nsteps += len(p.shape)
	}
	sa := stepAlloc{steps: make([]trace.Step, nsteps), kids: make([]*trace.Step, nsteps-len(pats))}
	for i, p := range pats {
		out.Patterns[i] = p.export(s.t, &sa)
	}
	if !s.opt.NoInstances {
		out.Instances = make([]trace.Instance, len(instPat))
		instOff = append(instOff, int32(len(instMsgs)))
		for i, p := range instPat {
			out.Instances[i] = trace.Instance{Pattern: p.rank, Prob: 1, Messages: instMsgs[instOff[i]:instOff[i+1]:instOff[i+1]]}
		}
	}
}

// stepBins are the scoreboard bins of a call's call delay (the one step 2
// scored it in) and of its latency.
type stepBins struct{ wait, lat int32 }

// histograms is step 4d for the patterns top: byID are all patterns by
// id, walkPat the pattern of every walk of step 4a, bins the bins of the
// walks' calls, walk after walk. The histograms' bins are one block.
func (s *state) histograms(top []*pattern, byID []*pattern, walkPat []int32, bins []stepBins) {
	o := s.opt
	nh := 0
	for _, p := range top {
		p.h0 = nh
		nh += 2*len(p.shape) - 1 // latencies, then call delays (none for the root)
	}
	if nh == 0 {
		return
	}
	hs := make([]trace.Histogram, nh)
	counts := histogramCounts(nh * o.Bins)
	for j := range hs {
		hs[j] = trace.Histogram{Lo: o.BinLo.Seconds(), Ratio: o.BinRatio, Counts: counts[j*o.Bins : (j+1)*o.Bins : (j+1)*o.Bins]}
	}
	for _, p := range top {
		n := len(p.shape)
		for k := range p.shape {
			if k > 0 {
				p.wait[k].WithHistogram(&hs[p.h0+n+k-1])
			}
			p.lat[k].WithHistogram(&hs[p.h0+k])
		}
	}
	// The accumulators already hold the samples; only the histograms fill.
	add := func(h *trace.Histogram, b int32) {
		switch int(b) {
		case 0:
			h.Under++
		case o.Bins + 1:
			h.Over++
		default:
			h.Counts[b-1]++
		}
	}
	off := 0
	for _, id := range walkPat {
		p := byID[id]
		n := len(p.shape)
		if p.h0 >= 0 {
			for k, sb := range bins[off : off+n] {
				if k > 0 {
					add(&hs[p.h0+n+k-1], sb.wait)
				}
				add(&hs[p.h0+k], sb.lat)
			}
		}
		off += n
	}
}

// stepAlloc holds the steps and children lists export hands out.
type stepAlloc struct {
	steps []trace.Step
	kids  []*trace.Step
}

// export builds the pattern's step tree, its steps from sa.
func (p *pattern) export(t *trace.Trace, sa *stepAlloc) *trace.Pattern {
	k := 0
	depth := 0
	var build func(d int) *trace.Step
	build = func(d int) *trace.Step {
		sh := p.shape[k]
		st := &sa.steps[0]
		sa.steps = sa.steps[1:]
		*st = trace.Step{From: t.NodeName(sh.caller), To: t.NodeName(sh.callee), Kind: trace.KindCall, Count: p.count,
			Wait: p.wait[k].Stats(), Latency: p.lat[k].Stats()}
		depth = max(depth, d)
		k++
		if n := int(sh.children); n > 0 {
			st.Children = sa.kids[:0:n]
			sa.kids = sa.kids[n:]
			for range n {
				st.Children = append(st.Children, build(d+1))
			}
		}
		return st
	}
	root := build(1)
	return &trace.Pattern{Rank: p.rank, Count: p.count, Expected: float64(p.count), MaxProb: 1, Root: root,
		Metrics: map[string]float64{"depth": float64(depth), "calls": float64(len(p.shape)), "latency_s": root.Latency.Mean}}
}

// signature is a readable form of a shape: A>B(B>C,B>D).
func signature(shape []shapeStep, nodes []trace.Node) string {
	var b strings.Builder
	k := 0
	var rec func()
	rec = func() {
		sh := shape[k]
		k++
		b.WriteString(nodes[sh.caller].Name)
		b.WriteByte('>')
		b.WriteString(nodes[sh.callee].Name)
		if sh.children > 0 {
			b.WriteByte('(')
			for i := int32(0); i < sh.children; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				rec()
			}
			b.WriteByte(')')
		}
	}
	rec()
	return b.String()
}

// histogramCounts returns n zero counts for step 4d's histograms, which are
// part of the result. When the caller keeps freed mappings (hugemem.Keep:
// wap5 nest, where the input the trace was read from is one, touched and
// unused by now) they go into one of those, cleared, rather than into
// fresh huge pages (2.6 MB on mt-long: two faulted and zeroed by the
// kernel); that mapping is then never given back, the result living to the
// process's end.
func histogramCounts(n int) []float64 {
	if b, _, ok := hugemem.Spare(8 * n); ok {
		c := unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(b))), n)
		clear(c)
		return c[:n:n]
	}
	return hugemem.MakeSmall[float64](n, n)
}
