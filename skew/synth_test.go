package skew

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"wap5/trace"
)

// clock is a node's true clock in a synthetic scenario: at true time t it
// reads t + offset + drift·1e-6·(t − t0) + the jumps of the steps before t.
type clock struct {
	offset float64 // s
	drift  float64 // ppm
	steps  []struct{ at, jump float64 }
}

// link is the delay of a pair of nodes: a minimum per direction plus
// exponential queueing delay.
type link struct {
	a, b       string
	ab, ba     float64 // s, minimum delay each way
	jitter     float64 // s, mean of the exponential extra
	roundTrips int
	oneWay     bool // only a→b
}

type scenario struct {
	nodes    map[string]clock
	links    []link
	t0, span float64 // s
	seed     uint64
}

const base = 1_700_000_000.0

func (sc scenario) read(n string, tt float64) float64 {
	c := sc.nodes[n]
	v := tt + c.offset + c.drift*1e-6*(tt-sc.t0)
	for _, s := range c.steps {
		if tt >= s.at {
			v += s.jump
		}
	}
	return v
}

func ns(s float64) int64 { return int64(math.Round(s * 1e9)) }

// build makes the trace: each round trip is a call a→b at a random time and
// a return b→a after 1 ms of processing.
func (sc scenario) build() *trace.Trace {
	r := rand.New(rand.NewPCG(sc.seed, 7))
	t := trace.New()
	names := make([]string, 0, len(sc.nodes))
	for n := range sc.nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Node(n)
	}
	for _, l := range sc.links {
		a, b := t.Node(l.a), t.Node(l.b)
		for i := 0; i < l.roundTrips; i++ {
			ts := sc.t0 + r.Float64()*sc.span
			d1 := l.ab + r.ExpFloat64()*l.jitter
			t.Add(trace.Message{Send: ns(sc.read(l.a, ts)), Recv: ns(sc.read(l.b, ts+d1)),
				Src: a, Dst: b, ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef, Bytes: 100})
			if l.oneWay {
				continue
			}
			ts2 := ts + d1 + 0.001
			d2 := l.ba + r.ExpFloat64()*l.jitter
			t.Add(trace.Message{Send: ns(sc.read(l.b, ts2)), Recv: ns(sc.read(l.a, ts2+d2)),
				Src: b, Dst: a, ID: trace.NoRef, Call: trace.NoRef, Truth: trace.NoRef, Bytes: 100})
		}
	}
	// scenario times are small (float64 keeps ns); shift to epoch-like values
	for i := range t.Messages {
		t.Messages[i].Send += ns(base)
		t.Messages[i].Recv += ns(base)
	}
	t.Sort()
	return t
}

// worstError is the largest |corrected − reference reading| over the
// scenario's span for node n, in seconds: the node's clock reading
// converted with the estimate against what the reference's clock read at
// the same instant.
func (sc scenario) worstError(cr *Corrector, t *trace.Trace, ref, n string) float64 {
	id, _ := t.LookupNode(n)
	worst := 0.0
	for k := 0; k <= 200; k++ {
		tt := sc.t0 + sc.span*float64(k)/200
		skip := false
		for _, c := range []string{ref, n} {
			for _, s := range sc.nodes[c].steps {
				if math.Abs(tt-s.at) < 2 { // the guard zone around a step
					skip = true
				}
			}
		}
		if skip {
			continue
		}
		local := ns(sc.read(n, tt)) + ns(base)
		got := cr.ToReference(id, local)
		want := ns(sc.read(ref, tt)) + ns(base)
		worst = math.Max(worst, math.Abs(float64(got-want))/1e9)
	}
	return worst
}

func (sc scenario) String() string {
	return fmt.Sprintf("%d nodes %d links", len(sc.nodes), len(sc.links))
}
