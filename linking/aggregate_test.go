package linking

import (
	"fmt"
	"maps"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"wap5/trace"
)

// aggregateRef is aggregate as it was before patterns were counted by
// value, gathered in batches and reused (main 21f7a98): the reference the
// faster one must equal exactly.
func (l *linker) aggregateRef(in *instances, res *Result) error {
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

// copyInstances is a deep copy of in (aggregate rewrites its parents).
func copyInstances(in *instances) *instances {
	return &instances{start: slices.Clone(in.start), msgs: slices.Clone(in.msgs), par: slices.Clone(in.par), prob: slices.Clone(in.prob)}
}

func clonePat(p *trace.Pattern) *trace.Pattern {
	q := *p
	q.Metrics = maps.Clone(p.Metrics)
	var step func(s *trace.Step) *trace.Step
	step = func(s *trace.Step) *trace.Step {
		if s == nil {
			return nil
		}
		c := *s
		if s.Children != nil {
			c.Children = make([]*trace.Step, len(s.Children))
			for i, k := range s.Children {
				c.Children[i] = step(k)
			}
		}
		return &c
	}
	q.Root = step(p.Root)
	return &q
}

// TestAggregateReference: aggregate gives exactly what aggregateRef gives
// (patterns, their steps, delays and metrics to the bit, instances and
// their order, warnings), with and without Top, instances, OnPattern,
// ReusePatterns and Shown, on batches of every size.
func TestAggregateReference(t *testing.T) {
	defer func(g int) { gatherMessages = g }(gatherMessages)
	quiet := simulate(simConfig{clients: 6, perClient: 80, think: gauss{ms(60), ms(30)}, net: gauss{ms(0.3), ms(0.1)},
		tracelets: multiTier(5, true), seed: 3, clientName: "CLIENT"})
	busy := simulate(simConfig{clients: 12, perClient: 100, think: gauss{ms(8), ms(6)}, net: gauss{ms(0.5), ms(0.4)},
		tracelets: multiTier(4, false), seed: 11, clientName: "CLIENT"})
	for _, c := range []struct {
		tr     *trace.Trace
		method string
	}{{quiet, MethodJoint}, {quiet, MethodWAP5}, {busy, MethodJoint}, {busy, MethodWAP5}} {
		tr, method := c.tr, c.method
		tr.Sort()
		o := Options{Method: method, Window: 300 * time.Millisecond, HistTop: 2}.Defaults()
		l := newLinker(tr, o, nil)
		var in *instances
		if method == MethodWAP5 {
			in, _, _ = l.runWAP5()
		} else {
			in, _, _ = l.runJoint()
		}
		for _, top := range []int{0, 1, 3, 1000} {
			for _, noInst := range []bool{false, true} {
				for _, gm := range []int{1, 7, 4096} {
					gatherMessages = gm
					l.o.Top, l.o.NoInstances = top, noInst
					l.o.OnPattern, l.o.ReusePatterns, l.o.Shown = nil, false, 0
					want := &Result{}
					if err := l.aggregateRef(copyInstances(in), want); err != nil {
						t.Fatal(err)
					}
					if top == 0 && noInst && gm == 1 {
						t.Logf("%s: %d patterns, %d instances", method, len(want.Patterns), in.len())
					}
					if top == 0 && len(want.Patterns) < 4 {
						t.Fatalf("%s: %d patterns, want several", method, len(want.Patterns))
					}
					got := &Result{}
					if err := l.aggregate(copyInstances(in), got); err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got.Paths, want.Paths) {
						t.Fatalf("%s top %d noInst %v batch %d: paths differ", method, top, noInst, gm)
					}
					// Handed over, reused: copies equal the patterns; with
					// Shown, the unshown ones carry their counts only.
					for _, shown := range []int{0, 2} {
						var pats []*trace.Pattern
						l.o.OnPattern = func(p *trace.Pattern) error {
							pats = append(pats, clonePat(p))
							return nil
						}
						l.o.ReusePatterns, l.o.Shown = true, shown
						got := &Result{}
						if err := l.aggregate(copyInstances(in), got); err != nil {
							t.Fatal(err)
						}
						wantPats := want.Patterns
						if shown > 0 && noInst {
							wantPats = slices.Clone(wantPats)
							for r := shown; r < len(wantPats); r++ {
								p := wantPats[r]
								wantPats[r] = &trace.Pattern{Rank: p.Rank, Count: p.Count, Expected: p.Expected, MaxProb: p.MaxProb}
							}
						}
						if !reflect.DeepEqual(pats, wantPats) || !reflect.DeepEqual(got.Instances, want.Instances) {
							t.Fatalf("%s top %d noInst %v batch %d shown %d: handed-over patterns differ", method, top, noInst, gm, shown)
						}
					}
				}
			}
		}
	}
}

