package convolution

import (
	"fmt"
	"math"
	"slices"
	"time"

	"wap5/trace"
)

// TimeMode says which timestamps make the signals.
type TimeMode int

const (
	// TimeLocal uses each node's own clock: arrivals at a node by their
	// receive time, departures by their send time.
	TimeLocal TimeMode = iota
	// TimeSend uses each message's send time only (as single-timestamp
	// traces such as Project 5's have).
	TimeSend
)

// Options tunes the algorithm; start from DefaultOptions. Zero durations
// mean "choose from the trace".
type Options struct {
	Time      TimeMode
	Quantum   time.Duration // μ
	MaxQuanta int           // bound on T/μ when μ is chosen
	N, S      float64       // spike and dip thresholds, in standard deviations
	Tolerance time.Duration // v: matching tolerance around a spike (default μ)
	MaxDelay  time.Duration // longest causal delay looked for (default T/10, at most 2000 μ)
	// MinCount and MinFraction drop low-frequency edges: fewer messages
	// than MinCount, or than MinFraction of the parent edge's.
	MinCount    int
	MinFraction float64
	MaxDepth    int // edges per path
	MaxRepeat   int // occurrences of one edge (from, to) on a path
	// DerivedOverlap: a path whose last edge shares at least this fraction
	// of its messages with the last edge of a longer path from the same
	// root is derived and removed (negative: keep all).
	DerivedOverlap float64
	Roots          []string // root nodes by name (default: chosen from the trace)
	// FanOut lets one message cause departures at several spikes (delays)
	// rather than only at the earliest that explains it.
	FanOut bool
	// ThroughRoots continues paths that reach a root node; by default a
	// path ends there (a client that got its reply starts a new path).
	ThroughRoots bool
	// MinRootFraction drops edges with less than this fraction of the
	// messages on their path's first edge.
	MinRootFraction float64
	// MaxCorrelations bounds the search (0: no bound); a truncated search
	// is reported in a warning.
	MaxCorrelations int
}

// DefaultOptions returns N = 4, S = 3 and the other defaults documented on
// Options.
func DefaultOptions() Options {
	return Options{MaxQuanta: 1 << 16, N: 4, S: 3, MinCount: 10, MinFraction: 0.1, MinRootFraction: 0.03, MaxCorrelations: 5000, MaxDepth: 12, MaxRepeat: 2, DerivedOverlap: 0.5}
}

// Result is the output of Convolve.
type Result struct {
	trace.Paths
	Quantum      time.Duration
	Quanta       int // S = T/μ
	Correlations int // cross-correlations computed (output edges explored)
	Roots        []string
}

// Convolve runs the convolution algorithm on t; t is not modified.
func Convolve(t *trace.Trace, opt Options) *Result {
	def := DefaultOptions()
	if opt.N <= 0 {
		opt.N = def.N
	}
	if opt.S <= 0 || opt.S >= opt.N {
		opt.S = math.Min(def.S, opt.N*0.75)
	}
	if opt.MaxQuanta <= 0 {
		opt.MaxQuanta = def.MaxQuanta
	}
	if opt.MaxDepth <= 0 {
		opt.MaxDepth = def.MaxDepth
	}
	if opt.MaxRepeat <= 0 {
		opt.MaxRepeat = def.MaxRepeat
	}
	r := &Result{}
	r.Algorithm = "convolution"
	c := newConvolver(t, opt)
	if c == nil {
		if len(t.Messages) > 0 {
			r.Warnings = append(r.Warnings, "trace too short for the convolution algorithm")
		}
		return r
	}
	r.Quantum, r.Quanta = time.Duration(c.mu), c.nq
	// 2. One edge per destination of each root.
	for _, root := range c.roots {
		r.Roots = append(r.Roots, t.NodeName(root))
		dests := c.bySrc[root]
		for _, j := range sortedKeys(dests) {
			v := dests[j]
			v = slices.Clone(v)
			x := &vertex{node: j, from: root, count: len(v), msgs: v}
			c.processNode(x, v, []edge{{root, j}}, len(v))
			c.tree = append(c.tree, x)
		}
	}
	r.Correlations = c.correlations
	if c.truncated {
		r.Warnings = append(r.Warnings, fmt.Sprintf("search stopped after %d cross-correlations; raise the count thresholds or the quantum", c.correlations))
	}
	// 7. Chains, derived-path removal, ranking.
	c.patterns(&r.Paths)
	if len(r.Patterns) == 0 && len(t.Messages) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("no causal paths found at μ = %v", time.Duration(c.mu)))
	}
	return r
}

