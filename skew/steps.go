package skew

import (
	"math"
	"sort"

	"wap5/trace"
)

// pairStep is a clock step seen in one pair's series (step 3): the relative
// offset Δ = θ_b − θ_a jumps by jump at x (on the pair's axis, a's clock),
// located within ±unc.
type pairStep struct {
	x, unc float64
	jump   float64
	before float64 // Δ just before the step, to place it on b's clock
}

// sliceX returns the points of sorted pts with lo ≤ x < hi.
func sliceX(pts []point, lo, hi float64) []point {
	i := sort.Search(len(pts), func(i int) bool { return pts[i].x >= lo })
	j := sort.Search(len(pts), func(j int) bool { return pts[j].x >= hi })
	if j < i {
		j = i
	}
	return pts[i:j]
}

func meanX(pts []point) float64 {
	s := 0.0
	for _, p := range pts {
		s += p.x
	}
	return s / float64(len(pts))
}

// fitLine is the LP lower envelope of sorted pts (steps 2a–2b).
func fitLine(pts []point, buf *[]point) line {
	*buf = lowerHull(pts, *buf)
	return envelope(*buf, meanX(pts))
}

// windowMins returns, per window of the given width from start, the minimum
// residual above l (+Inf for empty windows).
func windowMins(pts []point, l line, start, width float64, n int) []float64 {
	r := make([]float64, n)
	for i := range r {
		r[i] = math.Inf(1)
	}
	for _, p := range pts {
		w := int((p.x - start) / width)
		if w < 0 {
			w = 0
		} else if w >= n {
			w = n - 1
		}
		if v := p.d - l.at(p.x); v < r[w] {
			r[w] = v
		}
	}
	return r
}

// changePoint fits u = a + b·t + J·[i ≥ k] by least squares for every k
// with at least minSide points on each side and returns the best k, its J
// and the robust scale (1.4826·MAD) of the residuals.
func changePoint(t, u []float64, minSide int) (k int, jump, sigma float64) {
	n := len(t)
	if n < 2*minSide {
		return -1, 0, 0
	}
	tm := 0.0
	for _, v := range t {
		tm += v
	}
	tm /= float64(n)
	ts := 0.0
	for _, v := range t {
		ts = math.Max(ts, math.Abs(v-tm))
	}
	if ts == 0 {
		ts = 1
	}
	tt := make([]float64, n)
	var S, St, Stt, Su, Stu, Suu float64
	for i := range t {
		tt[i] = (t[i] - tm) / ts
		S++
		St += tt[i]
		Stt += tt[i] * tt[i]
		Su += u[i]
		Stu += tt[i] * u[i]
		Suu += u[i] * u[i]
	}
	// suffix sums over the right part
	var nR, StR, SuR float64
	best, bestRSS := -1, math.Inf(1)
	var bestP [3]float64
	for i := n - 1; i >= minSide; i-- {
		nR++
		StR += tt[i]
		SuR += u[i]
		if n-i < minSide {
			continue
		}
		p, ok := solve3([3][3]float64{{S, St, nR}, {St, Stt, StR}, {nR, StR, nR}}, [3]float64{Su, Stu, SuR})
		if !ok {
			continue
		}
		rss := Suu - (p[0]*Su + p[1]*Stu + p[2]*SuR)
		if rss < bestRSS {
			best, bestRSS, bestP = i, rss, p
		}
	}
	if best < 0 {
		return -1, 0, 0
	}
	res := make([]float64, n)
	for i := range res {
		f := bestP[0] + bestP[1]*tt[i]
		if i >= best {
			f += bestP[2]
		}
		res[i] = math.Abs(u[i] - f)
	}
	return best, bestP[2], 1.4826 * median(res)
}

// jumpAt is the J of the same model with k fixed.
func jumpAt(t, u []float64, k int) float64 {
	var S, St, Stt, Su, Stu, nR, StR, SuR float64
	for i := range t {
		S++
		St += t[i]
		Stt += t[i] * t[i]
		Su += u[i]
		Stu += t[i] * u[i]
		if i >= k {
			nR++
			StR += t[i]
			SuR += u[i]
		}
	}
	p, _ := solve3([3][3]float64{{S, St, nR}, {St, Stt, StR}, {nR, StR, nR}}, [3]float64{Su, Stu, SuR})
	return p[2]
}

