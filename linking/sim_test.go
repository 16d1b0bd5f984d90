package linking

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"wap5/trace"
)

// This file builds small synthetic traces with ground truth (truth= ids) for
// the tests, in the manner of Project 5's maketrace (§7.1.1): RPC trees with
// Gaussian node delays, clients with think times running in parallel,
// per-link network delays, optional clock offsets, message loss and untraced
// nodes. (wap5 gen is the full generator; this one keeps the tests
// self-contained.)

type gauss struct{ mean, std float64 } // seconds

func (g gauss) draw(r *rand.Rand, scale float64) float64 {
	return math.Max(0, g.mean+r.NormFloat64()*g.std*scale)
}

// rpc is a call to a node (To chosen among alternatives, load balancing),
// the callee's work: Pre before each child call (after the previous
// event), the calls, then Post before replying. Parallel issues the children
// together.
type rpc struct {
	to       []string
	pre      gauss
	post     gauss
	calls    []rpc
	parallel bool
}

type tracelet struct {
	weight float64
	root   rpc // the client's call
}

type simConfig struct {
	clients    int   // parallel clients (the parallelism)
	perClient  int   // requests per client
	think      gauss // client think time
	net        gauss // one-way network delay per message
	tracelets  []tracelet
	spread     float64 // multiplies every delay's std (Figure 20's axis)
	loss       float64 // message loss probability (Figure 21's axis)
	untraced   []string
	offsets    map[string]float64 // clock offset per node, seconds
	kinds      bool               // write kind=/call=
	clientName string             // prefix of client node names
	seed       uint64
}

type simMsg struct {
	send, recv   float64 // true times
	src, dst     string
	call         int
	isReturn     bool
	truth        int
	srcEP, dstEP string
}

// simulate returns the trace and the number of instances.
func simulate(c simConfig) *trace.Trace {
	r := rand.New(rand.NewPCG(c.seed, c.seed^0x5eed))
	if c.spread == 0 {
		c.spread = 1
	}
	if c.clientName == "" {
		c.clientName = "client"
	}
	var msgs []simMsg
	callID := 0
	inst := 0
	wsum := 0.0
	for _, tl := range c.tracelets {
		wsum += tl.weight
	}
	var do func(from string, x rpc, t float64, truth int) float64
	do = func(from string, x rpc, t float64, truth int) float64 {
		to := x.to[r.IntN(len(x.to))]
		callID++
		id := callID
		req := simMsg{send: t, src: from, dst: to, call: id, truth: truth}
		req.recv = t + c.net.draw(r, c.spread)
		msgs = append(msgs, req)
		now := req.recv
		if x.parallel {
			end := now
			for _, ch := range x.calls {
				s := now + ch.pre.draw(r, c.spread)
				end = math.Max(end, do(to, ch, s, truth))
			}
			now = end
		} else {
			for _, ch := range x.calls {
				now = do(to, ch, now+ch.pre.draw(r, c.spread), truth)
			}
		}
		now += x.post.draw(r, c.spread)
		rep := simMsg{send: now, src: to, dst: from, call: id, isReturn: true, truth: truth}
		rep.recv = now + c.net.draw(r, c.spread)
		msgs = append(msgs, rep)
		return rep.recv
	}
	for cl := 0; cl < c.clients; cl++ {
		name := c.clientName
		if c.clientName == "client" {
			name = fmt.Sprintf("%s%d", c.clientName, cl)
		}
		t := 1000 + r.Float64()*c.think.mean
		for k := 0; k < c.perClient; k++ {
			u := r.Float64() * wsum
			tl := c.tracelets[0]
			for _, x := range c.tracelets {
				if u < x.weight {
					tl = x
					break
				}
				u -= x.weight
			}
			inst++
			t = do(name, tl.root, t, inst) + c.think.draw(r, 1)
		}
	}
	// Connections: a pool per (caller, callee); an RPC takes a free one.
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].send < msgs[j].send })
	type conn struct {
		port int
		free float64
	}
	pools := map[[2]string][]*conn{}
	port := 30000
	byCall := map[int]int{}
	retOf := map[int]float64{}
	for i := range msgs {
		if msgs[i].isReturn {
			retOf[msgs[i].call] = msgs[i].recv
		}
	}
	for i := range msgs {
		m := &msgs[i]
		if m.isReturn {
			q := &msgs[byCall[m.call]]
			m.srcEP, m.dstEP = q.dstEP, q.srcEP
			continue
		}
		byCall[m.call] = i
		k := [2]string{m.src, m.dst}
		var cn *conn
		for _, x := range pools[k] {
			if x.free <= m.send {
				cn = x
				break
			}
		}
		if cn == nil {
			port++
			cn = &conn{port: port}
			pools[k] = append(pools[k], cn)
		}
		cn.free = retOf[m.call]
		m.srcEP = fmt.Sprintf("10.%d.0.1:%d", hostNum(m.src), cn.port)
		m.dstEP = fmt.Sprintf("10.%d.0.1:80", hostNum(m.dst))
	}
	t := trace.New()
	untraced := map[string]bool{}
	for _, u := range c.untraced {
		untraced[u] = true
	}
	ns := func(x float64) int64 { return int64(math.Round(x * 1e9)) }
	for i := range msgs {
		m := &msgs[i]
		if c.loss > 0 && r.Float64() < c.loss {
			continue
		}
		tm := trace.Message{Send: ns(m.send + c.offsets[m.src]), Recv: ns(m.recv + c.offsets[m.dst]),
			Src: t.Node(m.src), Dst: t.Node(m.dst), SrcEP: t.Endpoint(m.srcEP), DstEP: t.Endpoint(m.dstEP),
			ID: int64(i + 1), Bytes: 100, Call: trace.NoRef, Truth: int32(m.truth)}
		if untraced[m.src] {
			tm.Send = trace.Unknown
		}
		if untraced[m.dst] {
			tm.Recv = trace.Unknown
		}
		if c.kinds {
			tm.Call = int32(m.call)
			tm.Kind = trace.KindCall
			if m.isReturn {
				tm.Kind = trace.KindReturn
			}
		}
		t.Add(tm)
	}
	for _, u := range c.untraced {
		if id, ok := t.LookupNode(u); ok {
			t.Nodes[id].Untraced = true
		}
	}
	t.Sort()
	return t
}

