package linking

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
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

// sparseCase is an assignment problem for hungarianSparse: its listed
// entries and the value of the rest.
type sparseCase struct {
	n, m int
	rest float64
	rows sparseRows
}

// dense is the case's full matrix, as hungarian takes it.
func (c *sparseCase) dense() []float64 {
	d := make([]float64, c.n*c.m)
	for x := range d {
		d[x] = c.rest
	}
	for r := 0; r < c.n; r++ {
		for e := c.rows.start[r]; e < c.rows.start[r+1]; e++ {
			d[r*c.m+int(c.rows.col[e])] = c.rows.val[e]
		}
	}
	return d
}

// checkSparse compares hungarianSparse with hungarian on c: the same
// column for every row.
func checkSparse(t *testing.T, c *sparseCase, sc *sparseScratch) {
	t.Helper()
	h := newHungScratch(c.m)
	want := hungarian(c.dense(), c.n, c.m, h.u, h.v, h.p, h.way, h.minv, h.used)
	got := make([]int, c.n)
	hungarianSparse(&c.rows, c.n, c.m, c.rest, got, sc)
	for r := range want {
		if got[r] != want[r] {
			t.Fatalf("%d×%d rest %v rows %+v: sparse %v, dense %v", c.n, c.m, c.rest, c.rows, got, want)
		}
	}
}

// blockCase is a J4 block as assignByDest builds it: n rows, spans of
// slots columns each, every row admissible to a few spans (neighbours
// mostly: blocks overlap in time), its own column last at ≤ rootCost, the
// rest noSpanCost. vals draws an entry (ties, negatives, noSpanCost,
// infinities as the caller wants).
func blockCase(r *rand.Rand, n, spans, slots int, vals func() float64) *sparseCase {
	m := spans*slots + n
	c := &sparseCase{n: n, m: m, rest: noSpanCost}
	c.rows.start = []int32{0}
	for i := 0; i < n; i++ {
		lo := max(0, i*spans/n-2)
		k := r.IntN(4)
		own := float64(rootCost)
		for s := lo; s < min(spans, lo+k); s++ {
			var last float64
			for q := 0; q < slots; q++ {
				last = vals()
				c.rows.col = append(c.rows.col, int32(s*slots+q))
				c.rows.val = append(c.rows.val, last)
			}
			if v := last + overCapacity; v < own {
				own = v
			}
		}
		c.rows.col = append(c.rows.col, int32(spans*slots+i))
		c.rows.val = append(c.rows.val, own)
		c.rows.start = append(c.rows.start, int32(len(c.rows.col)))
	}
	return c
}

// denseCase lists every entry of an n×m matrix (rest never read, or as
// given for the columns left out with probability drop).
func denseCase(r *rand.Rand, n, m int, rest, drop float64, vals func() float64) *sparseCase {
	c := &sparseCase{n: n, m: m, rest: rest}
	c.rows.start = []int32{0}
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			if j != i && r.Float64() < drop { // the diagonal stays listed: a finite assignment exists
				continue
			}
			c.rows.col = append(c.rows.col, int32(j))
			c.rows.val = append(c.rows.val, vals())
		}
		c.rows.start = append(c.rows.start, int32(len(c.rows.col)))
	}
	return c
}

func TestHungarianSparseMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	sc := &sparseScratch{}
	ties := func() float64 { return float64(r.IntN(7) - 2) }
	fine := func() float64 { return math.Round(r.NormFloat64()*400) / 100 }
	wide := func() float64 {
		switch r.IntN(8) {
		case 0:
			return noSpanCost
		case 1:
			return -30 - r.Float64()*1e4
		case 2:
			return r.Float64() * 5e5
		}
		return r.Float64() * 50
	}
	for trial := 0; trial < 3000; trial++ {
		vals := []func() float64{ties, fine, wide}[trial%3]
		n := 1 + r.IntN(24)
		slots := 1 + r.IntN(3)
		checkSparse(t, blockCase(r, n, 1+r.IntN(n+4), slots, vals), sc)
	}
	// Dense and partly listed matrices, rest small enough to matter: the
	// fallback.
	for trial := 0; trial < 2000; trial++ {
		n := 1 + r.IntN(6)
		m := n + r.IntN(4)
		vals := []func() float64{ties, fine}[trial%2]
		rest := []float64{math.Inf(1), 3, 0, noSpanCost}[r.IntN(4)]
		drop := []float64{0, 0.3, 0.7}[r.IntN(3)]
		checkSparse(t, denseCase(r, n, m, rest, drop, vals), sc)
	}
}

