package convolution

import (
	"math"
	"math/bits"
	"math/cmplx"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"wap5/internal/p5sim"

	"wap5/trace"
)

func chainSig(p *trace.Pattern) string {
	var b strings.Builder
	b.WriteString(p.Root.From)
	for s := p.Root; s != nil; {
		b.WriteString(">" + s.To)
		if len(s.Children) == 0 {
			break
		}
		s = s.Children[0]
	}
	return b.String()
}

func findChain(t *testing.T, r *Result, sig string) *trace.Pattern {
	t.Helper()
	for _, p := range r.Patterns {
		if chainSig(p) == sig {
			return p
		}
	}
	var have []string
	for i, p := range r.Patterns {
		if i == 12 {
			break
		}
		have = append(have, chainSig(p))
	}
	t.Fatalf("no path %s; have:\n%s", sig, strings.Join(have, "\n"))
	return nil
}

// edgeOf returns the chain's i-th edge.
func edgeOf(p *trace.Pattern, i int) *trace.Step {
	s := p.Root
	for ; i > 0; i-- {
		s = s.Children[0]
	}
	return s
}

func TestAddedDelay(t *testing.T) {
	// Project 5 §7.2, Figure 13: the 200 ms shows on the WS2→AP1 edge.
	const sig = "CLIENT>WS2>AUTH>WS2>AP1>DB>AP1>WS2>CLIENT"
	delay := map[bool]float64{}
	for _, added := range []bool{false, true} {
		tr := p5sim.Generate(p5sim.Options{Tracelets: p5sim.MultiTier(added), Workers: 4, Instances: 4000, Think: p5sim.MS(300), Jitter: 0.1, Net: p5sim.MS(0.5), Seed: 1})
		r := Convolve(tr, DefaultOptions())
		t.Logf("added=%v: μ=%v, S=%d, %d correlations, %d paths", added, r.Quantum, r.Quanta, r.Correlations, len(r.Patterns))
		p := findChain(t, r, sig)
		e := edgeOf(p, 3)
		if e.From != "WS2" || e.To != "AP1" || len(e.Delays) == 0 {
			t.Fatalf("edge 3 %+v", e)
		}
		delay[added] = e.Delays[0]
	}
	if d := delay[true] - delay[false]; math.Abs(d-0.2) > 0.02 {
		t.Fatalf("WS2→AP1 delay grew by %.3f s (%.3f → %.3f), want 0.200", d, delay[false], delay[true])
	}
}

// mailTrace is a free-form trace in the style of Project 5's Received-header
// experiment (§7.1.3): messages relayed along fixed server chains, each hop
// after a short delay or, now and then, a queueing delay of about 10 s.
func mailTrace(seed uint64, routes [][]string, weights []int, n int) *trace.Trace {
	r := rand.New(rand.NewPCG(seed, 11))
	tr := trace.New()
	total := 0
	for _, w := range weights {
		total += w
	}
	ts := int64(1_700_000_000e9)
	for i := 0; i < n; i++ {
		ts += int64(r.ExpFloat64() * 20e9) // a message every 20 s
		x := r.IntN(total)
		ri := 0
		for x >= weights[ri] {
			x -= weights[ri]
			ri++
		}
		at := ts
		route := routes[ri]
		for h := 0; h+1 < len(route); h++ {
			if h > 0 {
				if r.Float64() < 0.2 {
					at += int64((10 + r.Float64()) * 1e9)
				} else {
					at += int64(r.Float64() * 1e9)
				}
			}
			tr.Add(trace.Message{Send: at, Recv: at, Src: tr.Node(route[h]), Dst: tr.Node(route[h+1]), ID: trace.NoRef, Call: trace.NoRef, Truth: int32(ri)})
		}
	}
	tr.Sort()
	return tr
}