var hostNums = map[string]int{}

func hostNum(s string) int {
	if n, ok := hostNums[s]; ok {
		return n
	}
	hostNums[s] = len(hostNums) + 1
	return hostNums[s]
}

// Scenarios after Project 5 Figure 10 (multi-tier) and Figure 18
// (pathological cases), and a WAP5-like CDN with untraced origins.
func ms(x float64) float64 { return x / 1000 }

func multiTier(parallel int, added bool) []tracelet {
	wsPost := gauss{ms(2), ms(0.5)}
	apCall := rpc{to: []string{"AP1", "AP2"}, pre: gauss{ms(3), ms(1)}, post: gauss{ms(5), ms(1)},
		calls: []rpc{{to: []string{"DB"}, pre: gauss{ms(4), ms(1)}, post: gauss{ms(15), ms(3)}}}}
	if added {
		apCall.pre = gauss{ms(203), ms(1)}
	}
	return []tracelet{
		{weight: 0.7, root: rpc{to: []string{"WS1", "WS2"}, post: wsPost, calls: []rpc{
			{to: []string{"AUTH"}, pre: gauss{ms(2), ms(0.5)}, post: gauss{ms(8), ms(2)}},
			apCall,
		}}},
		{weight: 0.3, root: rpc{to: []string{"WS1", "WS2"}, post: wsPost, calls: []rpc{
			{to: []string{"AUTH"}, pre: gauss{ms(2), ms(0.5)}, post: gauss{ms(8), ms(2)}},
		}}},
	}
}

func pathological(name string) []tracelet {
	c := func(pre, post float64, calls ...rpc) rpc {
		return rpc{to: []string{"C"}, pre: gauss{ms(pre), ms(pre / 4)}, post: gauss{ms(post), ms(post / 4)}, calls: calls}
	}
	d := func(pre, post float64) rpc {
		return rpc{to: []string{"D"}, pre: gauss{ms(pre), ms(pre / 4)}, post: gauss{ms(post), ms(post / 4)}}
	}
	b := func(parallel bool, calls ...rpc) rpc {
		return rpc{to: []string{"B"}, post: gauss{ms(2), ms(0.5)}, calls: calls, parallel: parallel}
	}
	switch name {
	case "children-parallel":
		return []tracelet{{1, b(true, c(2, 10), c(3, 10))}}
	case "children-0/2":
		return []tracelet{{0.5, b(false, c(2, 10), c(2, 10))}, {0.5, b(false)}}
	case "children-d/cc":
		return []tracelet{{0.5, b(false, c(2, 10), c(2, 10))}, {0.5, b(false, d(2, 10))}}
	case "penalty-breaker":
		return []tracelet{{0.4, b(false, c(2, 10), c(2, 10))}, {0.4, b(false, c(2, 10), d(2, 10))}, {0.2, b(false, d(2, 10))}}
	}
	panic(name)
}

func cdn() []tracelet {
	origin := rpc{to: []string{"origin-eu", "origin-us"}, pre: gauss{ms(1), ms(0.3)}, post: gauss{ms(60), ms(20)}}
	dns := rpc{to: []string{"dns"}, pre: gauss{ms(0.5), ms(0.1)}, post: gauss{ms(1), ms(0.3)}}
	proxy2 := func(calls ...rpc) rpc {
		return rpc{to: []string{"proxy-b1", "proxy-b2"}, pre: gauss{ms(1), ms(0.3)}, post: gauss{ms(0.5), ms(0.1)}, calls: calls}
	}
	proxy1 := func(calls ...rpc) rpc {
		return rpc{to: []string{"proxy-a1", "proxy-a2"}, post: gauss{ms(0.5), ms(0.1)}, calls: calls}
	}
	return []tracelet{
		{0.6, proxy1()},                    // hit at the first proxy
		{0.3, proxy1(proxy2(origin))},      // miss, fetched from the origin
		{0.1, proxy1(proxy2(dns, origin))}, // miss with a DNS lookup
	}
}

