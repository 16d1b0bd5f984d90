package linking

import (
	"math"
	"math/rand/v2"
	"testing"
)

func bruteAssign(cost []float64, n, m int) float64 {
	best := math.Inf(1)
	used := make([]bool, m)
	var rec func(i int, acc float64)
	rec = func(i int, acc float64) {
		if i == n {
			best = math.Min(best, acc)
			return
		}
		for c := 0; c < m; c++ {
			if !used[c] {
				used[c] = true
				rec(i+1, acc+cost[i*m+c])
				used[c] = false
			}
		}
	}
	rec(0, 0)
	return best
}

func TestHungarianMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(5)
		m := n + r.IntN(3)
		cost := make([]float64, n*m)
		for i := range cost {
			cost[i] = math.Round(r.Float64()*100) / 10
		}
		s := newHungScratch(m)
		col := hungarian(cost, n, m, s.u, s.v, s.p, s.way, s.minv, s.used)
		got := 0.0
		seen := map[int]bool{}
		for i, c := range col {
			if seen[c] {
				t.Fatalf("column %d used twice", c)
			}
			seen[c] = true
			got += cost[i*m+c]
		}
		if want := bruteAssign(cost, n, m); math.Abs(got-want) > 1e-9 {
			t.Fatalf("trial %d: cost %v, optimum %v", trial, got, want)
		}
	}
}
