package skew

import (
	"math"
	"sort"
)

// point is one one-way delay sample: x is the time on the pair's time axis
// (ns since the pair's base), d the observed delay (ns, receiver clock minus
// sender clock).
type point struct{ x, d float64 }

// line is d = a + b·(x − x0).
type line struct{ x0, a, b float64 }

func (l line) at(x float64) float64 { return l.a + l.b*(x-l.x0) }

// notBelow reports whether q (between p and r in x) is on or above the chord
// p→r, so that it cannot be a vertex of the lower hull.
func notBelow(p, q, r point) bool {
	// cross of (q−p)×(r−p) ≤ 0 means q is on or above the chord p→r.
	return (q.x-p.x)*(r.d-p.d)-(q.d-p.d)*(r.x-p.x) <= 0
}

// lowerHull returns the lower convex hull of pts, which must be sorted by x
// (step 2a). For equal x only the lowest point can be a vertex. It reuses
// buf's storage.
func lowerHull(pts []point, buf []point) []point {
	h := buf[:0]
	for _, p := range pts {
		if n := len(h); n > 0 && h[n-1].x == p.x {
			if p.d >= h[n-1].d {
				continue
			}
			h = h[:n-1]
		}
		for len(h) >= 2 && notBelow(h[len(h)-2], h[len(h)-1], p) {
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	return h
}

// envelope is Moon, Skelly and Towsley's linear-programming estimate of the
// lower envelope of a delay series: the line below every sample that
// minimises the total distance to the samples, Σ(d_i − a − b·x_i). The
// objective is −n·(a + b·x̄) + const, so the optimum is the supporting line
// of the lower convex hull at x̄ (Zhang, Liu and Xia's convex-hull view of
// the same LP): the hull edge whose x-range contains x̄ (step 2b).
func envelope(h []point, xbar float64) line {
	switch len(h) {
	case 0:
		return line{}
	case 1:
		return line{x0: h[0].x, a: h[0].d}
	}
	i := sort.Search(len(h), func(i int) bool { return h[i].x >= xbar })
	switch {
	case i == 0:
		i = 1
	case i == len(h):
		i = len(h) - 1
	case h[i].x == xbar && i+1 < len(h):
		// x̄ sits on a vertex: every slope between the two adjacent edges is
		// optimal; take their mean.
		b := (slope(h[i-1], h[i]) + slope(h[i], h[i+1])) / 2
		return line{x0: h[i].x, a: h[i].d, b: b}
	}
	p, q := h[i-1], h[i]
	return line{x0: p.x, a: p.d, b: slope(p, q)}
}

func slope(p, q point) float64 { return (q.d - p.d) / (q.x - p.x) }

// minResidual is min(d − l(x)) over the points; it is attained at a lower
// hull vertex, so passing the hull is enough.
func minResidual(pts []point, l line) float64 {
	m := math.Inf(1)
	for _, p := range pts {
		if r := p.d - l.at(p.x); r < m {
			m = r
		}
	}
	return m
}

// sortPoints sorts by x unless already sorted (the usual case: messages come
// in send order).
func sortPoints(pts []point) {
	for i := 1; i < len(pts); i++ {
		if pts[i].x < pts[i-1].x {
			sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
			return
		}
	}
}