// accuracy compares inferred instances with the truth= groups: an inferred
// instance is right when its message set is exactly a true instance's.
type accuracy struct {
	precision, recall float64 // instances
	truthPatterns     int
	missingTopN       int     // true patterns not in the top N (N = truthPatterns)
	delayErr          float64 // mean relative node-delay error of correct patterns
}

func measure(t *trace.Trace, p *trace.Paths) accuracy {
	truth := map[int32][]int32{}
	for i := range t.Messages {
		truth[t.Messages[i].Truth] = append(truth[t.Messages[i].Truth], int32(i))
	}
	key := func(ms []int32) string {
		s := slices.Clone(ms)
		slices.Sort(s)
		return fmt.Sprint(s)
	}
	want := map[string]bool{}
	for _, ms := range truth {
		want[key(ms)] = true
	}
	right := 0
	for _, in := range p.Instances {
		if want[key(in.Messages)] {
			right++
		}
	}
	var a accuracy
	if len(p.Instances) > 0 {
		a.precision = float64(right) / float64(len(p.Instances))
	}
	a.recall = float64(right) / float64(len(truth))
	// Truth patterns: link each message to the latest message its sender
	// received in the same instance (the causal rule of the generator).
	tp := truthPaths(t)
	a.truthPatterns = len(tp.Patterns)
	n := a.truthPatterns
	inferred := map[string]*trace.Pattern{}
	for i, q := range p.Patterns {
		if i < n {
			inferred[shape(q.Root)] = q
		}
	}
	var errSum float64
	var errN int
	for _, q := range tp.Patterns {
		got, ok := inferred[shape(q.Root)]
		if !ok {
			a.missingTopN++
			continue
		}
		errSum += delayErr(q.Root, got.Root, &errN)
	}
	if errN > 0 {
		a.delayErr = errSum / float64(errN)
	}
	return a
}

func shape(s *trace.Step) string {
	var ks []string
	for _, c := range s.Children {
		ks = append(ks, shape(c))
	}
	slices.Sort(ks)
	return fmt.Sprintf("%s>%s%v", s.From, s.To, ks)
}

// delayErr sums |inferred − true| / true mean node delays over matching steps.
func delayErr(want, got *trace.Step, n *int) float64 {
	e := 0.0
	if want.Wait.Known() && got.Wait.Known() && want.Wait.Mean > 1e-4 {
		e += math.Abs(got.Wait.Mean-want.Wait.Mean) / want.Wait.Mean
		*n++
	}
	used := make([]bool, len(got.Children))
	for _, wc := range want.Children {
		for k, gc := range got.Children {
			if !used[k] && shape(gc) == shape(wc) {
				used[k] = true
				e += delayErr(wc, gc, n)
				break
			}
		}
	}
	return e
}

// truthPaths aggregates the true instances with the package's own
// aggregation (so shapes and delays are comparable).
func truthPaths(t *trace.Trace) *trace.Paths {
	l := newLinker(t, Options{}.Defaults(), nil)
	byTruth := map[int32][]int32{}
	var order []int32
	for i := range t.Messages {
		tr := t.Messages[i].Truth
		if _, ok := byTruth[tr]; !ok {
			order = append(order, tr)
		}
		byTruth[tr] = append(byTruth[tr], int32(i))
	}
	in := &instances{}
	for _, tr := range order {
		ms := byTruth[tr]
		par := make([]int32, len(ms))
		for j, mi := range ms {
			par[j] = -1
			m := &t.Messages[mi]
			best := int64(math.MinInt64)
			isRet := m.Kind == trace.KindReturn && m.Call != trace.NoRef
			for k := 0; k < j; k++ {
				q := &t.Messages[ms[k]]
				if isRet && q.Kind == trace.KindCall && q.Call != m.Call {
					continue // a return answers its own call, not a parallel one
				}
				var at int64
				switch {
				case q.Dst == m.Src && q.Recv != trace.Unknown && m.Send != trace.Unknown && q.Recv <= m.Send:
					at = q.Recv
				case q.Dst == m.Src && (q.Recv == trace.Unknown || m.Send == trace.Unknown) && q.Src == m.Dst:
					at = q.Send
				default:
					continue
				}
				if at >= best {
					best, par[j] = at, int32(k)
				}
			}
		}
		// Keep instances whose messages form one tree (loss can split them).
		roots := 0
		for _, p := range par {
			if p < 0 {
				roots++
			}
		}
		if roots == 1 && par[0] == -1 {
			in.add(ms, par, 1)
		}
	}
	var res Result
	if err := l.aggregate(in, &res); err != nil {
		panic(err)
	}
	return &res.Paths
}
