package linking

import (
	"math"
	"slices"
	"testing"
	"time"

	"wap5/trace"
)

// figure5 is WAP5 Figure 5/6: messages from X, Y and Z arrive at B at 0, 1
// and 2 s, and B sends to C at 3 s, so d(B→C) = 1 s and λ = 1.
func figure5() *trace.Trace {
	t := trace.New()
	s := int64(time.Second)
	for i, from := range []string{"X", "Y", "Z"} {
		t.Add(trace.Message{Send: int64(i)*s - s/10, Recv: int64(i) * s, Src: t.Node(from), Dst: t.Node("B"),
			ID: int64(i + 1), Call: trace.NoRef, Truth: trace.NoRef})
	}
	t.Add(trace.Message{Send: 3 * s, Recv: 3*s + s/10, Src: t.Node("B"), Dst: t.Node("C"), ID: 4, Call: trace.NoRef, Truth: trace.NoRef})
	t.Sort()
	return t
}

func TestFigure6Weights(t *testing.T) {
	// f(t) = e^{−λt} with λ = 1 at the delays of Figure 6.
	d := modelDist(DelayExp, 1)
	for _, c := range []struct{ t, want float64 }{{1, 0.368}, {2, 0.135}, {3, 0.050}, {4, 0.018}} {
		if got := math.Exp(d.logpdf(c.t)); math.Abs(got-c.want) > 0.0005 {
			t.Errorf("f(%v) = %.4f, want %.3f", c.t, got, c.want)
		}
	}
}

func TestFigure7Probabilities(t *testing.T) {
	tr := figure5()
	l := newLinker(tr, Options{Method: MethodWAP5, Window: 10 * time.Second}.Defaults(), nil)
	rev := l.reverseEdges()
	l.step1()
	c := int32(3) // B→C
	if e := l.edge[c]; math.Abs(l.d[e]-1) > 1e-9 {
		t.Fatalf("d(B→C) = %v, want 1", l.d[e])
	}
	k := l.step2(rev, false)
	// Parents Z, Y, X and spontaneous: 0.64, 0.24, 0.09, 0.03.
	want := map[string]float64{"Z": 0.64, "Y": 0.24, "X": 0.09}
	for q := k.parStart[c]; q < k.parStart[c+1]; q++ {
		from := tr.NodeName(tr.Messages[k.parMsg[q]].Src)
		if got := float64(k.parProb[q]); math.Abs(got-want[from]) > 0.005 {
			t.Errorf("P(%s→B caused B→C) = %.3f, want %.2f", from, got, want[from])
		}
		delete(want, from)
	}
	if len(want) > 0 {
		t.Errorf("missing parents %v", want)
	}
	if got := float64(k.spont[c]); math.Abs(got-0.03) > 0.005 {
		t.Errorf("P(spontaneous) = %.3f, want 0.03", got)
	}
}