func TestFreeFormMail(t *testing.T) {
	routes := [][]string{
		{"ext1", "gw", "hub", "mbox"},
		{"ext2", "gw", "hub", "mbox"},
		{"ext3", "gw2", "hub", "mbox"},
		{"ext4", "gw2", "relay", "mbox"},
		{"ext5", "gw", "relay", "hub", "mbox"},
	}
	tr := mailTrace(4, routes, []int{30, 25, 20, 15, 10}, 6000)
	opt := DefaultOptions()
	opt.Quantum = time.Second
	r := Convolve(tr, opt)
	isReal := func(sig string) bool {
		for _, rt := range routes {
			if strings.HasPrefix(strings.Join(rt, ">"), sig) {
				return true
			}
		}
		return false
	}
	// Every real route is found in full.
	for _, rt := range routes {
		p := findChain(t, r, strings.Join(rt, ">"))
		if p.Count < 300 {
			t.Errorf("%s: count %d", strings.Join(rt, ">"), p.Count)
		}
	}
	// False positives, if any, carry few messages (§7.5.7).
	for _, p := range r.Patterns {
		if !isReal(chainSig(p)) && p.Count >= 100 {
			t.Errorf("false path %s with %d messages", chainSig(p), p.Count)
		}
	}
	// The 10 s queueing delays show as secondary spikes.
	p := findChain(t, r, "ext1>gw>hub>mbox")
	if e := edgeOf(p, 1); len(e.Delays) < 2 || math.Abs(e.Delays[1]-10.5) > 1 {
		t.Errorf("gw→hub delays %v, want a secondary spike near 10.5 s", e.Delays)
	}
}

func TestCorrelationMatchesDirectSum(t *testing.T) {
	tr := mailTrace(1, [][]string{{"a", "b", "c"}}, []int{1}, 300)
	opt := DefaultOptions()
	opt.Quantum = time.Second
	c := newConvolver(tr, opt)
	b, _ := tr.LookupNode("b")
	cn, _ := tr.LookupNode("c")
	v := slices.Clone(c.bySrc[0][b])
	s1 := make([]float64, c.nq)
	s2 := make([]float64, c.nq)
	c.signal(s1, v, c.arrT)
	c.signal(s2, c.bySrc[b][cn], c.depT)
	// The default block size, blocks barely longer than the lags, and
	// one block holding the whole signal (powers of two, as fft.go takes).
	pow2 := func(x int) int { return 1 << bits.Len(uint(x-1)) }
	for _, n := range []int{blockSize(c.nq, c.maxLag), pow2(2*c.maxLag + 2), pow2(c.nq + 2*c.maxLag)} {
		c.setBlocks(n)
		c.spectra = map[edge][][]complex128{}
		got := c.correlate(nil, c.transform(v), edge{b, cn})
		for d := -c.maxLag; d <= c.maxLag; d++ {
			want := 0.0
			for q := 0; q < c.nq; q++ {
				if q+d >= 0 && q+d < c.nq {
					want += s1[q] * s2[q+d]
				}
			}
			if math.Abs(got[d+c.maxLag]-want) > 1e-6*math.Max(1, want) {
				t.Errorf("n = %d (%d blocks): C(%d) = %v, want %v", n, c.nb, d, got[d+c.maxLag], want)
			}
		}
	}
}

func TestSpikes(t *testing.T) {
	c := &convolver{opt: DefaultOptions(), maxLag: 50, tolQ: 1}
	corr := make([]float64, 101)
	for i := range corr {
		corr[i] = float64(i % 3) // background
	}
	corr[50+7], corr[50+8], corr[50+9] = 60, 80, 60 // one spike at lag 8
	corr[50+20] = 70                                // a second at 20
	corr[50-30] = 90                                // a negative one: dropped
	got := c.spikes(corr)
	want := []spike{{8, 7, 9, 0}, {20, 20, 20, 0}}
	for i := range got {
		got[i].excess = 0
	}
	if !slices.Equal(got, want) {
		t.Fatalf("spikes %v, want %v", got, want)
	}
}

