// Package p5sim is a small tracelet generator for the tests of the Project 5
// algorithms (a stand-in for maketrace, Project 5 §7.1.1), shared by the
// nesting and convolution tests; wap5 gen (package tracegen) is the full one.
package p5sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"wap5/trace"
)

// Every worker runs instances of randomly chosen
// tracelets in a loop, with a think time between them. A call's callee
// waits Wait before each child call (children run in series), and Reply
// after the last child before it returns.

// Call is one RPC of a tracelet: the callee (one of To at random), its
// children in series, and the delays around them.
type Call struct {
	To    []string // one is chosen at random
	Wait  time.Duration
	Reply time.Duration
	Kids  []Call
}

// Options configure Generate.
type Options struct {
	Tracelets []Call // roots; their caller is "CLIENT"
	Workers   int
	Instances int
	Think     time.Duration // mean, uniform in [0, 2·think]
	Jitter    float64       // relative std of every delay
	Net       time.Duration // one-way network delay
	NoKind    bool          // leave kind=/call= out (pair by connection)
	Seed      uint64
	// skew adds to the clock of one node (its send and receive times).
	SkewNode string
	Skew     time.Duration
}

type gen struct {
	o      Options
	t      *trace.Trace
	r      *rand.Rand
	callID int32
	ip     map[string]int
}

func (g *gen) d(x time.Duration) int64 {
	v := float64(x) * (1 + g.o.Jitter*g.r.NormFloat64())
	if v < 0 {
		v = 0
	}
	return int64(v)
}

func (g *gen) ep(node string, port int) trace.EndpointID {
	ip, ok := g.ip[node]
	if !ok {
		ip = len(g.ip) + 1
		g.ip[node] = ip
	}
	return g.t.Endpoint(fmt.Sprintf("10.0.0.%d:%d", ip, port))
}

func (g *gen) clock(node string, ts int64) int64 {
	if node == g.o.SkewNode {
		return ts + int64(g.o.Skew)
	}
	return ts
}

// msg adds a message sent at true time ts; it returns the arrival time.
func (g *gen) msg(from, to string, fromPort, toPort int, ts int64, kind trace.Kind, id int32, truth int32) int64 {
	arr := ts + g.d(g.o.Net)
	m := trace.Message{Send: g.clock(from, ts), Recv: g.clock(to, arr), ID: trace.NoRef, Bytes: 100,
		Src: g.t.Node(from), Dst: g.t.Node(to), SrcEP: g.ep(from, fromPort), DstEP: g.ep(to, toPort),
		Call: trace.NoRef, Truth: truth}
	if !g.o.NoKind {
		m.Kind, m.Call = kind, id
	}
	g.t.Add(m)
	return arr
}

// run performs call c from caller at true time ts and returns when the
// return reaches the caller.
func (g *gen) run(caller string, c *Call, ts int64, worker int, truth int32) int64 {
	callee := c.To[g.r.IntN(len(c.To))]
	g.callID++
	id := g.callID
	cport := 32768 + worker*64 + int(g.t.Node(callee))%64 // one connection per worker and callee
	sport := 8000 + int(g.t.Node(callee))
	at := g.msg(caller, callee, cport, sport, ts, trace.KindCall, id, truth)
	for i := range c.Kids {
		at += g.d(c.Kids[i].Wait)
		at = g.run(callee, &c.Kids[i], at, worker, truth)
	}
	at += g.d(c.Reply)
	return g.msg(callee, caller, sport, cport, at, trace.KindReturn, id, truth)
}

// Generate runs the tracelets and returns the time-sorted trace.
func Generate(o Options) *trace.Trace {
	g := &gen{o: o, t: trace.New(), r: rand.New(rand.NewPCG(o.Seed, 7)), ip: map[string]int{}}
	next := make([]int64, o.Workers)
	for w := range next {
		next[w] = 1_700_000_000e9 + g.r.Int64N(int64(2*o.Think)+1)
	}
	for n := 0; n < o.Instances; n++ {
		w := 0
		for i := range next {
			if next[i] < next[w] {
				w = i
			}
		}
		tl := &o.Tracelets[g.r.IntN(len(o.Tracelets))]
		end := g.run("CLIENT", tl, next[w], w, int32(n))
		next[w] = end + g.r.Int64N(int64(2*o.Think)+1)
	}
	g.t.Sort()
	return g.t
}

// MS converts milliseconds to a duration.
func MS(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// MultiTier is Project 5's Figure 10: CLIENT → WS1|WS2 → AUTH, then
// AP1|AP2 → DB. added puts 200 ms into WS2 between AUTH and the AP call.
func MultiTier(added bool) []Call {
	db := Call{To: []string{"DB"}, Wait: MS(5), Reply: MS(10)}
	ap := func(wait time.Duration) Call {
		return Call{To: []string{"AP1", "AP2"}, Wait: wait, Reply: MS(5), Kids: []Call{db}}
	}
	auth := Call{To: []string{"AUTH"}, Wait: MS(10), Reply: MS(5)}
	ws := func(name string, apWait time.Duration) Call {
		return Call{To: []string{name}, Reply: MS(5), Kids: []Call{auth, ap(apWait)}}
	}
	ws2wait := MS(20)
	if added {
		ws2wait += 200 * time.Millisecond
	}
	return []Call{ws("WS1", MS(20)), ws("WS2", ws2wait)}
}
