package linking

import (
	"math"
	"slices"
	"unsafe"
)

// dist is a gamma delay density with shape k and scale θ (seconds); k = 1 is
// the exponential of WAP5 §5.1, k = 2 its gamma alternative.
type dist struct {
	k, theta float64
	logNorm  float64 // k·log θ + lgamma(k)
	floor    float64 // delays below this count as this (ties and clock resolution)
}

func newDist(k, theta float64) dist {
	if theta <= 0 || math.IsNaN(theta) {
		theta = 1e-6
	}
	if k < 1 || math.IsNaN(k) {
		k = 1
	}
	lg, _ := math.Lgamma(k)
	return dist{k: k, theta: theta, logNorm: k*math.Log(theta) + lg, floor: theta * k * 1e-3}
}

// modelDist is the step-2 density for mean causal delay d under the named
// model: exponential with λ = 1/d, or the paper's gamma λ²te^{−λt} with
// λ = 1/d (its mode at d).
func modelDist(model string, d float64) dist {
	if model == DelayGamma {
		return newDist(2, d)
	}
	return newDist(1, d)
}

// logpdf is the log density at t seconds.
func (d dist) logpdf(t float64) float64 {
	if t < d.floor {
		t = d.floor
	}
	lp := -t/d.theta - d.logNorm
	if d.k != 1 {
		lp += (d.k - 1) * math.Log(t)
	}
	return lp
}

func (d dist) mean() float64 { return d.k * d.theta }

// moments accumulates delays of one transition class for refitting and for
// the model comparison.
type moments struct {
	n, s1, s2, slog float64
}

func (m *moments) add(t float64) {
	if t < 1e-9 {
		t = 1e-9
	}
	m.n++
	m.s1 += t
	m.s2 += t * t
	m.slog += math.Log(t)
}

// addNoLog is add without the log term, for fits that use only n, s1 and s2
// (m.fit): the log is most of add's cost.
func (m *moments) addNoLog(t float64) {
	if t < 1e-9 {
		t = 1e-9
	}
	m.n++
	m.s1 += t
	m.s2 += t * t
}

// addLog adds the log term of t alone (after addNoLog(t): together add(t)).
func (m *moments) addLog(t float64) {
	if t < 1e-9 {
		t = 1e-9
	}
	m.slog += math.Log(t)
}

func (m *moments) mean() float64 { return m.s1 / m.n }

// fit returns the density of the family that matches the samples' moments:
// exponential (k = 1), the paper's gamma (k = 2), or gamma with its shape
// from mean²/variance, kept within [1, 400].
func (m *moments) fit(model string) dist {
	mu := m.mean()
	switch model {
	case DelayExp:
		return newDist(1, mu)
	case DelayGamma:
		return newDist(2, mu/2)
	}
	v := m.s2/m.n - mu*mu
	k := 400.0
	if v > 0 {
		k = math.Min(400, math.Max(1, mu*mu/v))
	}
	return newDist(k, mu/k)
}

// logLik is the log-likelihood of the samples under each family with its
// maximum-likelihood (fit: moment) parameters.
func (m *moments) logLik() (exp, gamma2, fit float64) {
	if m.n == 0 {
		return
	}
	mu := m.mean()
	lam := 1 / mu
	exp = m.n * (math.Log(lam) - 1)
	th := mu / 2
	gamma2 = m.slog - 2*m.n*math.Log(th) - 2*m.n
	d := m.fit(DelayFit)
	lg, _ := math.Lgamma(d.k)
	fit = (d.k-1)*m.slog - m.s1/d.theta - m.n*(d.k*math.Log(d.theta)+lg)
	return
}

// robustFit fits the family to the samples within two interquartile ranges
// of the quartiles, so that a minority of wrong links (long delays to the
// wrong parent) cannot flatten the density that would expose them. It sorts
// xs in place (the callers drop the samples after the fit).
func robustFit(xs []float32, model string) dist { return robustFitWith(xs, model, nil) }