func TestQuantumChoice(t *testing.T) {
	for _, tc := range []struct{ in, down, up int64 }{{1, 1, 1}, {3, 2, 5}, {7, 5, 10}, {10, 10, 10}, {4_999_999, 2_000_000, 5_000_000}} {
		if d, u := roundDown125(tc.in), roundUp125(tc.in); d != tc.down || u != tc.up {
			t.Errorf("%d: down %d up %d, want %d %d", tc.in, d, u, tc.down, tc.up)
		}
	}
	for _, tc := range []struct{ nq, maxLag, want int }{{10, 2, 16}, {1000, 100, 1024}, {50024, 2001, 16384}, {50024, 10, 1024}, {300, 10, 512}} {
		if n := blockSize(tc.nq, tc.maxLag); n != tc.want {
			t.Errorf("blockSize(%d, %d) = %d, want %d", tc.nq, tc.maxLag, n, tc.want)
		}
	}
}

func TestEmpty(t *testing.T) {
	if r := Convolve(trace.New(), DefaultOptions()); len(r.Patterns) != 0 || len(r.Warnings) != 0 {
		t.Fatalf("%+v", r)
	}
}

func TestSparseCorrelationEqualsFFT(t *testing.T) {
	tr := mailTrace(2, [][]string{{"a", "b", "c"}, {"d", "b", "c"}}, []int{2, 1}, 500)
	opt := DefaultOptions()
	opt.Quantum = 2 * time.Second
	c := newConvolver(tr, opt)
	b, _ := tr.LookupNode("b")
	cn, _ := tr.LookupNode("c")
	a, _ := tr.LookupNode("a")
	v := slices.Clone(c.bySrc[a][b])
	sortBy(v, c.arrT)
	fft := c.correlate(nil, c.transform(v), edge{b, cn})
	direct := c.correlateSparse(nil, c.sparse(nil, v, c.arrT), c.sparseEdge(edge{b, cn}))
	dense := c.correlateDense(nil, c.sparse(nil, v, c.arrT), c.denseEdge(edge{b, cn}))
	for i := range fft {
		if math.Abs(fft[i]-direct[i]) > 1e-6*math.Max(1, direct[i]) {
			t.Fatalf("lag %d: FFT %v, direct %v", i-c.maxLag, fft[i], direct[i])
		}
		if math.Abs(dense[i]-direct[i]) > 1e-9*math.Max(1, direct[i]) {
			t.Fatalf("lag %d: dense %v, direct %v", i-c.maxLag, dense[i], direct[i])
		}
	}
}

func TestMedian(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 200; n++ {
		for range 5 {
			d := make([]int64, n)
			for i := range d {
				d[i] = r.Int64N(int64(n/3 + 1))
			}
			want := slices.Sorted(slices.Values(d))[n/2]
			if got := median(d); got != want {
				t.Fatalf("n %d: median %d, want %d", n, got, want)
			}
		}
	}
}

// matchSlow is step 5's matching as first written: a scan over the
// departures, skipping matched ones one by one.
func matchSlow(arrT, depT []int64, v []int32, vUsed []bool, z []int32, used []bool, lo, hi int64) (out []int32, from []int, delay []int64) {
	p := 0
	for vi, i := range v {
		if vUsed[vi] {
			continue
		}
		a := arrT[i]
		for p < len(z) && depT[z[p]]-a < lo {
			p++
		}
		for q := p; q < len(z); q++ {
			d := depT[z[q]] - a
			if d > hi {
				break
			}
			if !used[q] {
				used[q] = true
				out, from, delay = append(out, z[q]), append(from, vi), append(delay, d)
				break
			}
		}
	}
	return out, from, delay
}