func solve3(m [3][3]float64, r [3]float64) ([3]float64, bool) {
	det := func(m [3][3]float64) float64 {
		return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
			m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
			m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
	}
	d := det(m)
	if d == 0 || math.IsNaN(d) || math.Abs(d) < 1e-12*math.Abs(m[0][0]*m[1][1]*m[2][2]) {
		return [3]float64{}, false
	}
	var p [3]float64
	for c := 0; c < 3; c++ {
		mc := m
		for row := 0; row < 3; row++ {
			mc[row][c] = r[row]
		}
		p[c] = det(mc) / d
	}
	return p, true
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// detectSteps finds clock steps in one pair's series (step 3), following
// Paxson: a step of one clock moves the two directions' delays by the same
// amount in opposite senses (a route change moves one direction, or both the
// same way). The series is cut into windows; the minimum residuals of each
// direction above its lower envelope are differenced, and a change point of
// that difference (on a common linear trend) of at least minStep, large
// against its noise and of opposite sign in the two directions, is a step.
// Its place is then narrowed down with the samples near it; the parts on
// either side are searched again (binary segmentation).
func detectSteps(s *series, minStep float64) []pairStep {
	var out []pairStep
	var buf []point
	var rec func(lo, hi float64, depth int)
	rec = func(lo, hi float64, depth int) {
		if depth > 4 {
			return
		}
		p0, p1 := sliceX(s.dir[0], lo, hi), sliceX(s.dir[1], lo, hi)
		nw := min(len(p0), len(p1)) / 4
		if nw < 12 {
			return
		}
		nw = min(nw, 128)
		start := math.Min(p0[0].x, p1[0].x)
		end := math.Max(p0[len(p0)-1].x, p1[len(p1)-1].x)
		width := (end - start) / float64(nw)
		if width <= 0 {
			return
		}
		// 3a: minimum residual above each direction's envelope per window
		l0, l1 := fitLine(p0, &buf), fitLine(p1, &buf)
		r0 := windowMins(p0, l0, start, width, nw)
		r1 := windowMins(p1, l1, start, width, nw)
		var t, u, u0, u1 []float64
		var wi []int
		for w := 0; w < nw; w++ {
			if math.IsInf(r0[w], 1) || math.IsInf(r1[w], 1) {
				continue
			}
			t = append(t, start+(float64(w)+0.5)*width)
			u = append(u, r0[w]-r1[w])
			u0 = append(u0, r0[w])
			u1 = append(u1, r1[w])
			wi = append(wi, w)
		}
		// 3b: a change point of their difference, opposite in the two ways
		k, J, sigma := changePoint(t, u, 4)
		if k < 0 || math.Abs(J) < 2*minStep || math.Abs(J) < 8*sigma {
			return
		}
		J0, J1 := jumpAt(t, u0, k), jumpAt(t, u1, k)
		if J0*J1 >= 0 || math.Min(math.Abs(J0), math.Abs(J1)) < 0.3*math.Max(math.Abs(J0), math.Abs(J1)) {
			return // not a clock step: one direction only, or both the same way
		}
		// The step lies in windows wi[k-1]..wi[k]; fit each side without them.
		zlo := start + float64(wi[k-1])*width
		zhi := start + float64(wi[k]+1)*width
		stepLo, stepHi := zlo, zhi
		delta := J / 2
		var before float64
		L0, L1 := sliceX(s.dir[0], lo, zlo), sliceX(s.dir[1], lo, zlo)
		R0, R1 := sliceX(s.dir[0], zhi, hi), sliceX(s.dir[1], zhi, hi)
		if len(L0) >= 4 && len(L1) >= 4 && len(R0) >= 4 && len(R1) >= 4 {
			l0L, l1L := fitLine(L0, &buf), fitLine(L1, &buf)
			l0R, l1R := fitLine(R0, &buf), fitLine(R1, &buf)
			xm := (zlo + zhi) / 2
			before = (l0L.at(xm) - l1L.at(xm)) / 2
			delta = (l0R.at(xm)-l1R.at(xm))/2 - before
			// Samples in the zone that only fit one side place the step:
			// a→b delays rise by δ at the step and b→a delays fall by δ.
			ad := math.Abs(delta) / 2
			maxBefore, minAfter := math.Inf(-1), math.Inf(1)
			for _, p := range sliceX(s.dir[0], zlo, zhi) {
				if delta > 0 && p.d < l0R.at(p.x)-ad {
					maxBefore = math.Max(maxBefore, p.x)
				} else if delta < 0 && p.d < l0L.at(p.x)-ad {
					minAfter = math.Min(minAfter, p.x)
				}
			}
			for _, p := range sliceX(s.dir[1], zlo, zhi) {
				if delta > 0 && p.d < l1L.at(p.x)-ad {
					minAfter = math.Min(minAfter, p.x)
				} else if delta < 0 && p.d < l1R.at(p.x)-ad {
					maxBefore = math.Max(maxBefore, p.x)
				}
			}
			lo2, hi2 := math.Max(zlo, maxBefore), math.Min(zhi, minAfter)
			if lo2 < hi2 {
				stepLo, stepHi = lo2, hi2
			}
		}
		if math.Abs(delta) < minStep {
			return
		}
		out = append(out, pairStep{x: (stepLo + stepHi) / 2, unc: (stepHi - stepLo) / 2, jump: delta, before: before})
		rec(lo, stepLo, depth+1)
		rec(math.Nextafter(stepHi, math.Inf(1)), hi, depth+1)
	}
	rec(math.Inf(-1), math.Inf(1), 0)
	sort.Slice(out, func(i, j int) bool { return out[i].x < out[j].x })
	return out
}

// attributeSteps decides whose clock stepped (step 3c). A step of node n's
// clock shows in all of n's pairs that have samples around it, so each pair
// step goes to the end whose other pairs agree best (the share of its pairs
// covering that time that show the same jump); a tie goes to the node that
// is not the reference. The steps found are added to nsteps (node-local
// times, sorted).
func (acc *Accumulator) attributeSteps(t *trace.Trace, res *Result, pairs []*series, deltaC func(int, float64) float64, minStep float64, nsteps [][]nodeStep) {
	type pstep struct {
		pair    int
		st      pairStep
		claimed bool
	}
	var all []*pstep
	byNode := map[trace.NodeID][]int{} // pair indices per node
	for k, s := range pairs {
		byNode[s.a] = append(byNode[s.a], k)
		byNode[s.b] = append(byNode[s.b], k)
		for _, st := range detectSteps(s, minStep) {
			all = append(all, &pstep{pair: k, st: st})
		}
	}
	if len(all) == 0 {
		return
	}
	// local time and jump of node n if step p were n's
	view := func(p *pstep, n trace.NodeID) (float64, float64) {
		s := pairs[p.pair]
		if n == s.a {
			return float64(s.base) + p.st.x, -p.st.jump
		}
		return float64(s.base) + p.st.x + p.st.before, p.st.jump
	}
	stepsOf := map[int][]*pstep{}
	for _, p := range all {
		stepsOf[p.pair] = append(stepsOf[p.pair], p)
	}
	match := func(n trace.NodeID, tl, j, unc float64, q *pstep) bool {
		tq, jq := view(q, n)
		return math.Abs(tq-tl) <= unc+q.st.unc+1e6+math.Abs(j) && math.Abs(jq-j) <= 0.25*math.Abs(j)+minStep
	}
	score := func(n trace.NodeID, p *pstep) float64 {
		tl, j := view(p, n)
		support, cover := 0, 0
		for _, k := range byNode[n] {
			s := pairs[k]
			x := tl - float64(s.base) // on the pair's axis, if n == s.a
			if n == s.b {
				x -= deltaC(k, x)
			}
			if len(sliceX(s.dir[0], math.Inf(-1), x)) >= 24 && len(sliceX(s.dir[0], x, math.Inf(1))) >= 24 &&
				len(sliceX(s.dir[1], math.Inf(-1), x)) >= 24 && len(sliceX(s.dir[1], x, math.Inf(1))) >= 24 {
				cover++
			}
			for _, q := range stepsOf[k] {
				if match(n, tl, j, p.st.unc, q) {
					support++
					break
				}
			}
		}
		return float64(support) / float64(max(cover, 1))
	}
	sort.Slice(all, func(i, j int) bool { return math.Abs(all[i].st.jump) > math.Abs(all[j].st.jump) })
	for _, p := range all {
		if p.claimed {
			continue
		}
		s := pairs[p.pair]
		sa, sb := score(s.a, p), score(s.b, p)
		n := s.b
		switch {
		case sa > sb:
			n = s.a
		case sa == sb:
			if s.b == res.Reference || (res.Reference < 0 && len(byNode[s.b]) > len(byNode[s.a])) {
				n = s.a
			}
			res.warnf("clock step of %.6f s in pair %s–%s at %s: cannot tell whose clock stepped; attributed to %s",
				p.st.jump/1e9, t.NodeName(s.a), t.NodeName(s.b), trace.FormatTime(s.base+int64(p.st.x)), t.NodeName(n))
		}
		tl, j := view(p, n)
		best := nodeStep{t: int64(math.Round(tl)), unc: p.st.unc, jump: j}
		for _, k := range byNode[n] {
			for _, q := range stepsOf[k] {
				if !q.claimed && match(n, tl, j, p.st.unc, q) {
					q.claimed = true
					if q.st.unc < best.unc {
						tq, _ := view(q, n)
						best.t, best.unc = int64(math.Round(tq)), q.st.unc
					}
				}
			}
		}
		p.claimed = true
		nsteps[n] = append(nsteps[n], best)
		res.warnf("clock step: %s's clock jumps by %+.6f s at %s (its own clock)", t.NodeName(n), j/1e9, trace.FormatTime(best.t))
	}
	for _, sts := range nsteps {
		sort.Slice(sts, func(i, j int) bool { return sts[i].t < sts[j].t })
	}
}