// TestFigure4Instances builds the link probability tree of WAP5 Figure 4(a)
// and checks the two instances of Figure 4(b) and their probabilities.
func TestFigure4Instances(t *testing.T) {
	tr := trace.New()
	add := func(from, to string, at int64) {
		tr.Add(trace.Message{Send: at, Recv: at + 1, Src: tr.Node(from), Dst: tr.Node(to), ID: at, Call: trace.NoRef, Truth: trace.NoRef})
	}
	add("A", "B", 10) // 0
	add("B", "C", 20) // 1
	add("B", "D", 30) // 2
	add("B", "E", 40) // 3
	add("B", "F", 50) // 4
	add("C", "G", 60) // 5
	l := newLinker(tr, Options{Method: MethodWAP5}.Defaults(), nil)
	n := len(tr.Messages)
	k := &links{spont: make([]float32, n), spontML: make([]bool, n), childStart: make([]int32, n+1)}
	k.spont[0], k.spontML[0] = 1, true
	type link struct {
		parent, child int32
		p             float32
	}
	ls := []link{{0, 1, 0.8}, {0, 2, 0.2}, {0, 3, 0.1}, {0, 4, 0.48}, {1, 5, 0.9}}
	for _, x := range ls {
		k.childStart[x.parent+1]++
	}
	for i := 0; i < n; i++ {
		k.childStart[i+1] += k.childStart[i]
	}
	for _, x := range ls {
		k.childMsg = append(k.childMsg, x.child)
		k.childProb = append(k.childProb, x.p)
		k.childML = append(k.childML, false)
	}
	in := l.buildTrees(k)
	if in.len() != 2 {
		t.Fatalf("%d instances, want 2", in.len())
	}
	got := map[int]float64{}
	for i := 0; i < in.len(); i++ {
		msgs, _ := in.get(i)
		got[len(msgs)] = in.prob[i]
	}
	// p1 = 0.8·0.9·(1−0.2)·(1−0.1)·(1−0.48) ≈ 0.270 (A→B→C→G);
	// p2 = 0.8·0.9·(1−0.2)·(1−0.1)·0.48 ≈ 0.249 (with B→F).
	if math.Abs(got[3]-0.2696) > 0.0005 || math.Abs(got[4]-0.2488) > 0.0005 {
		t.Errorf("instance probabilities %v, want 3 messages: 0.270, 4 messages: 0.249", got)
	}
}

func TestDecisions(t *testing.T) {
	l := &linker{o: Options{}.Defaults()}
	for _, c := range []struct {
		p    float32
		ml   bool
		want decision
	}{
		{0.9, false, probablyTrue}, {0.8, false, probablyTrue}, {0.5, false, tryBoth}, {0.48, false, tryBoth},
		{0.2, false, probablyFalse}, {0.2, true, tryBoth}, {0.05, false, probablyFalse},
	} {
		if got := l.decide(c.p, c.ml); got != c.want {
			t.Errorf("decide(%v, most likely %v) = %v, want %v", c.p, c.ml, got, c.want)
		}
	}
}

