package skew

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// diff is one observation of a difference of unknowns: x[j] − x[i] = y
// with variance v; index −1 is the reference, fixed at zero.
type diff struct {
	i, j int
	y, v float64
	w    float64 // robustness weight in [0,1], set by solveRobust
	// x[j] − x[i] is certainly within [y − down, y + up] (one-way delays
	// are not negative), however asymmetric the delays.
	down, up float64
	// asym is the prior spread of the delay asymmetry (ns): when several
	// observations are equally suspect, the one whose round trip leaves
	// more room for asymmetry is set aside first
	asym float64
}

// wls solves the weighted least-squares problem over the graph of
// differences (step 4), with a weak prior x = 0 of variance prior (0 for
// none). It returns the solution and the inverse of the normal matrix (the
// covariance of the solution when the variances are right).
func wls(n int, obs []diff, prior float64) ([]float64, *mat.SymDense, error) {
	if n == 0 {
		return nil, mat.NewSymDense(1, nil), nil
	}
	N := mat.NewSymDense(n, nil)
	rhs := make([]float64, n)
	for _, o := range obs {
		w := o.w / o.v
		if w == 0 || math.IsNaN(w) {
			continue
		}
		if o.i >= 0 {
			N.SetSym(o.i, o.i, N.At(o.i, o.i)+w)
			rhs[o.i] -= w * o.y
		}
		if o.j >= 0 {
			N.SetSym(o.j, o.j, N.At(o.j, o.j)+w)
			rhs[o.j] += w * o.y
		}
		if o.i >= 0 && o.j >= 0 {
			N.SetSym(o.i, o.j, N.At(o.i, o.j)-w)
		}
	}
	if prior > 0 {
		for k := 0; k < n; k++ {
			N.SetSym(k, k, N.At(k, k)+1/prior)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(N) {
		return nil, nil, fmt.Errorf("clock graph is singular (disconnected or degenerate observations)")
	}
	var x mat.VecDense
	if err := ch.SolveVecTo(&x, mat.NewVecDense(n, rhs)); err != nil {
		return nil, nil, err
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, nil, err
	}
	out := make([]float64, n)
	for k := range out {
		out[k] = x.AtVec(k)
	}
	return out, &inv, nil
}

func at(x []float64, i int) float64 {
	if i < 0 {
		return 0
	}
	return x[i]
}

// solveRobust is wls with outlier deletion (step 4b): while some
// observation's studentized residual (its residual against the fit,
// scaled by the residual's own standard deviation, which accounts for how
// much the rest of the graph constrains it) exceeds 5, the worst one is
// set aside and the fit repeated. Among equally suspect pairs (within 5%;
// e.g. the two pairs of a node on a cycle, whose residuals are the same
// evidence) the one whose round trip leaves more room for asymmetry goes. An asymmetric pair on a cycle of
// otherwise symmetric pairs is the one edge that all inconsistent cycles
// share, so it has the largest studentized residual and goes first. A pair
// on no cycle (a bridge) cannot be checked and stays. At most a tenth of
// the observations (at least 3) are set aside.
func solveRobust(n int, obs []diff, prior float64) ([]float64, *mat.SymDense, error) {
	for k := range obs {
		obs[k].w = 1
	}
	const threshold = 5
	maxRemove := max(3, len(obs)/10)
	for removed := 0; ; removed++ {
		x, inv, err := wls(n, obs, prior)
		if err != nil || removed >= maxRemove {
			return x, inv, err
		}
		ts := make([]float64, len(obs))
		tmax := 0.0
		for k, o := range obs {
			if o.w < 1 {
				continue
			}
			// variance of the fitted difference x_j − x_i
			a := 0.0
			if o.j >= 0 {
				a += inv.At(o.j, o.j)
			}
			if o.i >= 0 {
				a += inv.At(o.i, o.i)
			}
			if o.i >= 0 && o.j >= 0 {
				a -= 2 * inv.At(o.i, o.j)
			}
			h := a / o.v // leverage
			if h > 0.99 {
				continue
			}
			ts[k] = math.Abs(o.y-(at(x, o.j)-at(x, o.i))) / math.Sqrt(o.v*(1-h))
			tmax = math.Max(tmax, ts[k])
		}
		worst := -1
		if tmax >= threshold {
			for k := range obs {
				if ts[k] >= 0.95*tmax && (worst < 0 || obs[k].asym > obs[worst].asym) {
					worst = k
				}
			}
		}
		if worst < 0 {
			return x, inv, nil
		}

		obs[worst].w = 1e-9 // set aside, but keep the graph connected
	}
}

// sensitivityBound is, per unknown, Σ|∂x/∂y_k|·h_k: how far the estimate can
// be off when every observation is off by up to h_k = max(down, up) (at most
// the minimum round trip, when one direction takes all of it).
func sensitivityBound(n int, obs []diff, inv *mat.SymDense) []float64 {
	b := make([]float64, n)
	for _, o := range obs {
		w := o.w / o.v
		if w == 0 || math.IsNaN(w) {
			continue
		}
		for k := 0; k < n; k++ {
			c := 0.0
			if o.j >= 0 {
				c += inv.At(k, o.j)
			}
			if o.i >= 0 {
				c -= inv.At(k, o.i)
			}
			b[k] += math.Abs(w*c) * math.Max(o.down, o.up)
		}
	}
	return b
}

// feasibleRange returns, per unknown, the interval of values consistent
// with every observation's hard limits x[j] − x[i] ∈ [y − down, y + up] (one-way
// delays are never negative), by shortest paths over the difference
// constraints (Bellman–Ford from and to the reference). ok is false when the
// constraints contradict each other (a negative cycle).
func feasibleRange(n int, obs []diff) (lo, hi []float64, ok bool) {
	// vertices 0..n-1 and n for the reference
	v := func(i int) int {
		if i < 0 {
			return n
		}
		return i
	}
	type edge struct {
		from, to int
		w        float64
	}
	var edges []edge
	for _, o := range obs {
		// x_j − x_i ≤ y + up ; x_i − x_j ≤ −y + down
		edges = append(edges, edge{v(o.i), v(o.j), o.y + o.up}, edge{v(o.j), v(o.i), -o.y + o.down})
	}
	sp := func(reverse bool) ([]float64, bool) {
		d := make([]float64, n+1)
		for k := range d {
			d[k] = math.Inf(1)
		}
		d[n] = 0
		for round := 0; round <= n+1; round++ {
			changed := false
			for _, e := range edges {
				f, t := e.from, e.to
				if reverse {
					f, t = t, f
				}
				if !math.IsInf(d[f], 1) && d[f]+e.w < d[t]-1e-9*math.Abs(d[t]) {
					d[t] = d[f] + e.w
					changed = true
				}
			}
			if !changed {
				return d, true
			}
		}
		return nil, false
	}
	up, ok1 := sp(false)
	down, ok2 := sp(true)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	lo, hi = make([]float64, n), make([]float64, n)
	for k := 0; k < n; k++ {
		hi[k], lo[k] = up[k], -down[k]
	}
	return lo, hi, true
}