// TestRankPatterns: the top patterns found by the heap are the first of
// the full ranking, ties in expected and count included.
// patSlice is a slice's patterns as patCounts.at gives them.
func patSlice(pats []patCount) (int, func(int32) *patCount) {
	return len(pats), func(i int32) *patCount { return &pats[i] }
}

func TestRankPatterns(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	// expected counts: few values (ties), values a few units in the last
	// place apart (equal keys above the position bits), random ones, zeros,
	// and in some sets a negative, −0 or NaN (sortByRank's fallback).
	expected := func(set int) float64 {
		switch rng.Intn(6) {
		case 0:
			return float64(rng.Intn(20)) / 4
		case 1:
			return math.Nextafter(0.75, float64(1+rng.Intn(3))) + float64(rng.Intn(3))*math.Nextafter(0.75, 1)
		case 2:
			return math.Float64frombits(math.Float64bits(0.9795403480529785) + uint64(rng.Intn(1<<22)))
		case 3:
			if set%4 == 3 {
				return []float64{-1, math.Copysign(0, -1), math.NaN()}[rng.Intn(3)]
			}
			return 0
		default:
			return rng.ExpFloat64() * 100
		}
	}
	for set, n := range []int{0, 1, 2, 5, 100, 3000, 3000, 3000, 3000, 70000} {
		pats := make([]patCount, n)
		nan := false
		for i := range pats {
			pats[i] = patCount{hash: rng.Uint64(), expected: expected(set), count: int32(rng.Intn(5))}
			nan = nan || math.IsNaN(pats[i].expected)
		}
		at := func(r []int32) []patCount {
			ps := make([]patCount, len(r))
			for k, i := range r {
				ps[k] = pats[i]
			}
			return ps
		}
		n, get := patSlice(pats)
		all := at(rankPatterns(n, get, 0, nil))
		for i := 1; i < len(all) && !nan; i++ {
			if byRank(&all[i-1], &all[i]) >= 0 {
				t.Fatalf("n %d: ranks %d and %d out of order", n, i-1, i)
			}
		}
		want := slices.Clone(pats)
		slices.SortFunc(want, func(p, q patCount) int { return byRank(&p, &q) })
		if !slices.EqualFunc(all, want, func(p, q patCount) bool { return p.hash == q.hash }) {
			t.Fatalf("set %d n %d: not the order slices.SortFunc gives", set, n)
		}
		if nan { // no order: byRank is not one with NaN
			continue
		}
		for _, top := range []int{1, 2, 3, 10, 99, 100, 101, 749, 750, 751, 2999, 5000} {
			got := at(rankPatterns(n, get, top, nil))
			if want := all[:min(top, n)]; !slices.Equal(got, want) {
				t.Fatalf("n %d top %d: %d patterns, not the first of the ranking", n, top, len(got))
			}
		}
	}
}

// TestGatherPlacesCollision: an instance whose size differs from the
// first of its rank (two shapes sharing a pattern hash) is left out and
// counted, never a panic; the rank's places count only the others.
func TestGatherPlacesCollision(t *testing.T) {
	var in instances
	in.add([]int32{0, 1}, []int32{-1, 0}, 1)       // rank 0, 2 messages
	in.add([]int32{2, 3, 4}, []int32{-1, 0, 1}, 1) // rank 0 too, 3 messages: collides
	in.add([]int32{5, 6}, []int32{-1, 0}, 1)       // rank 0, 2 messages
	in.add([]int32{7}, []int32{-1}, 1)             // rank 1
	instRank := []int32{0, 0, 0, 1}
	var g gather
	if got := g.places(&in, instRank, 2); got != 1 {
		t.Fatalf("places left out %d instances, want 1", got)
	}
	if instRank[1] != -1 {
		t.Errorf("the colliding instance keeps rank %d, want -1", instRank[1])
	}
	if g.byRank[1] != 2 || g.byRank[2] != 3 {
		t.Errorf("instances by rank %v, want rank 0: 2, rank 1: 1", g.byRank)
	}
	if g.msgAt[1] != 4 || g.msgAt[2] != 5 {
		t.Errorf("messages by rank %v, want rank 0: 4, rank 1: 1", g.msgAt)
	}
}

