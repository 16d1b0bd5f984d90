package convolution

import (
	"gonum.org/v1/gonum/floats"

	"math"
	"slices"

	"wap5/trace"
)

// signal fills dst (zeroed first) with √(messages per quantum) of the
// messages ids at times at (c.arrT or c.depT, by message).
func (c *convolver) signal(dst []float64, ids []int32, at []int64) {
	clear(dst)
	for _, i := range ids {
		q := (at[i] - c.t0) / c.mu
		if q >= 0 && int(q) < c.nq {
			dst[q]++
		}
	}
	for q, v := range dst[:c.nq] {
		if v > 1 {
			dst[q] = math.Sqrt(v)
		}
	}
}

// spectrum returns the cached block spectra of the departure signal y of
// edge j→k: block b is y over quanta [b·B − maxLag, (b+1)·B + maxLag), the
// n quanta any lag in [−maxLag, maxLag] of block b of an arrival signal
// reaches; nil for an all-zero block.
func (c *convolver) spectrum(e edge) [][]complex128 {
	if sp, ok := c.spectra[e]; ok {
		return sp
	}
	c.signal(c.s1, c.bySrc[e.from][e.to], c.depT)
	sp := c.blocks(make([][]complex128, c.nb), nil, func(b int) int { return b*c.block - c.maxLag }, c.n)
	c.spectra[e] = sp
	return sp
}

// transform is the first half of step 3: the block spectra of V's
// arrivals x, block b being x over quanta [b·B, (b+1)·B), zero-padded to n.
// The spectra live in c.vspec, reused by the next vertex.
func (c *convolver) transform(v []int32) [][]complex128 {
	c.signal(c.s1, v, c.arrT)
	if c.vspec == nil {
		c.vspec = make([]complex128, c.nb*(c.n/2+1))
		c.vblocks = make([][]complex128, c.nb)
	}
	return c.blocks(c.vblocks, c.vspec, func(b int) int { return b * c.block }, c.block)
}

// blocks transforms the windows [start(b), start(b)+size) of the signal in
// c.s1 (zero outside [0, nq), zero-padded to n), one per block; an
// all-zero window has a nil spectrum. The spectra go into out (nb long)
// and mem (allocated when too short).
func (c *convolver) blocks(out [][]complex128, mem []complex128, start func(int) int, size int) [][]complex128 {
	h := c.n/2 + 1
	clear(out)
	for b := range out {
		s := start(b)
		lo, hi := max(s, 0), min(s+size, c.nq)
		if lo >= hi || !slices.ContainsFunc(c.s1[lo:hi], func(x float64) bool { return x != 0 }) {
			continue
		}
		clear(c.buf)
		copy(c.buf[lo-s:], c.s1[lo:hi])
		if len(mem) < h {
			mem = make([]complex128, h*(c.nb-b))
		}
		out[b] = c.fft.Coefficients(mem[:h:h], c.buf)
		mem = mem[h:]
	}
	return out
}

// correlate is step 3: C(d) = Σ_t x(t)·y(t+d) of V's arrivals at j (x,
// whose block spectra are f1) and j's departures to k (y), for d in
// [−maxLag, maxLag] at index d+maxLag. Block b contributes
// IFFT(conj(X_b)·Y_b) at index maxLag+d, free of wrap-around since its
// x-block is B long and its y-window n = B + 2·maxLag; the blocks' sum is
// taken in the frequency domain, so one inverse FFT of length n serves all.
func (c *convolver) correlate(dst []float64, f1 [][]complex128, e edge) []float64 {
	c.correlations++
	s2 := c.spectrum(e)
	acc := c.c1
	clear(acc)
	any := false
	for b, x := range f1 {
		y := s2[b]
		if x == nil || y == nil {
			continue
		}
		any = true
		for k := range acc {
			acc[k] += complex(real(x[k]), -imag(x[k])) * y[k]
		}
	}
	out := c.lags(dst)
	if !any {
		return out
	}
	full := c.fft.Sequence(c.corr, acc)
	inv := 1 / float64(c.n)
	for i := range out {
		out[i] = full[i] * inv
	}
	return out
}

// lags returns dst zeroed, or a new slice if it is not 2·maxLag+1 long:
// the correlations' output, index d+maxLag for lag d.
func (c *convolver) lags(dst []float64) []float64 {
	if len(dst) != 2*c.maxLag+1 {
		return make([]float64, 2*c.maxLag+1)
	}
	clear(dst)
	return dst
}

