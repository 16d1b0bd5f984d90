package skew

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSolveGraphPeelsExactly checks that eliminating pendant trees gives
// the dense solution: same estimates, variances and bounds, on graphs with
// a cyclic core, trees hanging off it and chains to the reference.
func TestSolveGraphPeelsExactly(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		n := 3 + r.IntN(30)
		var obs []diff
		truth := make([]float64, n)
		for v := range truth {
			truth[v] = r.NormFloat64() * 1e9
		}
		add := func(i, j int) {
			// consistent with the truth within the limits, so that the
			// feasible ranges exist
			down, up := 1e6+r.Float64()*1e7, 1e6+r.Float64()*1e7
			y := at(truth, j) - at(truth, i) - up + r.Float64()*(up+down)
			obs = append(obs, diff{i: i, j: j, y: y, v: 1e6 + r.Float64()*1e8, down: down, up: up, asym: r.Float64() * 1e6})
		}
		core := 1 + r.IntN(n)
		for v := 0; v < core; v++ { // connected core with cycles through the reference
			add(v-1, v) // v-1 == -1 is the reference
			if v > 1 && r.IntN(2) == 0 {
				add(r.IntN(v)-1, v)
			}
		}
		for v := core; v < n; v++ { // trees: each new node hangs off an earlier one
			if r.IntN(2) == 0 {
				add(v, r.IntN(v))
			} else {
				add(r.IntN(v), v)
			}
		}
		dense := append([]diff(nil), obs...)
		x, inv, err := solveRobust(n, dense, 0)
		if err != nil {
			t.Fatal(err)
		}
		sens := sensitivityBound(n, dense, inv)
		lo, hi, feasible := feasibleRange(n, dense)
		sol, err := solveGraph(n, obs, 0)
		if err != nil {
			t.Fatal(err)
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(a)) }
		if !feasible || !sol.feasible {
			t.Fatalf("seed %d: feasible %v, dense %v; want both (the limits hold the truth)", seed, sol.feasible, feasible)
		}
		for v := 0; v < n; v++ {
			if !near(sol.x[v], x[v]) || !near(sol.variance[v], inv.At(v, v)) || !near(sol.sens[v], sens[v]) ||
				!near(sol.lo[v], lo[v]) || !near(sol.hi[v], hi[v]) || math.IsInf(lo[v], 0) || math.IsInf(hi[v], 0) ||
				truth[v] < lo[v]-1 || truth[v] > hi[v]+1 {
				t.Fatalf("seed %d unknown %d (of %d, core %d): x %g/%g var %g/%g sens %g/%g lo %g/%g hi %g/%g", seed, v, n, core,
					sol.x[v], x[v], sol.variance[v], inv.At(v, v), sol.sens[v], sens[v], sol.lo[v], lo[v], sol.hi[v], hi[v])
			}
		}
	}
}

// With a prior (the drift system), elimination must match the dense
// solution too, values and variances.
func TestSolveGraphWithPrior(t *testing.T) {
	compared := 0
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 2))
		n := 2 + r.IntN(30)
		truth := make([]float64, n)
		for v := range truth {
			truth[v] = r.NormFloat64() * 1e-4
		}
		var obs []diff
		add := func(i, j int) {
			v := (1e-6 + r.Float64()*1e-5) * (1e-6 + r.Float64()*1e-5)
			y := at(truth, j) - at(truth, i) + r.NormFloat64()*math.Sqrt(v)
			obs = append(obs, diff{i: i, j: j, y: y, v: v, w: 1})
		}
		core := 1 + r.IntN(n)
		for v := 0; v < core; v++ {
			if r.IntN(4) > 0 { // some unknowns have no observation at all
				add(v-1, v)
			}
			if v > 1 && r.IntN(2) == 0 {
				add(r.IntN(v)-1, v)
			}
		}
		for v := core; v < n; v++ {
			add(r.IntN(v), v)
		}
		const prior = 4e-8
		for k := range obs {
			obs[k].w = 1
		}
		x, inv, err := wls(n, obs, prior, nil)
		if err != nil {
			t.Fatal(err)
		}
		sol, err := solveGraph(n, obs, prior)
		if err != nil {
			t.Fatal(err)
		}
		aside := false
		for k := range obs {
			aside = aside || obs[k].w != 1
		}
		if aside {
			continue // the dense reference here is not robust
		}
		compared++
		for v := 0; v < n; v++ {
			if math.Abs(sol.x[v]-x[v]) > 1e-9*math.Max(1e-6, math.Abs(x[v])) && math.Abs(sol.x[v]-x[v]) > 1e-15 ||
				math.Abs(sol.variance[v]-inv.At(v, v)) > 1e-9*inv.At(v, v) {
				t.Fatalf("seed %d unknown %d: x %g/%g var %g/%g", seed, v, sol.x[v], x[v], sol.variance[v], inv.At(v, v))
			}
		}
	}
	if compared < 15 {
		t.Errorf("only %d of 20 graphs compared", compared)
	}
}