// TestUntracedCallee: B is untraced; A's call to B and B's reply are linked
// on A's clock only (A→B→A, WAP5 §5.1), and B's messages are never parents
// of unrelated calls.
func TestUntracedCallee(t *testing.T) {
	for _, method := range []string{MethodWAP5, MethodJoint} {
		// One client at a time, thinking longer than the window x (WAP5
		// links a client's next request to its last reply otherwise).
		tr := simulate(simConfig{clients: 1, perClient: 50, think: gauss{ms(1000), ms(100)}, net: gauss{ms(20), ms(2)},
			tracelets: cdn(), untraced: []string{"origin-eu", "origin-us", "dns"}, seed: 5, clientName: "CLIENT"})
		res, err := Link(tr, Options{Method: method, Window: 400 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		a := measure(tr, &res.Paths)
		if a.precision < 0.99 || a.recall < 0.99 || a.missingTopN > 0 {
			t.Errorf("%s: precision %.3f recall %.3f, %d true patterns missing", method, a.precision, a.recall, a.missingTopN)
		}
	}
}

// TestWAP5Iterate: iterating steps 1–2 settles and keeps the serial case
// exact.
func TestWAP5Iterate(t *testing.T) {
	tr := simulate(simConfig{clients: 1, perClient: 100, think: gauss{ms(500), ms(100)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(1, false), seed: 2, clientName: "CLIENT"})
	res, err := Link(tr, Options{Method: MethodWAP5, Iterate: true, Window: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Fit.Settled || res.Iterations < 2 {
		t.Errorf("iteration did not settle: %+v after %d", res.Fit, res.Iterations)
	}
	if a := measure(tr, &res.Paths); a.precision < 0.99 || a.recall < 0.99 {
		t.Errorf("precision %.3f recall %.3f", a.precision, a.recall)
	}
}

func TestGammaOption(t *testing.T) {
	tr := simulate(simConfig{clients: 3, perClient: 100, think: gauss{ms(500), ms(100)}, net: gauss{ms(0.3), ms(0.05)},
		tracelets: multiTier(3, false), seed: 4, clientName: "CLIENT"})
	res, err := Link(tr, Options{Method: MethodWAP5, DelayModel: DelayGamma, Window: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Gaussian node delays: the fitted gamma beats the exponential.
	if res.Fit.Samples == 0 || res.Fit.LogLik[DelayFit] <= res.Fit.LogLik[DelayExp] || res.Fit.Best == DelayExp {
		t.Errorf("fit %+v", res.Fit)
	}
}

// TestExpGap: expGap is math.Exp, bit for bit, on the gaps step 2 takes
// (zeros of both signs included) and on what a broken density could give.
func TestExpGap(t *testing.T) {
	for _, x := range []float64{0, math.Copysign(0, -1), -1e-300, -5e-324, -1e-17, -1e-9, -0.5, -1, -13.99, -14, -700, -746, math.Inf(-1), math.NaN(), 1e-17, 2} {
		got, want := expGap(x), math.Exp(x)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("expGap(%g) = %v (bits %x), math.Exp: %v (bits %x)", x, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// TestCandidatesOfBruteForce: candidatesOf (over the indexes' lastPos, in
// positions of the whole arrays) gives every message's candidate parents
// as a scan of all the messages does, latest first: with a send time, the
// messages its sender received within the window before the send; from an
// untraced sender, the messages its receiver sent it within the window
// before the receive.
func TestCandidatesOfBruteForce(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    simConfig
		window time.Duration
	}{
		{"serial", simConfig{clients: 1, perClient: 40, think: gauss{ms(300), ms(50)}, net: gauss{ms(20), ms(2)}, tracelets: cdn(), seed: 1}, 400 * time.Millisecond},
		{"busy", simConfig{clients: 6, perClient: 40, think: gauss{ms(50), ms(20)}, net: gauss{ms(20), ms(10)}, tracelets: cdn(), seed: 2}, time.Second},
		{"untraced", simConfig{clients: 4, perClient: 40, think: gauss{ms(100), ms(30)}, net: gauss{ms(10), ms(5)}, tracelets: cdn(),
			untraced: []string{"origin-eu", "origin-us", "dns"}, seed: 3, clientName: "CLIENT"}, 500 * time.Millisecond},
	} {
		tr := simulate(c.cfg)
		tr.Sort()
		for _, method := range []string{MethodWAP5, MethodJoint} {
			o := Options{Method: method, Window: c.window}.Defaults()
			l := newLinker(tr, o, nil)
			rev := l.reverseEdges()
			type cand struct {
				p  int32
				dt float64
			}
			for i := range tr.Messages {
				m := &tr.Messages[i]
				var got []cand
				l.candidatesOf(i, m.Send, m.Recv, m.Src, rev, func(p int32, dt float64) bool {
					got = append(got, cand{p, dt})
					return true
				})
				// The scan: all messages, latest first (ties: the later
				// index first, as the indexes hold them).
				var want []cand
				var at []int64
				for j := range tr.Messages {
					q := &tr.Messages[j]
					var dt int64
					var ts int64
					switch {
					case m.Send != trace.Unknown:
						if q.Dst != m.Src || q.Recv == trace.Unknown || j == i {
							continue
						}
						ts, dt = q.Recv, m.Send-q.Recv
					default:
						if q.Src != m.Dst || q.Dst != m.Src || q.Send == trace.Unknown {
							continue
						}
						ts, dt = q.Send, m.Recv-q.Send
					}
					if dt < 0 || dt > int64(c.window) {
						continue
					}
					want = append(want, cand{int32(j), float64(dt) / 1e9})
					at = append(at, ts)
				}
				for a := 1; a < len(want); a++ { // insertion sort, latest first
					for b := a; b > 0 && (at[b] > at[b-1] || at[b] == at[b-1] && want[b].p > want[b-1].p); b-- {
						want[b], want[b-1], at[b], at[b-1] = want[b-1], want[b], at[b-1], at[b]
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s %s: message %d: candidates %v, want %v", c.name, method, i, got, want)
				}
			}
		}
	}
}
