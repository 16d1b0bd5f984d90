package convolution

import (
	"fmt"
	"math/rand/v2"
	"time"

	"wap5/trace"
)

// A small tracelet generator for the tests (a stand-in for maketrace,
// Project 5 §7.1.1): every worker runs instances of randomly chosen
// tracelets in a loop, with a think time between them. A call's callee
// waits Wait before each child call (children run in series), and Reply
// after the last child before it returns.

type tcall struct {
	to    []string // one is chosen at random
	wait  time.Duration
	reply time.Duration
	kids  []tcall
}

type genOpts struct {
	tracelets []tcall // roots; their caller is "CLIENT"
	workers   int
	instances int
	think     time.Duration // mean, uniform in [0, 2·think]
	jitter    float64       // relative std of every delay
	net       time.Duration // one-way network delay
	noKind    bool          // leave kind=/call= out (pair by connection)
	seed      uint64
	// skew adds to the clock of one node (its send and receive times).
	skewNode string
	skew     time.Duration
}

type gen struct {
	o      genOpts
	t      *trace.Trace
	r      *rand.Rand
	callID int32
	ip     map[string]int
}

func (g *gen) d(x time.Duration) int64 {
	v := float64(x) * (1 + g.o.jitter*g.r.NormFloat64())
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
	if node == g.o.skewNode {
		return ts + int64(g.o.skew)
	}
	return ts
}

// msg adds a message sent at true time ts; it returns the arrival time.
func (g *gen) msg(from, to string, fromPort, toPort int, ts int64, kind trace.Kind, id int32, truth int32) int64 {
	arr := ts + g.d(g.o.net)
	m := trace.Message{Send: g.clock(from, ts), Recv: g.clock(to, arr), ID: trace.NoRef, Bytes: 100,
		Src: g.t.Node(from), Dst: g.t.Node(to), SrcEP: g.ep(from, fromPort), DstEP: g.ep(to, toPort),
		Call: trace.NoRef, Truth: truth}
	if !g.o.noKind {
		m.Kind, m.Call = kind, id
	}
	g.t.Add(m)
	return arr
}

// run performs call c from caller at true time ts and returns when the
// return reaches the caller.
func (g *gen) run(caller string, c *tcall, ts int64, worker int, truth int32) int64 {
	callee := c.to[g.r.IntN(len(c.to))]
	g.callID++
	id := g.callID
	cport := 32768 + worker*64 + int(g.t.Node(callee))%64 // one connection per worker and callee
	sport := 8000 + int(g.t.Node(callee))
	at := g.msg(caller, callee, cport, sport, ts, trace.KindCall, id, truth)
	for i := range c.kids {
		at += g.d(c.kids[i].wait)
		at = g.run(callee, &c.kids[i], at, worker, truth)
	}
	at += g.d(c.reply)
	return g.msg(callee, caller, sport, cport, at, trace.KindReturn, id, truth)
}

func generate(o genOpts) *trace.Trace {
	g := &gen{o: o, t: trace.New(), r: rand.New(rand.NewPCG(o.seed, 7)), ip: map[string]int{}}
	next := make([]int64, o.workers)
	for w := range next {
		next[w] = 1_700_000_000e9 + g.r.Int64N(int64(2*o.think)+1)
	}
	for n := 0; n < o.instances; n++ {
		w := 0
		for i := range next {
			if next[i] < next[w] {
				w = i
			}
		}
		tl := &o.tracelets[g.r.IntN(len(o.tracelets))]
		end := g.run("CLIENT", tl, next[w], w, int32(n))
		next[w] = end + g.r.Int64N(int64(2*o.think)+1)
	}
	g.t.Sort()
	return g.t
}

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

// multiTier is Project 5's Figure 10: CLIENT → WS1|WS2 → AUTH, then
// AP1|AP2 → DB. added puts 200 ms into WS2 between AUTH and the AP call.
func multiTier(added bool) []tcall {
	db := tcall{to: []string{"DB"}, wait: ms(5), reply: ms(10)}
	ap := func(wait time.Duration) tcall {
		return tcall{to: []string{"AP1", "AP2"}, wait: wait, reply: ms(5), kids: []tcall{db}}
	}
	auth := tcall{to: []string{"AUTH"}, wait: ms(10), reply: ms(5)}
	ws := func(name string, apWait time.Duration) tcall {
		return tcall{to: []string{name}, reply: ms(5), kids: []tcall{auth, ap(apWait)}}
	}
	ws2wait := ms(20)
	if added {
		ws2wait += 200 * time.Millisecond
	}
	return []tcall{ws("WS1", ms(20)), ws("WS2", ws2wait)}
}