func TestHungarianSparseDegenerate(t *testing.T) {
	sc := &sparseScratch{}
	inf := math.Inf(1)
	mk := func(n, m int, rest float64, rows ...[]float64) *sparseCase {
		c := &sparseCase{n: n, m: m, rest: rest, rows: sparseRows{start: []int32{0}}}
		for _, row := range rows {
			for j, v := range row {
				if v != rest {
					c.rows.col = append(c.rows.col, int32(j))
					c.rows.val = append(c.rows.val, v)
				}
			}
			c.rows.start = append(c.rows.start, int32(len(c.rows.col)))
		}
		return c
	}
	cases := []*sparseCase{
		mk(1, 1, noSpanCost, []float64{5}),
		mk(1, 5, noSpanCost, []float64{3, 3, 3, 3, 3}),           // 1×n, all tied: the first
		mk(1, 5, noSpanCost, []float64{noSpanCost, 7, 2, 2, 40}), // 1×n, tie after a larger one
		mk(2, 4, noSpanCost, []float64{1, 1, 40, noSpanCost}, []float64{1, 1, noSpanCost, 40}),
		mk(3, 3, inf, []float64{1, inf, inf}, []float64{inf, 1, inf}, []float64{inf, inf, 1}), // +Inf around a diagonal
		mk(3, 3, 0, []float64{0, 0, 0}, []float64{0, 0, 0}, []float64{0, 0, 0}),               // every entry rest
		mk(2, 3, noSpanCost, []float64{math.NaN(), 2, 40}, []float64{2, math.NaN(), noSpanCost}),
		mk(2, 2, noSpanCost, []float64{-1e300, 1e300}, []float64{1e300, -1e300}),
		mk(2, 4, noSpanCost, []float64{-5, -5, 15, noSpanCost}, []float64{-5, -5, noSpanCost, 15}),
	}
	for _, c := range cases {
		checkSparse(t, c, sc)
	}
}

// FuzzHungarianSparse: any J4-shaped block (and any dense matrix with a
// listed diagonal) from the fuzzer's bytes; the sparse solver must agree
// with the dense one.
func FuzzHungarianSparse(f *testing.F) {
	f.Add(uint64(1), uint8(5), uint8(3), uint8(1), false)
	f.Add(uint64(7), uint8(24), uint8(20), uint8(2), false)
	f.Add(uint64(3), uint8(4), uint8(6), uint8(3), true)
	f.Fuzz(func(t *testing.T, seed uint64, n, spans, slots uint8, dense bool) {
		r := rand.New(rand.NewPCG(seed, seed>>7))
		nn := 1 + int(n)%24
		vals := func() float64 {
			switch r.IntN(10) {
			case 0:
				return noSpanCost
			case 1:
				return float64(r.IntN(5))
			case 2:
				return -r.Float64() * 1e3
			}
			return r.Float64() * 60
		}
		if dense {
			nn = 1 + nn%6
			checkSparse(t, denseCase(r, nn, nn+int(spans)%4, []float64{math.Inf(1), 2, noSpanCost}[int(slots)%3], 0.4, vals), &sparseScratch{})
			return
		}
		checkSparse(t, blockCase(r, nn, 1+int(spans)%(nn+4), 1+int(slots)%3, vals), &sparseScratch{})
	})
}

// TestHungarianEnds: rows with no finite entry (all +Inf, all NaN) and −Inf
// entries used to make hungarian search forever; now every call ends with
// distinct columns, and the rows that have finite entries still get their
// cheapest free ones.
func TestHungarianEnds(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name string
		n, m int
		cost []float64
		want map[int]int // row → column, where the answer is determined
	}{
		{"+Inf row first", 2, 3, []float64{inf, inf, inf, 5, 1, 9}, map[int]int{1: 1}},
		{"+Inf row last", 2, 3, []float64{5, 1, 9, inf, inf, inf}, map[int]int{0: 1}},
		{"NaN row", 2, 2, []float64{nan, nan, 3, 4}, nil},
		{"every entry +Inf", 3, 3, []float64{inf, inf, inf, inf, inf, inf, inf, inf, inf}, nil},
		{"−Inf entries", 2, 2, []float64{math.Inf(-1), 0, math.Inf(-1), 0}, nil},
		{"+Inf and −Inf", 3, 4, []float64{inf, math.Inf(-1), inf, 1, inf, inf, inf, inf, math.Inf(-1), 2, nan, 0}, nil},
	}
	for _, c := range cases {
		h := newHungScratch(c.m)
		done := make(chan []int, 1)
		go func() { done <- hungarian(c.cost, c.n, c.m, h.u, h.v, h.p, h.way, h.minv, h.used) }()
		select {
		case col := <-done:
			seen := map[int]bool{}
			for r, j := range col {
				if j < 0 || j >= c.m || seen[j] {
					t.Errorf("%s: columns %v: not distinct columns of %d", c.name, col, c.m)
					break
				}
				seen[j] = true
				if w, ok := c.want[r]; ok && j != w {
					t.Errorf("%s: row %d got column %d, want %d (its cheapest)", c.name, r, j, w)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: hungarian did not end in 10 s", c.name)
		}
	}
}