// TestMaxFloat: maxFloat is math.Max, bit for bit, on its special cases
// and ordinary values.
func TestMaxFloat(t *testing.T) {
	inf, nan, nz := math.Inf(1), math.NaN(), math.Copysign(0, -1)
	vals := []float64{0, nz, 1, -1, 0.5, 1e-300, inf, -inf, nan}
	for _, x := range vals {
		for _, y := range vals {
			if got, want := maxFloat(x, y), math.Max(x, y); math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("maxFloat(%v, %v) = %v (bits %x), math.Max: %v (bits %x)", x, y, got, math.Float64bits(got), want, math.Float64bits(want))
			}
		}
	}
}

// TestChainHash: chainHash takes exactly the chains (each message the only
// child of the one before), and gives them the hash and the order (their
// own) that the general ordering gives them.
func TestChainHash(t *testing.T) {
	// Messages between nodes 0–3; labels are the nodes.
	ms := []trace.Message{{Src: 0, Dst: 1}, {Src: 1, Dst: 2}, {Src: 2, Dst: 1}, {Src: 1, Dst: 0}, {Src: 1, Dst: 3}, {Src: 3, Dst: 1}}
	for i := range ms {
		ms[i].Send, ms[i].Recv = int64(10*i), int64(10*i+1)
	}
	labels := []int32{0, 1, 2, 3}
	view := &msgView{ms: ms}
	for _, c := range []struct {
		name      string
		msgs, par []int32
		chain     bool
	}{
		{"root alone", []int32{0}, []int32{-1}, true},
		{"request, reply", []int32{0, 3}, []int32{-1, 0}, true},
		{"request, call, return, reply", []int32{0, 1, 2, 3}, []int32{-1, 0, 1, 2}, true},
		{"two calls", []int32{0, 1, 4, 2, 5}, []int32{-1, 0, 0, 1, 2}, false},
		{"fan-out at the root", []int32{0, 1, 3}, []int32{-1, 0, 0}, false},
		{"the last two siblings", []int32{0, 1, 2, 5}, []int32{-1, 0, 1, 1}, false},
	} {
		h, ok := chainHash(view, labels, c.msgs, c.par)
		if ok != c.chain {
			t.Errorf("%s: chain %v, want %v", c.name, ok, c.chain)
			continue
		}
		if !ok {
			continue
		}
		a := newAggregator(0)
		wantH, wantOut := a.orderTree(view, labels, c.msgs, c.par, nil)
		if h != wantH || !slices.Equal(wantOut, c.msgs) || !slices.Equal(a.cpar, c.par) {
			t.Errorf("%s: hash %x, want %x; the general order %v (parents %v), want %v (%v)", c.name, h, wantH, wantOut, a.cpar, c.msgs, c.par)
		}
	}
}

// TestChainHashEdges: over a view of unmade messages (their edges), the
// hash by edge (chainHashEdges, edgeLeaves) is chainHash's, chains and not
// chains alike, with labels that merge nodes (clients) and edges in an
// order of their own.
func TestChainHashEdges(t *testing.T) {
	// Messages' nodes (src, dst), by edge: edge e joins edgeSrc[e] and
	// edgeDst[e]; labels merge nodes 3 and 4.
	edgeSrc := []trace.NodeID{1, 3, 0, 2, 1, 4, 1}
	edgeDst := []trace.NodeID{2, 1, 1, 1, 0, 1, 4}
	labels := []int32{0, 1, 2, 3, 3}
	msgEdge := []int32{2, 0, 3, 4, 6, 5, 1, 6}
	hot := make([]msgHot, len(msgEdge))
	for i, e := range msgEdge {
		hot[i] = msgHot{send: int64(10 * i), recv: int64(10*i + 1), edge: e}
	}
	view := &msgView{hot: hot, kinds: make([]trace.Kind, len(hot)), edgeSrc: edgeSrc, edgeDst: edgeDst}
	leaf := edgeLeaves(view, labels, nil)
	if len(leaf) != len(edgeSrc) {
		t.Fatalf("%d leaves, want one an edge (%d)", len(leaf), len(edgeSrc))
	}
	if edgeLeaves(&msgView{ms: []trace.Message{{}}}, labels, nil) != nil {
		t.Errorf("edgeLeaves of a view of whole messages: not nil")
	}
	for _, c := range []struct {
		name      string
		msgs, par []int32
	}{
		{"root alone", []int32{0}, []int32{-1}},
		{"request, reply", []int32{0, 3}, []int32{-1, 0}},
		{"request, call, return, reply", []int32{0, 1, 2, 3}, []int32{-1, 0, 1, 2}},
		{"through the merged nodes", []int32{0, 4, 5, 6, 7}, []int32{-1, 0, 1, 2, 3}},
		{"two calls", []int32{0, 1, 4, 2, 5}, []int32{-1, 0, 0, 1, 2}},
		{"fan-out at the root", []int32{0, 1, 3}, []int32{-1, 0, 0}},
	} {
		h, ok := chainHashEdges(view, leaf, c.msgs, c.par)
		wantH, wantOK := chainHash(view, labels, c.msgs, c.par)
		if h != wantH || ok != wantOK {
			t.Errorf("%s: hash %x, chain %v; chainHash: %x, %v", c.name, h, ok, wantH, wantOK)
		}
	}
}