// point is a non-zero quantum of a signal.
type point struct {
	q int32
	v float64
}

// sparse appends to out[:0] the non-zero quanta of the √-count signal of
// ids (sorted by their times at).
func (c *convolver) sparse(out []point, ids []int32, at []int64) []point {
	out = out[:0]
	for _, i := range ids {
		q := int32((at[i] - c.t0) / c.mu)
		if n := len(out); n > 0 && out[n-1].q == q {
			out[n-1].v++
		} else {
			out = append(out, point{q, 1})
		}
	}
	for i := range out {
		out[i].v = math.Sqrt(out[i].v)
	}
	return out
}

func (c *convolver) sparseEdge(e edge) []point {
	if sp, ok := c.sparseCache[e]; ok {
		return sp
	}
	sp := c.sparse(nil, c.bySrc[e.from][e.to], c.depT)
	c.sparseCache[e] = sp
	return sp
}

// correlateSparse is correlate by direct summation over non-zero quanta.
func (c *convolver) correlateSparse(dst []float64, s1, s2 []point) []float64 {
	c.correlations++
	out := c.lags(dst)
	L := int32(c.maxLag)
	lo := 0
	for _, a := range s1 {
		for lo < len(s2) && s2[lo].q < a.q-L {
			lo++
		}
		// out[q−a.q+L] for the s2 points q in [a.q−L, a.q+L].
		addPairs(out[:2*L+1], a, s2[lo:])
	}
	return out
}

// addPairs adds a.v·b.v to w[b.q−a.q+L] for the points b of s2 (sorted)
// from the first until one falls beyond w, 2L+1 long. Kept small so that
// its loop runs in registers.
func addPairs(w []float64, a point, s2 []point) {
	base := a.q - int32(len(w)/2)
	for _, b := range s2 {
		i := uint32(b.q - base)
		if i >= uint32(len(w)) {
			return
		}
		w[i] += a.v * b.v
	}
}

// depTimes returns the cached departure times of edge j→k's messages (in
// their order in c.bySrc).
func (c *convolver) depTimes(e edge) []int64 {
	if zt, ok := c.depCache[e]; ok {
		return zt
	}
	z := c.bySrc[e.from][e.to]
	zt := make([]int64, len(z))
	for q, i := range z {
		zt[q] = c.depT[i]
	}
	c.depCache[e] = zt
	return zt
}

// denseEdge returns the cached √-count signal of edge j→k's departures.
func (c *convolver) denseEdge(e edge) []float64 {
	if y, ok := c.denseCache[e]; ok {
		return y
	}
	y := make([]float64, c.nq)
	c.signal(y, c.bySrc[e.from][e.to], c.depT)
	c.denseCache[e] = y
	return y
}

// correlateDense is correlate by direct summation over the non-zero quanta
// of s1 against the whole signal y: C(d) += a·y(q+d) for each point (q, a)
// of s1, a vectorised axpy over the 2·maxLag+1 lags.
func (c *convolver) correlateDense(dst []float64, s1 []point, y []float64) []float64 {
	c.correlations++
	L := c.maxLag
	out := c.lags(dst)
	for _, a := range s1 {
		// out[i] += a.v·y[q−L+i] for i in [0, 2L] with q−L+i in [0, nq).
		q := int(a.q)
		lo, hi := max(0, L-q), min(2*L+1, c.nq-q+L)
		if lo < hi {
			floats.AddScaled(out[lo:hi], a.v, y[q-L+lo:q-L+hi])
		}
	}
	return out
}

// spike is a run of the correlation above S standard deviations whose peak
// is above N; lags in quanta.
type spike struct {
	peak, lo, hi int
	excess       float64 // Σ (C − mean) over the run
}

