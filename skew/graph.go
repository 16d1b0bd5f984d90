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

// extra holds terms added to the normal equations' diagonal and right-hand
// side: what eliminated pendants leave on their neighbours.
type extra struct{ diag, rhs []float64 }

// wls solves the weighted least-squares problem over the graph of
// differences (step 4), with a weak prior x = 0 of variance prior (0 for
// none) and optional extra terms. It returns the solution and the inverse
// of the normal matrix (the covariance of the solution when the variances
// are right).
func wls(n int, obs []diff, prior float64, ex *extra) ([]float64, *mat.SymDense, error) {
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
	if ex != nil {
		for k := 0; k < n; k++ {
			N.SetSym(k, k, N.At(k, k)+ex.diag[k])
			rhs[k] += ex.rhs[k]
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
	return solveRobustN(n, obs, prior, nil, max(3, len(obs)/10))
}

func solveRobustN(n int, obs []diff, prior float64, ex *extra, maxRemove int) ([]float64, *mat.SymDense, error) {
	for k := range obs {
		obs[k].w = 1
	}
	const threshold = 5
	for removed := 0; ; removed++ {
		x, inv, err := wls(n, obs, prior, ex)
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
				if math.IsInf(d[f], 1) {
					continue
				}
				if nd := d[f] + e.w; math.IsInf(d[t], 1) || nd < d[t]-1e-9*math.Abs(d[t]) {
					d[t] = nd
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

// solution is what solveGraph returns per unknown.
type solution struct {
	x, variance []float64
	sens        []float64 // sensitivityBound (no prior only)
	lo, hi      []float64 // feasibleRange, when feasible (no prior only)
	feasible    bool
}

// solveGraph is solveRobust plus, without a prior, the error bounds, with
// the graph's pendant trees eliminated first so that only the core needs
// the dense solve (O(core³) time and O(core²) memory instead of O(n³) and
// O(n²): a node that talks to one other node only, e.g. a client of one
// server, is a pendant). Elimination is Gaussian elimination of an unknown
// with one neighbour: it leaves a term on the neighbour's diagonal and
// right-hand side, and afterwards x_v = (b_v + w·x_u)/N_vv with variance
// 1/N_vv + (w/N_vv)²·var(x_u). Without a prior that is x_v = x_u ± y
// exactly, and the bounds follow from the neighbour's. Pendants are peeled
// repeatedly, so whole trees go; a pendant's observation is a bridge and is
// never set aside.
func solveGraph(n int, obs []diff, prior float64) (*solution, error) {
	lambda := 0.0
	if prior > 0 {
		lambda = 1 / prior
	}
	deg := make([]int, n)
	adj := make([][]int, n)
	for k, o := range obs {
		for _, v := range [2]int{o.i, o.j} {
			if v >= 0 {
				deg[v]++
				adj[v] = append(adj[v], k)
			}
		}
	}
	ex := &extra{diag: make([]float64, n), rhs: make([]float64, n)}
	type elim struct {
		v, k, u int
		nvv, w  float64 // N_vv and the observation's weight
		bv      float64
	}
	var order []elim
	removed := make([]bool, len(obs))
	peeled := make([]bool, n)
	var queue []int
	for v := 0; v < n; v++ {
		if deg[v] <= 1 {
			queue = append(queue, v)
		}
	}
	for len(queue) > 0 {
		v := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if peeled[v] || deg[v] > 1 {
			continue
		}
		peeled[v] = true
		if deg[v] == 0 { // nothing left but the prior (and eliminated children)
			order = append(order, elim{v: v, k: -1, u: -1, nvv: lambda + ex.diag[v], bv: ex.rhs[v]})
			continue
		}
		k := -1
		for _, e := range adj[v] {
			if !removed[e] {
				k = e
				break
			}
		}
		removed[k] = true
		deg[v] = 0
		o := obs[k]
		obs[k].w = 1
		w := 1 / o.v
		u, sign := o.i, 1.0 // x_v = x_u + y when v is j
		if o.i == v {
			u, sign = o.j, -1
		}
		nvv := lambda + ex.diag[v] + w
		bv := ex.rhs[v] + sign*w*o.y
		order = append(order, elim{v: v, k: k, u: u, nvv: nvv, w: w, bv: bv})
		if u >= 0 {
			ex.diag[u] += w - w*w/nvv
			ex.rhs[u] += -sign*w*o.y + w*bv/nvv
			if deg[u]--; deg[u] <= 1 {
				queue = append(queue, u)
			}
		}
	}
	// the core: unknowns not peeled, renumbered
	idx := make([]int, n)
	var coreVars []int
	for v := 0; v < n; v++ {
		idx[v] = -1
		if !peeled[v] {
			idx[v] = len(coreVars)
			coreVars = append(coreVars, v)
		}
	}
	var core []diff
	var coreObs []int
	for k, o := range obs {
		if removed[k] {
			continue
		}
		c := o
		if c.i >= 0 {
			c.i = idx[c.i]
		}
		if c.j >= 0 {
			c.j = idx[c.j]
		}
		core = append(core, c)
		coreObs = append(coreObs, k)
	}
	nc := len(coreVars)
	cex := &extra{diag: make([]float64, nc), rhs: make([]float64, nc)}
	for c, v := range coreVars {
		cex.diag[c], cex.rhs[c] = ex.diag[v], ex.rhs[v]
	}
	sol := &solution{x: make([]float64, n), variance: make([]float64, n), sens: make([]float64, n),
		lo: make([]float64, n), hi: make([]float64, n), feasible: true}
	if nc > 0 {
		cx, inv, err := solveRobustN(nc, core, prior, cex, max(3, len(obs)/10))
		if err != nil {
			return nil, err
		}
		for c, v := range coreVars {
			sol.x[v], sol.variance[v] = cx[c], inv.At(c, c)
		}
		for c, k := range coreObs {
			obs[k].w = core[c].w
		}
		if prior == 0 {
			csens := sensitivityBound(nc, core, inv)
			clo, chi, feasible := feasibleRange(nc, core)
			sol.feasible = feasible
			for c, v := range coreVars {
				sol.sens[v] = csens[c]
				if feasible {
					sol.lo[v], sol.hi[v] = clo[c], chi[c]
				}
			}
		}
	}
	get := func(u int, a []float64) float64 {
		if u < 0 {
			return 0
		}
		return a[u]
	}
	// back-substitute in reverse order: a pendant's neighbour is known
	for p := len(order) - 1; p >= 0; p-- {
		e := order[p]
		if e.nvv == 0 {
			return nil, fmt.Errorf("clock graph is singular (an unknown without observations)")
		}
		sol.x[e.v] = (e.bv + e.w*get(e.u, sol.x)) / e.nvv
		sol.variance[e.v] = 1/e.nvv + (e.w/e.nvv)*(e.w/e.nvv)*get(e.u, sol.variance)
		if e.k < 0 || prior != 0 {
			continue
		}
		o := obs[e.k]
		sol.sens[e.v] = get(e.u, sol.sens) + math.Max(o.down, o.up)
		if o.j == e.v { // x_v = x_u + y
			sol.lo[e.v], sol.hi[e.v] = get(e.u, sol.lo)+o.y-o.down, get(e.u, sol.hi)+o.y+o.up
		} else { // x_v = x_u − y
			sol.lo[e.v], sol.hi[e.v] = get(e.u, sol.lo)-o.y-o.up, get(e.u, sol.hi)-o.y+o.down
		}
	}
	return sol, nil
}