type edge struct{ from, to trace.NodeID }

// vertex is a node of the output graph, reached by an edge from "from".
type vertex struct {
	node, from trace.NodeID
	count      int
	delays     []spikeMatch
	msgs       []int32 // messages on the incoming edge
	children   []*vertex
}

type spikeMatch struct {
	mean  float64 // seconds
	count int
}

type convolver struct {
	t      *trace.Trace
	opt    Options
	t0     int64
	mu     int64
	nq     int // quanta
	n      int // FFT length
	fft    *realFFT
	roots  []trace.NodeID
	isRoot map[trace.NodeID]bool
	// Departures by source node, by destination: message indices sorted by
	// departure time.
	bySrc       map[trace.NodeID]map[trace.NodeID][]int32
	allFrom     map[trace.NodeID][]int32
	spectra     map[edge][][]complex128
	sparseCache map[edge][]point
	denseCache  map[edge][]float64
	depCache    map[edge][]int64
	tree        []*vertex

	maxLag, tolQ int
	// Step 3 correlates block-wise: signals are cut into nb blocks of
	// block quanta, each transformed at FFT length n (see spectrum).
	block, nb    int
	truncated    bool
	s1, buf      []float64
	c1           []complex128
	corr         []float64
	correlations int
	arrT, depT   []int64 // by message
	// Scratch reused across vertices (see processNode and transform).
	vspec    []complex128
	vblocks  [][]complex128
	svBuf    []point
	vtBuf    []int64
	lagBuf   []float64
	fromBuf  []int
	delayBuf []int64
}

