package convolution

import (
	"math"
	"slices"

	"wap5/trace"
)

// signal fills dst (zeroed first) with √(messages per quantum) of the
// given times.
func (c *convolver) signal(dst []float64, ids []int32, at func(int32) int64) {
	clear(dst)
	for _, i := range ids {
		q := (at(i) - c.t0) / c.mu
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

// spectrum returns the cached FFT of node j's departure signal.
func (c *convolver) spectrum(j trace.NodeID) []complex128 {
	if sp, ok := c.spectra[j]; ok {
		return sp
	}
	c.signal(c.s1, c.allFrom[j], c.dep)
	sp := c.fft.Coefficients(nil, c.s1)
	c.spectra[j] = sp
	return sp
}

// correlate is step 3: C(d) = Σ_t s1(t)·s2(t+d) of V's arrivals at j (s1)
// and j's departures (s2), returned for d in [−maxLag, maxLag] at index
// d+maxLag.
func (c *convolver) correlate(j trace.NodeID, v []int32) []float64 {
	c.correlations++
	s2 := c.spectrum(j)
	c.signal(c.s1, v, c.arr)
	c1 := c.fft.Coefficients(c.c1, c.s1)
	for k := range c1 {
		c1[k] = complex(real(c1[k]), -imag(c1[k])) * s2[k]
	}
	full := c.fft.Sequence(c.corr, c1)
	out := make([]float64, 2*c.maxLag+1)
	inv := 1 / float64(c.n)
	for d := -c.maxLag; d <= c.maxLag; d++ {
		k := d
		if k < 0 {
			k += c.n
		}
		out[d+c.maxLag] = full[k] * inv
	}
	return out
}

// spike is a run of the correlation above S standard deviations whose peak
// is above N; lags in quanta.
type spike struct{ peak, lo, hi int }

// spikes is step 4.
func (c *convolver) spikes(corr []float64) []spike {
	mean, sd := 0.0, 0.0
	for _, x := range corr {
		mean += x
	}
	mean /= float64(len(corr))
	for _, x := range corr {
		sd += (x - mean) * (x - mean)
	}
	sd = math.Sqrt(sd / float64(len(corr)))
	if sd == 0 {
		return nil
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
		s.peak, s.lo, s.hi = s.peak-c.maxLag, s.lo-c.maxLag, s.hi-c.maxLag
		// Negative delays beyond the tolerance are not causal (§5.2.3).
		if s.peak < -c.tolQ {
			continue
		}
		out = append(out, s)
	}
	return out
}

// match is step 5 for one spike: each message of V not yet consumed by an
// earlier spike is matched with the earliest unmatched departure of j sent
// within [lo, hi] ns after it, to a destination skip allows. It returns
// the matched departures, the V positions they came from and their delays.
func (c *convolver) match(v []int32, vUsed []bool, z []int32, used []bool, lo, hi int64, skip func(trace.NodeID) bool) (out []int32, from []int, delay []int64) {
	p := 0
	for vi, i := range v {
		if vUsed[vi] {
			continue
		}
		a := c.arr(i)
		for p < len(z) && c.dep(z[p])-a < lo {
			p++
		}
		for q := p; q < len(z); q++ {
			d := c.dep(z[q]) - a
			if d > hi {
				break
			}
			if !used[q] && !skip(c.t.Messages[z[q]].Dst) {
				used[q] = true
				out = append(out, z[q])
				from = append(from, vi)
				delay = append(delay, d)
				break
			}
		}
	}
	return out, from, delay
}

// processNode is steps 3–6 for the vertex x of node j, reached by the
// messages v; path holds the edges from the root.
func (c *convolver) processNode(x *vertex, v []int32, path []edge) {
	j := x.node
	z := c.allFrom[j]
	if len(path) >= c.opt.MaxDepth || len(z) == 0 || len(v) == 0 {
		return
	}
	sortBy(v, c.arr)
	sp := c.spikes(c.correlate(j, v))
	if len(sp) == 0 {
		return
	}
	type acc struct {
		all    []int32
		delays []spikeMatch
	}
	per := map[trace.NodeID]*acc{}
	used := make([]bool, len(z))
	vUsed := make([]bool, len(v))
	skip := func(k trace.NodeID) bool { return repeats(path, edge{j, k}) >= c.opt.MaxRepeat } // a cycle
	minLag := -int64(c.tolQ) * c.mu
	if c.opt.Time == TimeLocal {
		minLag = 0 // one clock: an effect cannot precede its cause
	}
	// Spikes in order of delay: a message of V causes at most one
	// departure, the earliest that a spike explains; later spikes are the
	// same causality seen through further hops (unless FanOut).
	for _, s := range sp {
		lo := max(int64(min(s.lo-1, s.peak-c.tolQ))*c.mu, minLag)
		hi := int64(max(s.hi+1, s.peak+c.tolQ)) * c.mu
		m, from, delay := c.match(v, vUsed, z, used, lo, hi, skip)
		sums := map[trace.NodeID][2]float64{}
		for n, mi := range m {
			k := c.t.Messages[mi].Dst
			a := per[k]
			if a == nil {
				a = &acc{}
				per[k] = a
			}
			a.all = append(a.all, mi)
			sm := sums[k]
			sums[k] = [2]float64{sm[0] + float64(delay[n]), sm[1] + 1}
			if !c.opt.FanOut {
				vUsed[from[n]] = true
			}
		}
		for k, sm := range sums {
			per[k].delays = append(per[k].delays, spikeMatch{mean: max(sm[0]/sm[1]/1e9, 0), count: int(sm[1])})
		}
		if c.opt.FanOut {
			clear(used) // each spike matches afresh
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
		if len(a.all) < c.opt.MinCount || float64(len(a.all)) < c.opt.MinFraction*float64(x.count) {
			continue
		}
		slices.SortStableFunc(a.delays, func(p, q spikeMatch) int { return q.count - p.count })
		y := &vertex{node: k, from: j, count: len(a.all), delays: a.delays, msgs: a.all}
		x.children = append(x.children, y)
		c.processNode(y, a.all, append(path, edge{j, k}))
	}
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
