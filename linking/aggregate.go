package linking

import (
	"fmt"
	"math"
	"slices"
	"sort"

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
}

func newPatAcc(n int, hist bool) *patAcc {
	a := &patAcc{net: make([]trace.Accumulator, n), wait: make([]trace.Accumulator, n),
		lat: make([]trace.Accumulator, n), off: make([]trace.Accumulator, n)}
	if hist {
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
	return a
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
}

func newAggregator(histTop int) *aggregator {
	return &aggregator{nameIdx: map[string]int32{}, byHash: newPairTable(1024), histTop: histTop}
}

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
	n := len(msgs)
	a.hash = slices.Grow(a.hash[:0], n)[:n]
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
	hash := a.hash
	// Subtree hashes bottom-up (parents precede children).
	for j := n - 1; j >= 0; j-- {
		m := &ms[msgs[j]]
		h := mix(uint64(uint32(labels[m.Src]))<<32 | uint64(uint32(labels[m.Dst])))
		ks := kids[j]
		if len(ks) > 1 {
			slices.SortFunc(ks, func(x, y int32) int {
				if hash[x] != hash[y] {
					if hash[x] < hash[y] {
						return -1
					}
					return 1
				}
				return cmpTime(ms[msgs[x]].Time(), ms[msgs[y]].Time())
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
	pi, ok := a.byHash.get(hash[0])
	if !ok {
		pi = int32(len(a.pats))
		a.pats = append(a.pats, &pattern{hash: hash[0], idx: pi, first: -1})
		a.byHash.put(hash[0], pi)
	}
	if p := a.pats[pi]; shape && p.par == nil {
		p.par, p.closer = slices.Clone(a.cpar), make([]int32, n)
		for j, mi := range out {
			m := &ms[mi]
			p.from = append(p.from, labels[m.Src])
			p.to = append(p.to, labels[m.Dst])
			p.kind = append(p.kind, m.Kind)
			p.closer[j] = -1
		}
		for j := 1; j < n; j++ {
			if pj := p.par[j]; p.to[j] == p.from[pj] {
				p.closer[pj] = int32(j)
			}
		}
	}
	return a.pats[pi], out
}

// accumulate adds one instance (messages in canonical order) with weight w
// to the pattern's delays (step 4).
func (a *aggregator) accumulate(p *pattern, ms []trace.Message, o []int32, w float64) {
	acc := p.acc
	for j, mi := range o {
		m := &ms[mi]
		if m.Send != trace.Unknown && m.Recv != trace.Unknown {
			d := a.clock.Reference(m.Dst, m.Recv) - a.clock.Reference(m.Src, m.Send)
			acc.net[j].Add(float64(d)/1e9, w)
		}
		if c := p.closer[j]; c >= 0 {
			if ret := &ms[o[c]]; m.Send != trace.Unknown && ret.Recv != trace.Unknown {
				acc.lat[j].Add(float64(ret.Recv-m.Send)/1e9, w)
			}
		}
		pj := p.par[j]
		if pj < 0 {
			continue
		}
		pm := &ms[o[pj]]
		if m.Send != trace.Unknown && pm.Recv != trace.Unknown {
			acc.wait[j].Add(float64(m.Send-pm.Recv)/1e9, w)
		}
		acc.off[j].Add(float64(m.Time()-pm.Time())/1e9, w)
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

// aggregate builds the result paths (res.Paths) from the instances of one
// linker, the linker's and the trace's warnings first; with
// Options.OnPattern, it hands each pattern over as it is built and keeps
// none (the error is OnPattern's).
func (l *linker) aggregate(in *instances, res *Result) error {
	a := newAggregator(l.o.HistTop)
	a.clock = trace.NewClockMap(l.t)
	labels := a.linkerLabels(l)
	order := make([]int32, len(in.msgs))
	instPat := make([]int32, in.len()) // pattern of every instance
	for i := 0; i < in.len(); i++ {
		msgs, par := in.get(i)
		p, _ := a.canon(l.msgs, labels, msgs, par, order[in.start[i]:in.start[i]], false)
		a.add(p, in.prob[i])
		if p.first < 0 {
			p.first = int32(i)
		}
		instPat[i] = p.idx
	}
	ranked := a.ranked()
	built := len(ranked)
	if l.o.Top > 0 && l.o.Top < built {
		built = l.o.Top
	}
	// The instances of the built patterns, grouped by rank (CSR).
	rank := make([]int32, len(a.pats))
	for i := range rank {
		rank[i] = -1
	}
	for r, p := range ranked[:built] {
		rank[p.idx] = int32(r)
	}
	scratch := &patAcc{}
	byRank := make([]int32, built+1)
	for _, pi := range instPat {
		if r := rank[pi]; r >= 0 {
			byRank[r+1]++
		}
	}
	for r := 0; r < built; r++ {
		byRank[r+1] += byRank[r]
	}
	insts := make([]int32, byRank[built])
	fill := slices.Clone(byRank[:built])
	for i, pi := range instPat {
		if r := rank[pi]; r >= 0 {
			insts[fill[r]] = int32(i)
			fill[r]++
		}
	}
	out := trace.Paths{Algorithm: "linking"}
	if l.o.OnPattern == nil {
		out.Patterns = make([]*trace.Pattern, 0, built)
	}
	out.Warnings = append(append([]string(nil), l.t.Warnings...), l.warnings...)
	if built < len(ranked) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("linking: %d more patterns not built (top %d)", len(ranked)-built, l.o.Top))
	}
	if l.o.OnPattern != nil && l.o.BeforePatterns != nil {
		res.Paths = out
		l.o.BeforePatterns(res)
	}
	for r, p := range ranked[:built] {
		msgs, par := in.get(int(p.first))
		a.canon(l.msgs, labels, msgs, par, order[in.start[p.first]:in.start[p.first]], true)
		// The delays' accumulators: new ones where they fill histograms
		// (the steps' Stats keep them), else the previous pattern's,
		// cleared.
		if r < l.o.HistTop {
			p.acc = newPatAcc(len(p.par), true)
		} else {
			p.acc = scratch.reset(len(p.par))
		}
		pinsts := insts[byRank[r]:byRank[r+1]]
		for _, ii := range pinsts {
			a.accumulate(p, l.msgs, order[in.start[ii]:in.start[ii+1]], in.prob[ii])
		}
		tp, perm := a.build(p)
		tp.Rank = r + 1
		// The pattern's shape and delays are no longer needed (its
		// instances keep only its rank).
		p.acc, p.par, p.from, p.to, p.kind, p.closer = nil, nil, nil, nil, nil, nil
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
		for _, ii := range pinsts {
			o := order[in.start[ii]:in.start[ii+1]]
			if perm != nil {
				for k, src := range perm {
					tmp[k] = o[src]
				}
				copy(o, tmp)
			}
			out.Instances = append(out.Instances, trace.Instance{Pattern: r + 1, Prob: in.prob[ii], Messages: o})
		}
	}
	sort.SliceStable(out.Instances, func(x, y int) bool {
		return out.Instances[x].Messages[0] < out.Instances[y].Messages[0]
	})
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
func (a *aggregator) build(p *pattern) (*trace.Pattern, []int32) {
	n := len(p.par)
	steps := make([]trace.Step, n)
	off := make([]float64, n)
	kids := make([][]int32, n)
	for j := 0; j < n; j++ {
		steps[j] = trace.Step{From: a.names[p.from[j]], To: a.names[p.to[j]], Kind: p.kind[j], Count: p.count,
			Net: p.acc.net[j].Stats(), Wait: p.acc.wait[j].Stats(), Latency: p.acc.lat[j].Stats()}
		off[j] = p.acc.off[j].Stats().Mean
		if j > 0 {
			kids[p.par[j]] = append(kids[p.par[j]], int32(j))
		}
	}
	changed := false
	for j := range kids {
		ks := kids[j]
		less := func(x, y int) bool { return off[ks[x]] < off[ks[y]] }
		if !sort.SliceIsSorted(ks, less) {
			sort.SliceStable(ks, less)
			changed = true
		}
		if len(ks) > 0 {
			steps[j].Children = make([]*trace.Step, len(ks))
			for c, k := range ks {
				steps[j].Children[c] = &steps[k]
			}
		}
	}
	var perm []int32
	depth := 0
	var walk func(j int32, d int)
	walk = func(j int32, d int) {
		perm = append(perm, j)
		depth = max(depth, d+1)
		for _, k := range kids[j] {
			walk(k, d+1)
		}
	}
	walk(0, 0)
	if !changed {
		perm = nil
	}
	tp := &trace.Pattern{Count: p.count, Expected: p.expected, MaxProb: p.maxProb, Root: &steps[0],
		Metrics: map[string]float64{
			"mean_prob":           p.expected / float64(p.count),
			"expected_sqrt_count": p.expected / math.Sqrt(float64(p.count)),
			"depth":               float64(depth),
			"messages":            float64(n),
		}}
	return tp, perm
}