func newConvolver(t *trace.Trace, opt Options) *convolver {
	if len(t.Messages) < 2 {
		return nil
	}
	c := &convolver{t: t, opt: opt, bySrc: map[trace.NodeID]map[trace.NodeID][]int32{}, allFrom: map[trace.NodeID][]int32{}, spectra: map[edge][][]complex128{}, sparseCache: map[edge][]point{}, denseCache: map[edge][]float64{}, depCache: map[edge][]int64{}}
	c.arrT = make([]int64, len(t.Messages))
	c.depT = make([]int64, len(t.Messages))
	for i := range t.Messages {
		m := &t.Messages[i]
		c.depT[i] = m.Time()
		switch {
		case opt.Time == TimeSend:
			c.arrT[i] = m.Time()
		case m.Recv != trace.Unknown:
			c.arrT[i] = m.Recv
		default:
			c.arrT[i] = m.Send
		}
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	first := map[trace.NodeID]int64{}
	sends := map[trace.NodeID]bool{}
	for i := range t.Messages {
		m := &t.Messages[i]
		d, a := c.depT[i], c.arrT[i]
		lo, hi = min(lo, d, a), max(hi, d, a)
		if f, ok := first[m.Src]; !ok || d < f {
			first[m.Src] = d
			sends[m.Src] = true
		}
		if f, ok := first[m.Dst]; !ok || a < f {
			first[m.Dst] = a
			sends[m.Dst] = false
		}
		dm := c.bySrc[m.Src]
		if dm == nil {
			dm = map[trace.NodeID][]int32{}
			c.bySrc[m.Src] = dm
		}
		dm[m.Dst] = append(dm[m.Dst], int32(i))
		c.allFrom[m.Src] = append(c.allFrom[m.Src], int32(i))
	}
	if hi <= lo {
		return nil
	}
	for _, dm := range c.bySrc {
		for _, v := range dm {
			sortBy(v, c.depT)
		}
	}
	for _, v := range c.allFrom {
		sortBy(v, c.depT)
	}
	c.t0 = lo
	// 1. The quantum, and the roots.
	c.mu = int64(opt.Quantum)
	if c.mu <= 0 {
		c.mu = c.chooseQuantum(hi - lo)
	}
	c.nq = int((hi-lo)/c.mu) + 1
	maxDelay := int64(opt.MaxDelay)
	if maxDelay <= 0 {
		maxDelay = max(min((hi-lo)/10, 2000*c.mu), 10*c.mu)
	}
	c.maxLag = int(min(maxDelay/c.mu+1, int64(c.nq-1)))
	c.setBlocks(blockSize(c.nq, c.maxLag))
	tol := int64(opt.Tolerance)
	if tol <= 0 {
		tol = c.mu
	}
	c.tolQ = int((tol + c.mu - 1) / c.mu)
	if len(opt.Roots) > 0 {
		for _, name := range opt.Roots {
			if id, ok := t.LookupNode(name); ok {
				c.roots = append(c.roots, id)
			}
		}
	} else {
		for id, s := range sends {
			if s {
				c.roots = append(c.roots, id)
			}
		}
		slices.Sort(c.roots)
	}
	c.isRoot = map[trace.NodeID]bool{}
	for _, r := range c.roots {
		c.isRoot[r] = true
	}
	return c
}

// blockSize is the FFT length of step 3's block-wise correlation: a power
// of two (the transforms of fft.go) of about
// four times the 2·maxLag+1 lags looked at, so each block's padding is a
// small part of it, and at least 1024 (tiny transforms cost more in calls
// than in arithmetic), or just enough for one block holding the whole
// signal.
func blockSize(nq, maxLag int) int {
	pow2 := func(x int) int {
		n := 2
		for n < x {
			n <<= 1
		}
		return n
	}
	return min(max(pow2(4*(2*maxLag+1)), 1024), pow2(nq+2*maxLag))
}

// setBlocks sets the FFT length n ≥ 2·maxLag+1 (a power of two) of step 3, the blocks of
// B = n − 2·maxLag quanta the signals are cut into, the FFT plan and the
// scratch buffers.
func (c *convolver) setBlocks(n int) {
	c.n = n
	c.block = n - 2*c.maxLag
	c.nb = (c.nq + c.block - 1) / c.block
	c.fft = newRealFFT(n)
	c.s1 = make([]float64, c.nq)
	c.buf = make([]float64, n)
	c.corr = make([]float64, n)
	c.c1 = make([]complex128, n/2+1)
	c.vspec, c.vblocks = nil, nil
}

// chooseQuantum implements step 1's choice of μ.
func (c *convolver) chooseQuantum(span int64) int64 {
	// Median gap between an arrival at a node and that node's next send.
	var gaps []int64
	arrivals := map[trace.NodeID][]int64{}
	for i := range c.t.Messages {
		m := &c.t.Messages[i]
		arrivals[m.Dst] = append(arrivals[m.Dst], c.arrT[i])
	}
	for node, as := range arrivals {
		slices.Sort(as)
		out := c.allFrom[node]
		k := 0
		for _, a := range as {
			for k < len(out) && c.depT[out[k]] < a {
				k++
			}
			if k == len(out) {
				break
			}
			gaps = append(gaps, c.depT[out[k]]-a)
		}
	}
	mu := int64(time.Millisecond)
	if len(gaps) > 0 {
		slices.Sort(gaps)
		mu = roundDown125(gaps[len(gaps)/2] / 10)
	}
	floor := span / int64(c.opt.MaxQuanta)
	if mu < floor {
		mu = roundUp125(floor)
	}
	return max(mu, 1000) // 1 µs
}

func roundDown125(x int64) int64 {
	if x < 1 {
		return 1
	}
	p := int64(1)
	for p*10 <= x {
		p *= 10
	}
	switch {
	case x >= 5*p:
		return 5 * p
	case x >= 2*p:
		return 2 * p
	}
	return p
}

func roundUp125(x int64) int64 {
	r := roundDown125(x)
	if r >= x {
		return r
	}
	// Next step of the 1-2-5 series above r.
	p := int64(1)
	for p*10 <= r {
		p *= 10
	}
	switch r / p {
	case 1:
		return 2 * p
	case 2:
		return 5 * p
	}
	return 10 * p
}

// sortBy sorts message ids by their times key (stable).
func sortBy(ids []int32, key []int64) {
	for i := 1; i < len(ids); i++ {
		if key[ids[i]] < key[ids[i-1]] {
			slices.SortStableFunc(ids, func(a, b int32) int {
				ka, kb := key[a], key[b]
				switch {
				case ka < kb:
					return -1
				case ka > kb:
					return 1
				}
				return 0
			})
			return
		}
	}
}

func sortedKeys(m map[trace.NodeID][]int32) []trace.NodeID {
	ks := make([]trace.NodeID, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
