package skew

import (
	"math"
	"sort"
)

// quantiles are the delay quantiles a pair's offset may rest on, above
// the pair's lower envelope. Paxson's minimum filtering uses the minimum
// delay; under the symmetric-delay assumption (the same delay distribution
// both ways) every quantile gives Δ, and they differ only in noise. The
// minimum is the best when delays have a sharp floor, but far worse than a
// low quantile when the floor is soft (delays spread around a mean), and
// its standard error cannot be told from the samples alone; a low quantile's
// can. For a sharp floor the 5% quantile is only a little noisier than the
// minimum (0.2·J/√n against J/n for queueing delay of mean J). So the
// estimate uses the quantile of least standard error among these, all at or
// below the first quartile so that load in one direction only (Paxson's
// reason for minima) moves them little, and the minimum (the envelope
// itself) only when there are too few samples for any of them.
var quantiles = [...]float64{0, 0.05, 0.1, 0.25}

// dirFit is one direction's fit over a piece (steps 2b–2c).
type dirFit struct {
	env   line                    // the LP lower envelope
	lines [len(quantiles)]line    // envelope + quantile correction
	se    [len(quantiles)]float64 // standard error of each line's level
	// standard error of each line's slope
	slopeSE [len(quantiles)]float64
}

// fitDir fits one direction: the LP envelope, then per quantile a line
// through the quantiles of the residuals in up to 16 windows (so drift is
// followed), with the quantile's standard error from the residuals' order
// statistics (step 2c).
func fitDir(pts []point, buf *[]point, xlo, xhi float64, scratch *[]float64) dirFit {
	var f dirFit
	f.env = fitLine(pts, buf)
	n := len(pts)
	r := (*scratch)[:0]
	for _, p := range pts {
		r = append(r, p.d-f.env.at(p.x))
	}
	*scratch = r
	// windows: contiguous runs of the x-sorted points
	nw := min(max(n/16, 1), 16)
	type win struct{ x, n float64 }
	ws := make([]win, nw)
	qs := make([][len(quantiles)]float64, nw)
	for w := 0; w < nw; w++ {
		lo, hi := w*n/nw, (w+1)*n/nw
		sx := 0.0
		for _, p := range pts[lo:hi] {
			sx += p.x
		}
		ws[w] = win{x: sx / float64(hi-lo), n: float64(hi - lo)}
		seg := append([]float64(nil), r[lo:hi]...)
		sort.Float64s(seg)
		for k, q := range quantiles {
			qs[w][k] = quantileSorted(seg, q)
		}
	}
	sort.Float64s(r)
	for k, q := range quantiles {
		// weighted least-squares line through the window quantiles
		var S, Sx, Sy, Sxx, Sxy float64
		for w := range ws {
			x, y, c := ws[w].x, qs[w][k], ws[w].n
			S += c
			Sx += c * x
			Sy += c * y
			Sxx += c * x * x
			Sxy += c * x * y
		}
		xm := Sx / S
		b, bse := 0.0, math.Inf(1)
		if d := Sxx - Sx*Sx/S; nw >= 4 && d > 0 {
			b = (Sxy - Sx*Sy/S) / d
			// windows hold equal counts: the slope's standard error from
			// the scatter of the window quantiles about the line
			rss := 0.0
			for w := range ws {
				e := qs[w][k] - (Sy/S + b*(ws[w].x-xm))
				rss += e * e
			}
			bse = math.Sqrt(rss / float64(nw-2) / (d / (S / float64(nw))))
		}
		corr := line{x0: xm, a: Sy / S, b: b}
		if q == 0 {
			corr = line{x0: f.env.x0}
		}
		f.slopeSE[k] = bse
		f.lines[k] = line{x0: f.env.x0, a: f.env.a + corr.at(f.env.x0), b: f.env.b + corr.b}
		f.se[k] = quantileSE(r, q)
	}
	return f
}

// quantileSorted is the q-quantile of sorted v (linear interpolation).
func quantileSorted(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	pos := q * float64(len(v)-1)
	i := int(pos)
	if i+1 >= len(v) {
		return v[len(v)-1]
	}
	return v[i] + (pos-float64(i))*(v[i+1]-v[i])
}

// quantileSE estimates the standard error of the q-quantile of n samples
// from sorted residuals: for q > 0 the asymptotic sqrt(q(1−q)/n)/f with the
// density f from the spacing of nearby order statistics; for the minimum,
// the mean gap between the lowest order statistics, ~1/(n·f(min)).
func quantileSE(r []float64, q float64) float64 {
	n := len(r)
	if n < 2 {
		return math.Inf(1)
	}
	if q == 0 {
		k := min(5, n-1)
		return (r[k] - r[0]) / float64(k)
	}
	if float64(n)*q < 3 {
		return math.Inf(1) // too few samples below the quantile to place it
	}
	h := math.Max(1.5/math.Sqrt(float64(n)), 0.02)
	lo, hi := math.Max(q-h, 0), math.Min(q+h, 1)
	sparsity := (quantileSorted(r, hi) - quantileSorted(r, lo)) / (hi - lo)
	return sparsity * math.Sqrt(q*(1-q)/float64(n))
}

// fitPiece fits both directions over [lo, hi) of a pair's axis and picks the
// quantile whose Δ = (line₀ − line₁)/2 has the smallest standard error
// (steps 2b–2d). The envelopes bound Δ whatever the delays: Δ ≤ env₀ and
// −Δ ≤ env₁ because no one-way delay is negative.
func fitPiece(s *series, lo, hi float64, buf *[]point, scratch *[]float64) (piece, bool) {
	p0, p1 := sliceX(s.dir[0], lo, hi), sliceX(s.dir[1], lo, hi)
	if len(p0) == 0 || len(p1) == 0 {
		return piece{}, false
	}
	xlo := math.Min(p0[0].x, p1[0].x)
	xhi := math.Max(p0[len(p0)-1].x, p1[len(p1)-1].x)
	xm := math.Round((xlo + xhi) / 2)
	f0, f1 := fitDir(p0, buf, xlo, xhi, scratch), fitDir(p1, buf, xlo, xhi, scratch)
	best, bestSE := 0, math.Inf(1)
	for k := 1; k < len(quantiles); k++ {
		if se := math.Hypot(f0.se[k], f1.se[k]) / 2; se < bestSE*0.9 { // lower quantiles unless clearly worse
			best, bestSE = k, se
		}
	}
	if best == 0 {
		// too few samples for a quantile: the envelope, with the spacing
		// of the lowest samples as its noise
		bestSE = math.Hypot(f0.se[0], f1.se[0]) / 2
		if math.IsInf(bestSE, 1) {
			bestSE = math.Max(f0.env.at(xm)+f1.env.at(xm), 0) / 10
		}
	}
	l0, l1 := f0.lines[best], f1.lines[best]
	delta := (l0.at(xm) - l1.at(xm)) / 2
	e0, e1 := f0.env.at(xm), f1.env.at(xm)
	return piece{
		xm:       int64(xm),
		delta:    delta,
		slope:    (l0.b - l1.b) / 2,
		slopeSE:  math.Hypot(f0.slopeSE[best], f1.slopeSE[best]) / 2,
		rtt:      e0 + e1,
		up:       e0 - delta,
		down:     delta + e1,
		noise:    bestSE,
		quantile: quantiles[best],
		span:     xhi - xlo,
		n:        [2]int{len(p0), len(p1)},
	}, true
}
