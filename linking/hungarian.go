package linking

import "math"

// hungarian solves the rectangular assignment problem for an n×m cost
// matrix (n ≤ m, row-major): every row gets a distinct column, minimising
// the total cost. It returns the column of every row.
func hungarian(cost []float64, n, m int, u, v, p, way, minv []float64, used []bool) []int {
	// Potentials and the matching, 1-based with column 0 as the sentinel
	// (the classic shortest-augmenting-path formulation).
	for i := range u[:n+1] {
		u[i] = 0
	}
	for i := range v[:m+1] {
		v[i], p[i], way[i] = 0, 0, 0
	}
	for i := 1; i <= n; i++ {
		p[0] = float64(i)
		j0 := 0
		for k := range minv[:m+1] {
			minv[k], used[k] = math.Inf(1), false
		}
		for {
			used[j0] = true
			i0 := int(p[j0])
			delta, j1 := math.Inf(1), 0
			for jj := 1; jj <= m; jj++ {
				if used[jj] {
					continue
				}
				cur := cost[(i0-1)*m+jj-1] - u[i0] - v[jj]
				if cur < minv[jj] {
					minv[jj], way[jj] = cur, float64(j0)
				}
				if minv[jj] < delta {
					delta, j1 = minv[jj], jj
				}
			}
			for jj := 0; jj <= m; jj++ {
				if used[jj] {
					u[int(p[jj])] += delta
					v[jj] -= delta
				} else {
					minv[jj] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := int(way[j0])
			p[j0] = p[j1]
			j0 = j1
		}
	}
	col := make([]int, n)
	for jj := 1; jj <= m; jj++ {
		if p[jj] > 0 {
			col[int(p[jj])-1] = jj - 1
		}
	}
	return col
}

type hungScratch struct {
	u, v, p, way, minv []float64
	used               []bool
}

// grow makes the arrays hold an m-column problem, reusing them when they
// do (hungarian resets what it reads).
func (h *hungScratch) grow(m int) *hungScratch {
	if len(h.u) < m+1 {
		*h = *newHungScratch(m)
	}
	return h
}

func newHungScratch(m int) *hungScratch {
	return &hungScratch{u: make([]float64, m+1), v: make([]float64, m+1), p: make([]float64, m+1),
		way: make([]float64, m+1), minv: make([]float64, m+1), used: make([]bool, m+1)}
}
