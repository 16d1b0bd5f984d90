package skew

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"wap5/trace"
)

// Options tune Estimate. The zero value is the default.
type Options struct {
	// Reference names the node whose clock the others are measured against;
	// "" picks the node with the most two-way samples.
	Reference string
	// NoDrift estimates constant offsets only.
	NoDrift bool
	// NoSteps turns clock-step detection off.
	NoSteps bool
	// MinStep is the smallest clock step detected, ns (default 1 ms).
	MinStep int64
	// MinDriftSpan is the shortest series whose slope counts towards drift,
	// ns (default 1 s); longer ones are weighted by their slopes' standard
	// errors.
	MinDriftSpan int64
	// Asymmetry is the prior spread of the delay asymmetry as a fraction of
	// half the minimum round trip (default 0.1); it weights pairs with short
	// round trips above long ones.
	Asymmetry float64
}

func (o Options) withDefaults() Options {
	if o.MinStep <= 0 {
		o.MinStep = 1_000_000
	}
	if o.MinDriftSpan <= 0 {
		o.MinDriftSpan = 1_000_000_000
	}
	if o.Asymmetry <= 0 {
		o.Asymmetry = 0.01
	}
	return o
}

// Status says what could be estimated for a node.
type Status uint8

const (
	NoClock       Status = iota // no timestamp of this node is known (untraced)
	Reference                   // the reference node
	Corrected                   // offset (and drift) estimated
	Uncorrectable               // timestamps but no two-way path to the reference
)

func (s Status) String() string {
	return [...]string{"no-clock", "reference", "corrected", "uncorrectable"}[s]
}

// NodeEstimate is one node's clock relative to the reference: the node
// reads reference + Offset + DriftPPM·1e-6·(t − T0) at reference time t.
type NodeEstimate struct {
	Node     trace.NodeID
	Name     string
	Status   Status
	Offset   int64   // ns, at the result's T0 (in the clock segment holding T0)
	DriftPPM float64 // ppm
	// Error bounds |estimated − true offset|, ns, assuming only that one-way
	// delays are not negative, so it covers any delay asymmetry: at T0, plus
	// three standard errors of the drift carried to the ends of the node's
	// activity.
	Error int64
	// FitError is the standard error when delays are symmetric, ns.
	FitError int64
	Samples  int // two-way samples (messages) on the pairs used
	// Segments are the corrections per clock segment (several after steps).
	Segments []trace.Correction
}

// PairEstimate is the relative offset of one pair, b's clock − a's clock,
// from one clock segment of each.
type PairEstimate struct {
	A, B     trace.NodeID
	At       int64   // a's clock, ns (middle of the series)
	Offset   int64   // ns, θ_b − θ_a at At, under the symmetric-delay assumption
	DriftPPM float64 // ppm, rate of b's clock relative to a's (0 when the span is too short)
	MinRTT   int64   // ns, the two lower envelopes' sum: asymmetry is bounded by half of it
	Noise    int64   // ns, typical height of window minima above the envelope
	Samples  [2]int  // a→b and b→a
	Weight   float64 // final robustness weight (0..1): small when the graph disagrees
}

// Step is a clock step attributed to a node.
type Step struct {
	Node trace.NodeID
	At   int64 // node's own clock, ns
	Jump int64 // ns, change of the node's offset
}

// Result is the outcome of Estimate.
type Result struct {
	Reference trace.NodeID
	T0        int64 // reference time the offsets refer to (middle of the reference's activity)
	Nodes     []NodeEstimate
	Pairs     []PairEstimate
	Steps     []Step
	Warnings  []string
}

func (r *Result) warnf(format string, a ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, a...))
}

// Estimate estimates every node's clock offset and drift relative to a
// reference node from the messages' send and receive timestamps; see the
// package comment for the method.
func Estimate(t *trace.Trace, opts Options) (*Result, error) {
	acc := NewAccumulator(len(t.Nodes))
	acc.AddAll(t.Messages)
	return acc.Estimate(t, opts)
}

// EstimateEnvelopes is Estimate for a trace whose messages are given as
// their envelopes (trace.ReadFileEnvelopes; t supplies the tables).
func EstimateEnvelopes(t *trace.Trace, env []trace.Envelope, opts Options) (*Result, error) {
	acc := NewAccumulator(len(t.Nodes))
	acc.AddAllEnvelopes(env)
	return acc.Estimate(t, opts)
}