func TestMatchSkipsMatched(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		n := 1 + r.IntN(60)
		c := &convolver{arrT: make([]int64, 2*n), depT: make([]int64, 2*n)}
		var v, z []int32
		for i := range n {
			c.arrT[i] = r.Int64N(100)
			c.depT[n+i] = r.Int64N(120)
			v, z = append(v, int32(i)), append(z, int32(n+i))
		}
		sortBy(v, c.arrT)
		sortBy(z, c.depT)
		vUsed, vUsed2 := make([]bool, n), make([]bool, n)
		used := make([]bool, n)
		next := make([]int32, n+1)
		freeAll(next)
		// Several spikes in a row, as processNode calls it.
		for s := range 4 {
			lo := r.Int64N(20) - 5
			hi := lo + r.Int64N(15)
			o1, f1, d1 := matchSlow(c.arrT, c.depT, v, vUsed, z, used, lo, hi)
			vt, zt := make([]int64, n), make([]int64, n)
			for i := range n {
				vt[i], zt[i] = c.arrT[v[i]], c.depT[z[i]]
			}
			o2, f2, d2 := match(nil, nil, nil, vt, vUsed2, z, zt, next, lo, hi)
			if !slices.Equal(o1, o2) || !slices.Equal(f1, f2) || !slices.Equal(d1, d2) {
				t.Fatalf("round %d spike %d: match %v %v %v, want %v %v %v", round, s, o2, f2, d2, o1, f1, d1)
			}
			for _, vi := range f1 {
				vUsed[vi], vUsed2[vi] = true, true
			}
		}
	}
}

func TestRealFFT(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{2, 4, 8, 16, 64, 1024, 4096} {
		f := newRealFFT(n)
		x := make([]float64, n)
		for i := range x {
			x[i] = r.Float64()*4 - 1
		}
		got := f.Coefficients(make([]complex128, n/2+1), x)
		for k := range n/2 + 1 {
			var want complex128
			for j, v := range x {
				s, c := math.Sincos(-2 * math.Pi * float64(j*k%n) / float64(n))
				want += complex(v*c, v*s)
			}
			if d := cmplx.Abs(got[k] - want); d > 1e-9*float64(n) {
				t.Fatalf("n %d: X[%d] = %v, want %v", n, k, got[k], want)
			}
		}
		back := f.Sequence(make([]float64, n), got)
		for j := range x {
			if d := math.Abs(back[j]/float64(n) - x[j]); d > 1e-12*float64(n) {
				t.Fatalf("n %d: inverse[%d] = %v, want %v", n, j, back[j]/float64(n), x[j])
			}
		}
	}
}

// transformRadix2 is transform one stage per pass (the reference the
// two-stage passes must match to the bit).
func (f *realFFT) transformRadix2(z []complex128, inverse bool) {
	h := len(z)
	for i, r := range f.rev {
		if int(r) > i {
			z[i], z[r] = z[r], z[i]
		}
	}
	for s := 0; s+1 < h; s += 2 {
		a, b := z[s], z[s+1]
		z[s], z[s+1] = a+b, a-b
	}
	for s := 0; s+3 < h; s += 4 {
		a0, a1, b0, b1 := z[s], z[s+1], z[s+2], z[s+3]
		u1 := complex(imag(b1), -real(b1))
		if inverse {
			u1 = -u1
		}
		z[s], z[s+2] = a0+b0, a0-b0
		z[s+1], z[s+3] = a1+u1, a1-u1
	}
	all := f.tw
	if inverse {
		all = f.itw
	}
	off := 0
	for m := 8; m <= h; m <<= 1 {
		half := m / 2
		tw := all[off : off+half : off+half]
		off += half
		for s := 0; s < h; s += m {
			a := z[s : s+half : s+half]
			b := z[s+half : s+m : s+m]
			for j, t := range tw {
				u := b[j] * t
				b[j] = a[j] - u
				a[j] += u
			}
		}
	}
}

func TestFFTTwoStagePasses(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{2, 4, 8, 16, 32, 64, 128, 1024, 2048, 16384} {
		f := newRealFFT(n)
		for _, inv := range []bool{false, true} {
			z := make([]complex128, n/2)
			for i := range z {
				z[i] = complex(r.Float64()*2-1, r.Float64()*2-1)
			}
			want := slices.Clone(z)
			f.transformRadix2(want, inv)
			f.transform(z, inv)
			if !slices.Equal(z, want) {
				t.Fatalf("n %d inverse %v: two-stage passes differ from one stage per pass", n, inv)
			}
		}
	}
}