// spikes is step 4.
func (c *convolver) spikes(corr []float64) []spike {
	// Mean and standard deviation of the background: spikes themselves
	// are left out (three rounds of clipping at N σ) so that one strong
	// spike does not hide weaker ones.
	mean, sd := 0.0, 0.0
	cut := math.Inf(1)
	for round := 0; round < 3; round++ {
		n, sum, sum2 := 0, 0.0, 0.0
		for _, x := range corr {
			if x <= cut {
				n++
				sum += x
				sum2 += x * x
			}
		}
		if n == 0 {
			break
		}
		mean = sum / float64(n)
		sd = math.Sqrt(math.Max(sum2/float64(n)-mean*mean, 0))
		cut = mean + c.opt.N*sd
	}
	hiT, loT := mean+c.opt.N*sd, mean+c.opt.S*sd
	var out []spike
	for k := 0; k < len(corr); {
		if corr[k] <= loT {
			k++
			continue
		}
		s := spike{peak: k, lo: k}
		for ; k < len(corr) && corr[k] > loT; k++ {
			if corr[k] > corr[s.peak] {
				s.peak = k
			}
		}
		s.hi = k - 1
		if corr[s.peak] < hiT {
			continue
		}
		for d := s.lo; d <= s.hi; d++ {
			s.excess += corr[d] - mean
		}
		s.peak, s.lo, s.hi = s.peak-c.maxLag, s.lo-c.maxLag, s.hi-c.maxLag
		// Negative delays beyond the tolerance are not causal (§5.2.3).
		if s.peak < -c.tolQ {
			continue
		}
		out = append(out, s)
	}
	return out
}

// match is step 5 for one spike and one destination: each message of V not
// yet consumed by an earlier spike is matched with the earliest unmatched
// message of z (departures of j to one node) sent within [lo, hi] ns after
// it. It appends the matched departures, the V positions they came from
// and their delays to out, from and delay. vt and zt are the arrival times
// of v and the departure times of z, side by side (not gathered by message
// id: that was most of match's time). The matched departures are those
// with next[q] != q: next links each to a later one, so a search skips
// runs of them (nextFree); next[len(z)] = len(z).
func match(out []int32, from []int, delay []int64, vt []int64, vUsed []bool, z []int32, zt []int64, next []int32, lo, hi int64) ([]int32, []int, []int64) {
	p := 0
	for vi, a := range vt {
		if vUsed[vi] {
			continue
		}
		for p < len(zt) && zt[p]-a < lo {
			p++
		}
		if q := nextFree(next, p); q < len(z) {
			if d := zt[q] - a; d <= hi {
				next[q] = int32(q + 1)
				out = append(out, z[q])
				from = append(from, vi)
				delay = append(delay, d)
			}
		}
	}
	return out, from, delay
}

// nextFree is the first unmatched departure at or after q (see match),
// shortening the links it follows.
func nextFree(next []int32, q int) int {
	r := q
	for int(next[r]) != r {
		r = int(next[r])
	}
	for int(next[q]) != q {
		q, next[q] = int(next[q]), int32(r)
	}
	return r
}

// freeAll marks every departure of next unmatched.
func freeAll(next []int32) {
	for q := range next {
		next[q] = int32(q)
	}
}