// piece is one pair's series between clock steps (step 3d) with its fit.
type piece struct {
	pair    int
	sa, sb  int // clock segment of a and b
	xm      int64
	delta   float64 // Δ = θ_b − θ_a at xm (estimator chosen by fitPiece)
	slope   float64 // dΔ/dx
	slopeSE float64
	rtt     float64 // sum of the two lower envelopes at xm: the minimum round trip
	// Δ is certainly within [delta−down, delta+up]: one-way delays are ≥ 0.
	down, up float64
	noise    float64 // standard error of delta under symmetric delays
	quantile float64 // the delay quantile the estimate rests on (0: envelope)
	span     float64
	n        [2]int
}

type nodeStep struct {
	t    int64 // node-local ns
	unc  float64
	jump float64
}

// Estimate runs steps 2–5 on the series collected so far; t supplies the
// node table.
func (acc *Accumulator) Estimate(t *trace.Trace, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	nn := len(t.Nodes)
	res := &Result{Reference: -1}
	for _, c := range t.Clock {
		if c.Applied {
			res.warnf("trace already corrected (clock corrections applied): estimates are residual offsets")
			break
		}
	}

	// Step 2: sort each direction; keep pairs with traffic both ways.
	var pairs []*series
	for _, s := range acc.pairs {
		if len(s.dir[0]) == 0 || len(s.dir[1]) == 0 {
			continue
		}
		sortPoints(s.dir[0])
		sortPoints(s.dir[1])
		pairs = append(pairs, s)
	}
	var buf []point
	var scratch []float64

	// Reference: named, or the node with the most two-way samples.
	samples := make([]int, nn)
	for _, s := range pairs {
		samples[s.a] += len(s.dir[0]) + len(s.dir[1])
		samples[s.b] += len(s.dir[0]) + len(s.dir[1])
	}
	ref := trace.NodeID(-1)
	if opts.Reference != "" {
		id, ok := t.LookupNode(opts.Reference)
		if !ok {
			return nil, fmt.Errorf("reference node %q is not in the trace", opts.Reference)
		}
		if samples[id] == 0 {
			return nil, fmt.Errorf("reference node %q exchanges no messages in both directions with any node", opts.Reference)
		}
		ref = id
	} else {
		for n := range samples {
			if samples[n] > 0 && (ref < 0 || samples[n] > samples[ref]) {
				ref = trace.NodeID(n)
			}
		}
	}
	if ref < 0 {
		return nil, errors.New("no pair of nodes exchanges messages in both directions with both timestamps known: clocks cannot be compared")
	}
	res.Reference = ref
	if int(ref) < len(acc.lo) && acc.lo[ref] <= acc.hi[ref] {
		res.T0 = acc.lo[ref] + (acc.hi[ref]-acc.lo[ref])/2
	}

	// Coarse per-pair fit (whole series): Δc(x) places b's steps on a's axis.
	type coarse struct {
		l0, l1   line
		xlo, xhi float64
	}
	cs := make([]coarse, len(pairs))
	for k, s := range pairs {
		cs[k].l0, cs[k].l1 = fitLine(s.dir[0], &buf), fitLine(s.dir[1], &buf)
		cs[k].xlo = math.Min(s.dir[0][0].x, s.dir[1][0].x)
		cs[k].xhi = math.Max(s.dir[0][len(s.dir[0])-1].x, s.dir[1][len(s.dir[1])-1].x)
	}
	deltaC := func(k int, x float64) float64 { return (cs[k].l0.at(x) - cs[k].l1.at(x)) / 2 }
	rttC := func(k int, x float64) float64 { return math.Max(0, cs[k].l0.at(x)+cs[k].l1.at(x)) }

	// Step 3: clock steps per pair, attributed to nodes.
	nsteps := make([][]nodeStep, nn)
	if !opts.NoSteps {
		acc.attributeSteps(t, res, pairs, deltaC, float64(opts.MinStep), nsteps)
	}

	// Step 3d: cut each pair at its nodes' steps and fit every piece.
	var pcs []piece
	for k, s := range pairs {
		type cut struct {
			x, guard float64
			b        bool
		}
		var cuts []cut
		for _, st := range nsteps[s.a] {
			cuts = append(cuts, cut{x: float64(st.t - s.base), guard: st.unc + rttC(k, float64(st.t-s.base))})
		}
		for _, st := range nsteps[s.b] {
			x := float64(st.t - s.base)
			x -= deltaC(k, x)
			cuts = append(cuts, cut{x: x, guard: st.unc + math.Abs(st.jump) + 2*rttC(k, x), b: true})
		}
		sort.Slice(cuts, func(i, j int) bool { return cuts[i].x < cuts[j].x })
		lo, sa, sb := math.Inf(-1), 0, 0
		// segments before the data starts still count
		for i := 0; i <= len(cuts); i++ {
			hi := math.Inf(1)
			if i < len(cuts) {
				hi = cuts[i].x - cuts[i].guard
			}
			if p, ok := fitPiece(s, lo, hi, &buf, &scratch); ok {
				p.pair, p.sa, p.sb = k, sa, sb
				pcs = append(pcs, p)
			}
			if i < len(cuts) {
				lo = cuts[i].x + cuts[i].guard
				if cuts[i].b {
					sb++
				} else {
					sa++
				}
			}
		}
	}

	// Unknowns: one offset per (node, clock segment) and one drift per node,
	// in the reference's connected component.
	comp := newUnion()
	key := func(n trace.NodeID, s int) uint64 { return uint64(n)<<32 | uint64(s) }
	for _, p := range pcs {
		s := pairs[p.pair]
		comp.join(key(s.a, p.sa), key(s.b, p.sb))
	}
	refKey := key(ref, 0)
	vars := map[uint64]int{refKey: -1}
	var varKeys []uint64
	for _, p := range pcs {
		s := pairs[p.pair]
		for _, k := range [2]uint64{key(s.a, p.sa), key(s.b, p.sb)} {
			if _, ok := vars[k]; !ok && comp.find(k) == comp.find(refKey) {
				vars[k] = len(varKeys)
				varKeys = append(varKeys, k)
			}
		}
	}
	nodeVar := make([]int, nn) // drift unknown per node, -1 reference, -2 none
	for i := range nodeVar {
		nodeVar[i] = -2
	}
	nodeVar[ref] = -1
	nDrift := 0
	for _, k := range varKeys {
		if n := trace.NodeID(k >> 32); nodeVar[n] == -2 {
			nodeVar[n] = nDrift
			nDrift++
		}
	}
	inComp := func(p piece) (int, int, bool) {
		s := pairs[p.pair]
		i, ok1 := vars[key(s.a, p.sa)]
		j, ok2 := vars[key(s.b, p.sb)]
		return i, j, ok1 && ok2
	}

	// Step 4a: drift, by weighted least squares over the pairs' slopes.
	drift := make([]float64, nDrift)
	driftVar := make([]float64, nDrift)
	if !opts.NoDrift && nDrift > 0 {
		// A slope is per unit of a's clock; per unit of reference time it is
		// (1 + r_a) times that, so a second round uses the first's r_a.
		for round := 0; round < 2; round++ {
			var obs []diff
			for _, p := range pcs {
				if _, _, ok := inComp(p); !ok || p.span < float64(opts.MinDriftSpan) || math.IsInf(p.slopeSE, 1) {
					continue
				}
				s := pairs[p.pair]
				ra := 0.0
				if v := nodeVar[s.a]; v >= 0 {
					ra = drift[v]
				}
				v := p.slopeSE*p.slopeSE + 1e-18 // floor: 0.001 ppm
				obs = append(obs, diff{i: nodeVar[s.a], j: nodeVar[s.b], y: p.slope * (1 + ra), v: v, w: 1})
			}
			// prior: quartz clocks are within ~100 ppm of true time, so two
			// of them within ~200 ppm of each other; a drift the samples
			// cannot pin down shrinks towards zero
			sol, err := solveGraph(nDrift, obs, 4e-8)
			if err != nil {
				return nil, err
			}
			copy(drift, sol.x)
			copy(driftVar, sol.variance)
		}
	}
	rOf := func(n trace.NodeID) (float64, float64) {
		if v := nodeVar[n]; v >= 0 {
			return drift[v], driftVar[v]
		}
		return 0, 0
	}

	// Step 4b: offsets, by robust weighted least squares over the pieces. A
	// piece's Δ is at a time on a's clock; converting it to reference time
	// needs a's offset, so iterate (the error shrinks by the drift, ~1e-4,
	// each round).
	nv := len(varKeys)
	off := make([]float64, nv)
	var obs []diff
	var obsPiece []int
	var sol *solution
	for round := 0; round < 3; round++ {
		obs, obsPiece = obs[:0], obsPiece[:0]
		for pi, p := range pcs {
			i, j, ok := inComp(p)
			if !ok {
				continue
			}
			s := pairs[p.pair]
			ra, va := rOf(s.a)
			rb, vb := rOf(s.b)
			tp := float64(s.base+p.xm-res.T0) - at(off, i) // reference time − T0
			tp -= ra * tp
			y := p.delta - (rb-ra)*tp
			dv := (va + vb) * tp * tp
			asym := opts.Asymmetry * p.rtt / 2
			slack := p.noise + 2*math.Sqrt(dv)
			obs = append(obs, diff{i: i, j: j, y: y,
				v:    p.noise*p.noise + asym*asym + dv + 1e6, // +1 µs² resolution
				down: math.Max(p.down, 0) + slack, up: math.Max(p.up, 0) + slack,
				asym: 0.1 * math.Max(p.rtt, 0) / 2})
			obsPiece = append(obsPiece, pi)
		}
		var err error
		if sol, err = solveGraph(nv, obs, 0); err != nil {
			return nil, err
		}
		off = sol.x
	}

	// Step 5: error bounds.
	if !sol.feasible && nv > 0 {
		res.warnf("pair delay limits contradict each other around a cycle (clock steps or drift not captured?); error bounds from sensitivity only")
	}
	varErr := make([]float64, nv)
	for k := range varErr {
		varErr[k] = sol.sens[k]
		if sol.feasible {
			varErr[k] = math.Min(varErr[k], math.Max(sol.hi[k]-off[k], off[k]-sol.lo[k]))
		}
	}

	// Pair results.
	setAside := 0
	for oi, o := range obs {
		p := pcs[obsPiece[oi]]
		s := pairs[p.pair]
		ra, _ := rOf(s.a)
		rb, _ := rOf(s.b)
		pe := PairEstimate{A: s.a, B: s.b, At: s.base + p.xm, Offset: int64(math.Round(p.delta)),
			MinRTT: int64(math.Round(p.rtt)), Noise: int64(math.Round(p.noise)), Samples: p.n, Weight: o.w}
		if o.w < 1 {
			if setAside++; setAside <= 20 {
				res.warnf("pair %s–%s set aside: its offset disagrees with the rest of the graph by %.6f s (asymmetric delays?)",
					t.NodeName(s.a), t.NodeName(s.b), (o.y-(at(off, o.j)-at(off, o.i)))/1e9)
			}
		}
		if !opts.NoDrift && p.span >= float64(opts.MinDriftSpan) {
			pe.DriftPPM = p.slope * 1e6
		} else {
			pe.DriftPPM = (rb - ra) * 1e6
		}
		if p.rtt < 0 {
			res.warnf("pair %s–%s: the delays' lower envelopes sum to %.6f s < 0 (timestamps inconsistent, or a clock step not detected)",
				t.NodeName(s.a), t.NodeName(s.b), p.rtt/1e9)
		}
		res.Pairs = append(res.Pairs, pe)
	}

	if setAside > 20 {
		res.warnf("%d more pairs set aside (%d in all)", setAside-20, setAside)
	}

	// Node results and corrections.
	for n := range samples {
		samples[n] = 0
	}
	for _, oi := range obsPiece {
		p := pcs[oi]
		s := pairs[p.pair]
		samples[s.a] += p.n[0] + p.n[1]
		samples[s.b] += p.n[0] + p.n[1]
	}
	hasClock := func(n int) bool { return n < len(acc.lo) && acc.lo[n] <= acc.hi[n] }
	uncorrectable := 0
	for n := 0; n < nn; n++ {
		id := trace.NodeID(n)
		ne := NodeEstimate{Node: id, Name: t.NodeName(id), Samples: samples[n]}
		switch {
		case !hasClock(n):
			ne.Status = NoClock
		case id == ref:
			ne.Status = Reference
		case nodeVar[n] >= 0:
			ne.Status = Corrected
		default:
			ne.Status = Uncorrectable
			if uncorrectable++; uncorrectable <= 20 {
				res.warnf("node %s: no messages both ways with the reference's component; its clock cannot be corrected", ne.Name)
			}
		}
		if ne.Status == Reference || ne.Status == Corrected {
			r, rv := rOf(id)
			set := false
			// the drift's uncertainty, carried to the ends of the node's
			// activity (3 standard errors), widens the bound there
			span := math.Max(math.Abs(float64(acc.lo[n]-res.T0)), math.Abs(float64(acc.hi[n]-res.T0)))
			driftErr := 3 * math.Sqrt(rv) * span
			ne.DriftPPM = r / (1 + r) * 1e6
			nseg := len(nsteps[n]) + 1
			t0seg := 0
			for _, st := range nsteps[n] {
				if st.t <= res.T0 {
					t0seg++
				}
			}
			for sg := 0; sg < nseg; sg++ {
				vi, ok := vars[key(id, sg)]
				if !ok {
					res.warnf("node %s: clock segment %d has no two-way traffic with the reference's component; corrected with a neighbouring segment", ne.Name, sg)
					continue
				}
				o := at(off, vi)
				var e, fe float64
				if vi >= 0 {
					e, fe = varErr[vi], math.Sqrt(sol.variance[vi])
				}
				c := trace.Correction{Node: id, DriftPPM: ne.DriftPPM, Error: int64(math.Ceil(e + driftErr))}
				switch {
				case nseg == 1:
					c.At = res.T0 + int64(math.Round(o))
					c.Offset = int64(math.Round(o))
				default:
					if sg == 0 {
						c.At = acc.lo[n]
					} else {
						c.At = nsteps[n][sg-1].t
					}
					tr := float64(c.At-res.T0) - o // reference time − T0, to first order
					tr -= r * tr
					c.Offset = int64(math.Round(o + r*tr))
				}
				ne.Segments = append(ne.Segments, c)
				if sg == t0seg || !set {
					ne.Offset = int64(math.Round(o))
					ne.FitError = int64(math.Ceil(fe))
					set = true
				}
				ne.Error = max(ne.Error, c.Error)
			}
			if ne.Status == Reference {
				ne.Error, ne.FitError = 0, 0
			}
		}
		res.Nodes = append(res.Nodes, ne)
	}
	if uncorrectable > 20 {
		res.warnf("%d more nodes cannot be corrected (%d in all)", uncorrectable-20, uncorrectable)
	}
	for n, sts := range nsteps {
		for _, st := range sts {
			res.Steps = append(res.Steps, Step{Node: trace.NodeID(n), At: st.t, Jump: int64(math.Round(st.jump))})
		}
	}
	return res, nil
}

// union is a union-find over uint64 keys.
type union struct{ parent map[uint64]uint64 }

func newUnion() *union { return &union{parent: map[uint64]uint64{}} }

func (u *union) find(k uint64) uint64 {
	p, ok := u.parent[k]
	if !ok {
		u.parent[k] = k
		return k
	}
	if p == k {
		return k
	}
	r := u.find(p)
	u.parent[k] = r
	return r
}

func (u *union) join(a, b uint64) { u.parent[u.find(a)] = u.find(b) }

// Comparable reports whether t holds anything Estimate could relate: a
// message between two different nodes with both its send and its receive
// time known. A trace of one node (one host at host granularity), or whose
// only other nodes are untraced peers, has no second clock to compare, and
// its net delays need no correction.
func Comparable(t *trace.Trace) bool {
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.Src != m.Dst && m.Send != trace.Unknown && m.Recv != trace.Unknown {
			return true
		}
	}
	return false
}

// ComparableEnvelopes is Comparable for messages given as their envelopes.
func ComparableEnvelopes(env []trace.Envelope) bool {
	for i := range env {
		m := &env[i]
		if m.Src != m.Dst && m.Send != trace.Unknown && m.Recv != trace.Unknown {
			return true
		}
	}
	return false
}
