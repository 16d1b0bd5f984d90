package linking

import (
	"math"
	"slices"
)

// hungarian solves the rectangular assignment problem for an n×m cost
// matrix (n ≤ m, row-major): every row gets a distinct column, minimising
// the total cost. It returns the column of every row. Entries may be ±Inf or
// NaN: the columns stay distinct and every call ends (a row whose entries
// are all +Inf or NaN gets a column left over).
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
			if j1 == 0 {
				// No unused column at a finite (or comparable) reduced
				// cost: row i0's entries are all +Inf or NaN, or ±Inf
				// made the potentials NaN. Every unused column is then as
				// bad as another: take the first, and leave the
				// potentials alone. (Searching on would never end; with
				// this each step uses a new column, so a phase ends
				// within m steps.)
				for jj := 1; jj <= m; jj++ {
					if !used[jj] {
						j1 = jj
						break
					}
				}
				way[j1], delta = float64(j0), 0
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

// sparseRows is an assignment problem given by its listed entries, row by
// row (CSR, columns ascending within a row); every other entry is rest.
type sparseRows struct {
	start []int32   // row r's entries are [start[r], start[r+1])
	col   []int32   // their columns, 0-based
	val   []float64 // their costs
}

// hungarianSparse is hungarian on the n×m matrix of a (every entry not
// listed is rest), with the same result, ties included: it is the same
// shortest-augmenting-path algorithm, step for step, but scans only the
// entries below rest. An entry ≥ rest (listed or not) reaches the
// algorithm's choices only through minv of its column, never lower than a
// bound L of the phase (rest − u − the largest v, less the phase's
// deltas); while every step's delta stays clearly below L, no such entry
// can be the minimum or change a chosen column's minv or way, so the dense
// algorithm makes the same choices with the same arithmetic. Where a step
// comes near L (or anything is NaN or infinite), it solves the dense matrix
// with hungarian instead. In J4's blocks every row has a column of its own
// at ≤ rootCost and rest is noSpanCost, so the fallback does not run.
//
// It writes the column of every row into out (len n); sc holds its arrays.
func hungarianSparse(a *sparseRows, n, m int, rest float64, out []int, sc *sparseScratch) {
	// The arrays are hungarian's (1-based, column 0 the sentinel), reset
	// where the previous solve touched them.
	sc.grow(m)
	u, v, p, way, minv, used := sc.u, sc.v, sc.p, sc.way, sc.minv, sc.used
	for i := 0; i <= n; i++ {
		u[i] = 0
	}
	for jj := 0; jj <= m; jj++ {
		v[jj], p[jj], way[jj], minv[jj], used[jj], sc.in[jj] = 0, 0, 0, math.Inf(1), false, false
	}
	vmax := 0.0 // ≥ every v so far
	touched := sc.touched[:0]
	defer func() { sc.touched = touched }()
	for i := 1; i <= n; i++ {
		// 1. A phase per row: minv and used of the columns the last
		// phase touched back to their start (the others are).
		for _, jj := range touched {
			minv[jj], used[jj], sc.in[jj] = math.Inf(1), false, false
		}
		used[0] = false
		touched = touched[:0]
		p[0] = int32(i)
		j0 := int32(0)
		bound := math.Inf(1) // L: below every minv made of an entry ≥ rest
		for {
			used[j0] = true
			i0 := p[j0]
			// 2. Row i0's entries below rest update minv (the dense
			// algorithm's cur < minv, column by column).
			ui := u[i0]
			skipped := false
			for e := a.start[i0-1]; e < a.start[i0]; e++ {
				c := a.val[e]
				if !(c < rest) {
					skipped = skipped || !math.IsNaN(c) // NaN never updates minv
					continue
				}
				jj := a.col[e] + 1
				if used[jj] {
					continue
				}
				if cur := c - ui - v[jj]; cur < minv[jj] {
					minv[jj], way[jj] = cur, float64(j0)
				}
				if !sc.in[jj] {
					sc.in[jj] = true
					touched = append(touched, jj)
					for q := len(touched) - 1; q > 0 && touched[q-1] > jj; q-- {
						touched[q-1], touched[q] = jj, touched[q-1]
					}
				}
			}
			if skipped || int(a.start[i0]-a.start[i0-1]) < m {
				bound = math.Min(bound, rest-ui-vmax)
			}
			// 3. The smallest minv of an unused column, the first among
			// equals (columns ascending, as the dense scan).
			delta, j1 := math.Inf(1), int32(0)
			for _, jj := range touched {
				if !used[jj] && minv[jj] < delta {
					delta, j1 = minv[jj], jj
				}
			}
			// 4. Near the bound (or not finite): the dense algorithm.
			if math.IsInf(delta, 0) || math.IsNaN(bound) ||
				!math.IsInf(bound, 1) && !(delta < bound-1e-6*math.Max(1, math.Abs(bound))) {
				sc.dense(a, n, m, rest, out)
				return
			}
			// 5. Potentials: used columns and their rows, the rest's minv.
			u[p[0]] += delta
			v[0] -= delta
			for _, jj := range touched {
				if used[jj] {
					u[p[jj]] += delta
					v[jj] -= delta
					vmax = math.Max(vmax, v[jj])
				} else {
					minv[jj] -= delta
				}
			}
			vmax = math.Max(vmax, v[0])
			bound -= delta
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		// 6. Augment along the path.
		for j0 != 0 {
			j1 := int32(way[j0])
			p[j0] = p[j1]
			j0 = j1
		}
	}
	for jj := 1; jj <= m; jj++ {
		if p[jj] > 0 {
			out[p[jj]-1] = jj - 1
		}
	}
}

// sparseScratch is hungarianSparse's arrays, reused from solve to solve.
type sparseScratch struct {
	u, v, way, minv []float64
	p               []int32
	used, in        []bool
	touched         []int32
	dcost           []float64 // the dense matrix of the fallback
	hung            hungScratch
}

func (sc *sparseScratch) grow(m int) {
	if len(sc.v) < m+1 {
		k := max(m+1, 2*len(sc.v))
		sc.u, sc.v, sc.way, sc.minv = make([]float64, k), make([]float64, k), make([]float64, k), make([]float64, k)
		sc.p, sc.used, sc.in = make([]int32, k), make([]bool, k), make([]bool, k)
	}
}

// dense solves a with hungarian (every entry written out).
func (sc *sparseScratch) dense(a *sparseRows, n, m int, rest float64, out []int) {
	c := slices.Grow(sc.dcost[:0], n*m)[:n*m]
	sc.dcost = c
	for x := range c {
		c[x] = rest
	}
	for r := 0; r < n; r++ {
		for e := a.start[r]; e < a.start[r+1]; e++ {
			c[r*m+int(a.col[e])] = a.val[e]
		}
	}
	h := sc.hung.grow(m)
	copy(out, hungarian(c, n, m, h.u, h.v, h.p, h.way, h.minv, h.used))
}