// robustFitWith is robustFit, its sort a radix sort where it can (tmp: the
// scratch, reused; nil: slices.Sort).
func robustFitWith(xs []float32, model string, tmp *[]uint32) dist {
	s := xs
	sortDelays(s, tmp)
	n := len(s)
	q1, q3 := float64(s[n/4]), float64(s[(3*n)/4])
	lo, hi := q1-2*(q3-q1), q3+2*(q3-q1)
	var m moments
	for _, x := range s {
		if v := float64(x); v >= lo && v <= hi {
			m.addNoLog(v)
		}
	}
	if m.n < 2 {
		for _, x := range s {
			m.addNoLog(float64(x))
		}
	}
	return m.fit(model)
}

// sortDelays sorts xs as slices.Sort does. Where there are many and none
// is negative or NaN (a refit's delays, as a rule), by their bits: those of
// non-negative floats are in the numbers' order, and equal numbers have
// equal bits (−0 aside, which counts as negative here), so the sorted array
// is the same. An LSD radix sort, 11 bits a pass (a pass where every delay
// has the same digit is skipped), with tmp as its scratch.
func sortDelays(xs []float32, tmp *[]uint32) {
	if tmp == nil || len(xs) < radixMin {
		slices.Sort(xs)
		return
	}
	u := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(xs))), len(xs))
	for _, v := range u {
		if v >= 0x7f800000 { // sign bit, infinity or NaN
			slices.Sort(xs)
			return
		}
	}
	*tmp = slices.Grow((*tmp)[:0], len(u))[:len(u)]
	src, dst := u, *tmp
	for shift := uint(0); shift < 32; shift += 11 {
		var count [1 << 11]int
		for _, v := range src {
			count[v>>shift&(1<<11-1)]++
		}
		if count[src[0]>>shift&(1<<11-1)] == len(src) {
			continue
		}
		pos := 0
		for d, c := range count {
			count[d] = pos
			pos += c
		}
		for _, v := range src {
			d := v >> shift & (1<<11 - 1)
			dst[count[d]] = v
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &u[0] {
		copy(u, src)
	}
}

// radixMin is the fewest delays sortDelays sorts by radix.
const radixMin = 256

// peakFit finds the peak of the delays to all candidate parents — the true
// links concentrate there while false ones spread out — and fits the family
// to it: the peak's centre and, from its width at half height, its spread.
// It sorts xs in place.
func peakFit(xs []float32, model string) (dist, bool) {
	s := xs
	slices.Sort(s)
	n := len(s)
	lo, hi := float64(s[n/50]), float64(s[n-1-n/50])
	if hi <= lo {
		return dist{}, false
	}
	const bins = 40
	w := (hi - lo) / bins
	var h [bins]float64
	for _, x := range s {
		if b := int((float64(x) - lo) / w); b >= 0 && b < bins {
			h[b]++
		}
	}
	var sm [bins]float64
	for i := range h {
		for k := i - 1; k <= i+1; k++ {
			if k >= 0 && k < bins {
				sm[i] += h[k] / 3
			}
		}
	}
	// The even spread of false pairs is the background: the median bin.
	srt := sm
	slices.Sort(srt[:])
	bg := srt[bins/2]
	p := 0
	for i := range sm {
		if sm[i] > sm[p] {
			p = i
		}
	}
	if sm[p]-bg < 5*math.Sqrt(bg+1) {
		return dist{}, false // no clear peak above the noise
	}
	half := bg + (sm[p]-bg)/2
	a, b := p, p
	for a > 0 && sm[a-1] >= half {
		a--
	}
	for b < bins-1 && sm[b+1] >= half {
		b++
	}
	var m moments
	for _, x := range s {
		if v := float64(x); v >= lo+float64(a)*w && v < lo+float64(b+1)*w {
			m.addNoLog(v)
		}
	}
	if m.n < 10 {
		return dist{}, false
	}
	mu := m.mean()
	sigma := float64(b-a+1) * w / 2.355
	if model == DelayExp || model == DelayGamma {
		return m.fit(model), true
	}
	k := math.Min(400, math.Max(1, mu*mu/(sigma*sigma)))
	return newDist(k, mu/k), true
}