// median is the middle element (index len/2 in sorted order) of d, which
// it reorders.
func median(d []int64) int64 {
	k := len(d) / 2
	lo, hi := 0, len(d)-1
	for lo < hi {
		// Hoare partition around the middle element's value.
		x := d[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for d[i] < x {
				i++
			}
			for d[j] > x {
				j--
			}
			if i <= j {
				d[i], d[j] = d[j], d[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return d[k]
		}
	}
	return d[k]
}

// processNode is steps 3–6 for the vertex x of node j, reached by the
// messages v; path holds the edges from the root.
func (c *convolver) processNode(x *vertex, v []int32, path []edge, rootCount int) {
	j := x.node
	if c.opt.MaxCorrelations > 0 && c.correlations >= c.opt.MaxCorrelations {
		c.truncated = true
		return
	}
	if len(path) >= c.opt.MaxDepth || len(c.allFrom[j]) == 0 || len(v) == 0 || (c.isRoot[j] && !c.opt.ThroughRoots) {
		return
	}
	sortBy(v, c.arrT)
	var f1 [][]complex128 // V's block spectra, computed when first needed
	// Scratch for this vertex's correlations, reused by its descendants
	// once they are done with here.
	sv := c.sparse(c.svBuf, v, c.arrT)
	c.svBuf = sv
	vt := c.vtBuf[:0]
	for _, i := range v {
		vt = append(vt, c.arrT[i])
	}
	c.vtBuf = vt
	if c.lagBuf == nil {
		c.lagBuf = make([]float64, 2*c.maxLag+1)
	}
	type acc struct {
		all    []int32
		delays []spikeMatch
	}
	per := map[trace.NodeID]*acc{}
	minLag := -int64(c.tolQ) * c.mu
	if c.opt.Time == TimeLocal {
		minLag = 0 // one clock: an effect cannot precede its cause
	}
	vUsed := make([]bool, len(v))
	// A spike must carry a share of V's messages (§5.2.3's noise).
	minSpike := max(c.opt.MinCount/2, int(c.opt.MinFraction*float64(len(v))/2), 2)
	for _, k := range sortedKeys(c.bySrc[j]) {
		if repeats(path, edge{j, k}) >= c.opt.MaxRepeat {
			continue // a cycle
		}
		z := c.bySrc[j][k]
		if len(z) < c.opt.MinCount {
			continue
		}
		// 3. Direct summation when the signals are sparse enough to beat
		// the FFT (deep vertices carry few messages); all give the same C.
		// Costs in units of ~0.4 ns (BenchmarkDirect, BenchmarkCorrelate):
		// a summed pair of non-zero quanta 4, a dense axpy element 1, an
		// FFT of length n 3·n·log₂n.
		var corr []float64
		sz := c.sparseEdge(edge{j, k})
		sparseCost := 4*float64(len(sv))*float64(len(sz))*float64(2*c.maxLag+1)/float64(c.nq) + float64(len(sv))
		denseCost := float64(len(sv)) * float64(2*c.maxLag+1)
		// The FFT's cost: one inverse transform of length n, the product
		// of nb blocks' spectra, and V's nb forward transforms unless an
		// earlier destination paid for them.
		ffts := 1.0
		if f1 == nil {
			ffts += float64(c.nb)
		}
		fftCost := 3*ffts*float64(c.n)*math.Log2(float64(c.n)) + float64(c.nb*c.n)
		switch {
		case sparseCost <= denseCost && sparseCost < fftCost:
			corr = c.correlateSparse(c.lagBuf, sv, sz)
		case denseCost < fftCost:
			corr = c.correlateDense(c.lagBuf, sv, c.denseEdge(edge{j, k}))
		default:
			if f1 == nil {
				f1 = c.transform(v)
			}
			corr = c.correlate(c.lagBuf, f1, edge{j, k})
		}
		sp := c.spikes(corr)
		// Noise (§5.2.3): a spike's excess over the background estimates
		// how many messages it really explains; coincidences between busy
		// signals give none to speak of.
		sp = slices.DeleteFunc(sp, func(s spike) bool { return s.excess < float64(minSpike) })
		if len(sp) == 0 {
			continue
		}
		next := make([]int32, len(z)+1)
		freeAll(next)
		clear(vUsed)
		a := &acc{}
		// Spikes in order of delay: a message of V causes at most one
		// message to k, at the earliest spike that explains it; later
		// spikes towards k are the same causality seen through further
		// hops (unless FanOut).
		for _, s := range sp {
			lo := max(int64(min(s.lo-1, s.peak-c.tolQ))*c.mu, minLag)
			hi := int64(max(s.hi+1, s.peak+c.tolQ)) * c.mu
			n0 := len(a.all)
			var from []int
			var delay []int64
			a.all, from, delay = match(a.all, c.fromBuf[:0], c.delayBuf[:0], vt, vUsed, z, c.depTimes(edge{j, k}), next, lo, hi)
			c.fromBuf, c.delayBuf = from, delay
			m := a.all[n0:]
			if len(m) < minSpike {
				a.all = a.all[:n0]
				continue
			}
			if !c.opt.FanOut {
				for _, vi := range from {
					vUsed[vi] = true
				}
			} else {
				freeAll(next)
			}
			// The median of the matched delays: robust to the odd wrong
			// match at the edge of a wide spike.
			a.delays = append(a.delays, spikeMatch{mean: max(float64(median(delay))/1e9, 0), count: len(m)})
		}
		if len(a.all) > 0 {
			per[k] = a
		}
	}
	keys := make([]trace.NodeID, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := per[k]
		// 6. Low-frequency noise ends the path here.
		if len(a.all) < c.opt.MinCount || float64(len(a.all)) < c.opt.MinFraction*float64(x.count) ||
			float64(len(a.all)) < c.opt.MinRootFraction*float64(rootCount) {
			continue
		}
		slices.SortStableFunc(a.delays, func(p, q spikeMatch) int { return q.count - p.count })
		y := &vertex{node: k, from: j, count: len(a.all), delays: a.delays, msgs: a.all}
		x.children = append(x.children, y)
		c.processNode(y, a.all, append(path, edge{j, k}), rootCount)
	}
}

// zIndex finds message q in z, which is sorted by departure time.
func zIndex(z []int32, q int32) int {
	for i, x := range z {
		if x == q {
			return i
		}
	}
	return -1
}

func repeats(path []edge, e edge) int {
	n := 0
	for _, p := range path {
		if p == e {
			n++
		}
	}
	return n
}