// TestSortRunByHash: a run of patterns with the same expected count and
// count comes out in byRank's order (their hashes'), whatever the
// hashes' top bits (buckets of one, of many, all in one); a run that is
// not uniform or is short is left to the comparison sort; and rankPatterns
// over patterns seen once, twice … (expected count = count, most of a
// large trace's) gives slices.SortFunc's order.
func TestSortRunByHash(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	hashes := map[string]func() uint64{
		"random":          rng.Uint64,
		"small":           func() uint64 { return rng.Uint64() >> 40 },
		"few top bits":    func() uint64 { return uint64(rng.Intn(4))<<62 | rng.Uint64()>>30 },
		"clustered":       func() uint64 { return uint64(rng.Intn(50))<<52 | rng.Uint64()>>12 },
		"top bits varied": func() uint64 { return rng.Uint64()<<20 | uint64(rng.Intn(3)) },
	}
	for _, c := range []struct {
		name    string
		n       int
		hash    string
		odd     int // the place of a pattern with another count, or −1
		wantUse bool
	}{
		{"short", 63, "random", -1, false},
		{"64", 64, "random", -1, true},
		{"1000 random", 1000, "random", -1, true},
		{"70000 random", 70000, "random", -1, true},
		{"all in one bucket", 5000, "small", -1, true},
		{"four buckets", 5000, "few top bits", -1, true},
		{"clustered", 20000, "clustered", -1, true},
		{"low bits", 3000, "top bits varied", -1, true},
		{"one count differs, first", 1000, "random", 0, false},
		{"one count differs, last", 1000, "random", 999, false},
	} {
		seen := map[uint64]bool{}
		run := make([]rankRec, c.n)
		for k := range run {
			h := hashes[c.hash]()
			for seen[h] {
				h = hashes[c.hash]()
			}
			seen[h] = true
			run[k] = rankRec{expected: 1, hash: h, count: 1, pos: int32(1000 + 3*k)}
		}
		if c.odd >= 0 {
			run[c.odd].count = 2
		}
		want := slices.Clone(run)
		slices.SortFunc(want, func(x, y rankRec) int { return cmpRank(x.expected, y.expected, x.count, y.count, x.hash, y.hash) })
		r := make([]int32, c.n)
		if got := sortRunByHash(slices.Clone(run), r, nil); got != c.wantUse {
			t.Errorf("%s: sorted %v, want %v", c.name, got, c.wantUse)
			continue
		}
		if !c.wantUse {
			continue
		}
		for k := range want {
			if r[k] != want[k].pos {
				t.Errorf("%s: place %d holds %d, want %d", c.name, k, r[k], want[k].pos)
				break
			}
		}
	}
	// Patterns seen k times with probability 1 (expected k, count k),
	// most of them once, and a few others.
	for _, n := range []int{100, 5000, 80000} {
		pats := make([]patCount, n)
		for i := range pats {
			k := 1
			if x := rng.Intn(10); x >= 6 {
				k = x - 4
			}
			pats[i] = patCount{hash: rng.Uint64(), expected: float64(k), count: int32(k)}
			if rng.Intn(20) == 0 {
				pats[i].expected, pats[i].count = rng.Float64()*3, int32(1+rng.Intn(3))
			}
		}
		n, get := patSlice(pats)
		got := rankPatterns(n, get, 0, nil)
		want := make([]int32, n)
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortFunc(want, func(x, y int32) int { return byRank(&pats[x], &pats[y]) })
		if !slices.Equal(got, want) {
			t.Errorf("n %d: not the order slices.SortFunc gives", n)
		}
	}
}
