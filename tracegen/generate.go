package tracegen

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"wap5/trace"
)

// Summary describes a generated trace.
type Summary struct {
	Config          string          `json:"config"`
	Seed            uint64          `json:"seed"`
	Messages        int64           `json:"messages"`  // written to the trace
	Generated       int64           `json:"generated"` // made by instances, before loss
	Lost            int64           `json:"lost"`      // dropped by loss= or the sniffer
	Unobservable    int64           `json:"unobservable"`
	Instances       int64           `json:"instances"`
	Nodes           int             `json:"nodes"`
	Traced          int             `json:"traced"`
	StartS          float64         `json:"start_s"`
	EndS            float64         `json:"end_s"` // true time of the last message
	MeanParallelism float64         `json:"mean_parallelism"`
	Tracelets       []TraceletStats `json:"tracelets"`
	Clocks          []NodeClock     `json:"clocks"`
}

// TraceletStats counts one tracelet's instances and, per variant (the
// nodes chosen and the optional steps taken), how many instances took it.
type TraceletStats struct {
	Name      string         `json:"name"`
	Instances int64          `json:"instances"`
	Messages  int64          `json:"messages"`
	Variants  map[string]int `json:"variants"`
}

// NodeClock is the true clock of a node: its clock reads true time +
// OffsetS + DriftPPM·1e-6·(t − start).
type NodeClock struct {
	Node     string  `json:"node"`
	OffsetS  float64 `json:"offset_s"`
	DriftPPM float64 `json:"drift_ppm"`
	Untraced bool    `json:"untraced,omitempty"`
}

// maxVariants bounds the variants kept per tracelet in a summary.
const maxVariants = 200

// Generate builds the whole trace in memory.
func Generate(cfg *Config) (*trace.Trace, error) {
	t, _, err := GenerateSummary(cfg)
	return t, err
}

// GenerateSummary is Generate that also returns the summary.
func GenerateSummary(cfg *Config) (*trace.Trace, *Summary, error) {
	e, err := newEngine(cfg)
	if err != nil {
		return nil, nil, err
	}
	t := e.t
	if cfg.Messages > 0 && cfg.Messages < 1<<31 {
		t.Messages = make([]trace.Message, 0, cfg.Messages+cfg.Messages/64+1024)
	}
	e.emit = func(m *genMsg) error {
		if cfg.Parents && m.parent != 0 {
			if t.Extra == nil {
				t.Extra = map[int32]string{}
			}
			t.Extra[int32(len(t.Messages))] = "parent=" + strconv.FormatInt(m.parent, 10)
		}
		t.Messages = append(t.Messages, e.message(m))
		return nil
	}
	if err := e.run(); err != nil {
		return nil, nil, err
	}
	return t, e.summary(), nil
}

// Write streams the trace in the contract's text format to w, time-sorted,
// holding only the messages of instances still in flight.
func Write(w io.Writer, cfg *Config) (*Summary, error) {
	e, err := newEngine(cfg)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.WriteString(trace.TextHeader + "\n"); err != nil {
		return nil, err
	}
	var line []byte
	e.emit = func(m *genMsg) error {
		line = e.appendLine(line[:0], m)
		_, err := bw.Write(line)
		return err
	}
	if err := e.run(); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	return e.summary(), nil
}

type genNode struct {
	*Node
	offNs int64
	ep    trace.EndpointID // listening endpoint
	// ephIDs are the interned ephemeral endpoints by port; held, per port
	// in use or recently closed, the true time until which no new
	// connection may take it (open connections: forever).
	ephIDs map[uint16]trace.EndpointID
	held   map[uint16]int64
	prune  int                 // prune held of expired ports when it grows past this
	pools  map[int32]*[]*gconn // persistent connections to each callee
	ipText string
	class  int // link class: nodes of one class have the same link delays
}

type worker struct {
	tl   int
	root int
	next int64 // true start time of the next instance, ns since start
	seq  int
}

type rawMsg struct {
	send, recv int64 // true times, ns since start
	src, dst   int32
	srcPort    uint16
	dstPort    uint16
	bytes      int64
	kind       trace.Kind
	call       int32
	parent     int32 // index in the instance of the message that caused it, −1 for none
}

// genMsg is a message on its way out: observed times (node clocks, ns since
// the epoch, or Unknown) and ports; endpoints are interned only when a whole
// trace is built.
type genMsg struct {
	id, parent       int64 // parent: the causing message's id, 0 for none
	send, recv       int64
	bytes            int64
	src, dst         int32
	srcPort, dstPort uint16
	call, truth      int32
	kind             trace.Kind
}

type engine struct {
	cfg     *Config
	r       *rand.Rand
	t       *trace.Trace
	nodes   []genNode
	links   []*Dist // by class pair
	classes int
	startNs int64
	emit    func(*genMsg) error

	workers  []*worker
	inst     []rawMsg
	variant  []byte
	nextID   int64
	nextCall int32
	truth    int32

	snif     outHeap // by true send time, before the sniffer (only with a sniffer)
	out      outHeap // by observed time
	seq      uint64
	depart   []int64 // sniffer: departure times of the last Queue accepted messages (ring)
	departI  int
	minOff   int64
	minDrift float64

	sum       Summary
	tstats    []TraceletStats
	busyNs    float64 // sum of instance durations
	lastTrue  int64
	sameCache map[*Target]map[string]*Target

	nowT     int64 // true start of the instance being made
	connIdle int64 // ns
	connUses int
}

// gconn is a persistent connection from a pool: its ephemeral port, the true
// time its last call's return arrived (it carries one call at a time), and
// how many calls it carried.
type gconn struct {
	port uint16
	busy int64
	uses int
}

func newEngine(cfg *Config) (*engine, error) {
	if cfg.Duration <= 0 && cfg.Messages <= 0 {
		return nil, fmt.Errorf("%s: give a duration or a message count (the generator would never stop)", cfg.File)
	}
	// The tables are filled directly; the trace builds its name indexes
	// lazily if a user interns more names (interning millions of ephemeral
	// endpoints through the index would dominate generation).
	e := &engine{cfg: cfg, r: rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)), t: &trace.Trace{Endpoints: []string{"-"}},
		startNs: int64(math.Round(cfg.Start * 1e9)), nextID: 1, nextCall: 1, truth: 1,
		sameCache: map[*Target]map[string]*Target{}}
	e.connIdle = int64(DefaultConnIdle * 1e9)
	if cfg.Conns.Idle > 0 {
		e.connIdle = int64(cfg.Conns.Idle * 1e9)
	}
	e.connUses = DefaultConnUses
	if cfg.Conns.Uses > 0 {
		e.connUses = cfg.Conns.Uses
	}
	e.minOff = math.MaxInt64
	seen := make(map[string]bool, len(cfg.Nodes))
	for _, n := range cfg.Nodes {
		if seen[n.Name] || n.Name == "" {
			return nil, fmt.Errorf("%s:%d: node %q declared twice", cfg.File, n.Line, n.Name)
		}
		seen[n.Name] = true
		e.t.Nodes = append(e.t.Nodes, trace.Node{Name: n.Name, Untraced: n.Untraced})
		g := genNode{Node: n, offNs: int64(math.Round(n.Offset * 1e9)), ipText: n.IP.String()}
		if n.IP.Is6() {
			g.ipText = "[" + g.ipText + "]"
		}
		g.ep = e.addEndpoint(g.ipText + ":" + strconv.Itoa(n.Port))
		if !n.Untraced {
			e.minOff = min(e.minOff, g.offNs)
			e.minDrift = min(e.minDrift, n.DriftPPM)
		}
		e.nodes = append(e.nodes, g)
	}
	e.assignClasses()
	if e.minOff == math.MaxInt64 {
		return nil, fmt.Errorf("%s: every node is untraced: no message could have a timestamp", cfg.File)
	}
	if s := cfg.Sniffer; s != nil {
		e.depart = make([]int64, s.Queue)
		for i := range e.depart {
			e.depart[i] = math.MinInt64
		}
	}
	e.sum = Summary{Config: cfg.File, Seed: cfg.Seed, Nodes: len(cfg.Nodes), StartS: cfg.Start}
	for _, n := range cfg.Nodes {
		if !n.Untraced {
			e.sum.Traced++
		}
		e.sum.Clocks = append(e.sum.Clocks, NodeClock{Node: n.Name, OffsetS: n.Offset, DriftPPM: n.DriftPPM, Untraced: n.Untraced})
	}
	for ti, tl := range cfg.Tracelets {
		e.tstats = append(e.tstats, TraceletStats{Name: tl.Name, Variants: map[string]int{}})
		for k := 0; k < tl.Parallel; k++ {
			// Workers of all tracelets take turns over the from= members, so
			// every member is used when there are enough workers.
			root := tl.From.Choices[len(e.workers)%len(tl.From.Choices)]
			// Workers start spread over one think time so they do not move in lockstep.
			start := int64(tl.Think.Sample(e.r, 1) * e.r.Float64() * 1e9)
			e.workers = append(e.workers, &worker{tl: ti, root: root, next: start, seq: len(e.workers)})
		}
	}
	if len(e.workers) == 0 {
		return nil, fmt.Errorf("%s: no tracelet has parallel ≥ 1", cfg.File)
	}
	sort.Slice(e.workers, func(i, j int) bool { return wless(e.workers[i], e.workers[j]) })
	return e, nil
}

func wless(a, b *worker) bool { return a.next < b.next || a.next == b.next && a.seq < b.seq }

// run is the generator's main loop (see doc.go for the numbered steps).
func (e *engine) run() error {
	durNs := int64(e.cfg.Duration * 1e9)
	stalls := 0
	for {
		// 1. The worker due next starts an instance at true time T, unless
		//    the duration or message budget is spent.
		w := e.workers[0]
		T := w.next
		if e.cfg.Duration > 0 && T >= durNs || e.cfg.Messages > 0 && e.sum.Generated >= e.cfg.Messages {
			break
		}
		// 2. Every message of a later instance happens at true time ≥ T, so
		//    messages observed before the earliest clock reading of T are final.
		if err := e.release(T, false); err != nil {
			return err
		}
		// 3. Instantiate the tracelet with sampled delays and node choices.
		end, n := e.instance(w, T)
		// 4. The worker thinks, then starts again.
		w.next = end + int64(e.cfg.Tracelets[w.tl].Think.Sample(e.r, 1)*1e9)
		if n == 0 {
			if stalls++; stalls > 100_000 {
				return fmt.Errorf("%s: %d instances in a row made no message (steps with prob=0?)", e.cfg.File, stalls)
			}
		} else {
			stalls = 0
		}
		e.siftWorker()
	}
	return e.release(math.MaxInt64, true)
}

// siftWorker restores heap order after workers[0].next grew.
func (e *engine) siftWorker() {
	h := e.workers
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		j := l
		if r := l + 1; r < len(h) && wless(h[r], h[l]) {
			j = r
		}
		if !wless(h[j], h[i]) {
			break
		}
		h[i], h[j] = h[j], h[i]
		i = j
	}
}

// instance runs one tracelet instance starting at true time T and queues its
// messages; it returns the true time of its last event and its message count.
func (e *engine) instance(w *worker, T int64) (int64, int) {
	tl := e.cfg.Tracelets[w.tl]
	e.nowT = T
	e.inst = e.inst[:0]
	e.variant = e.variant[:0]
	e.exec(w.root, T, -1, tl.Steps)
	end := T
	for i := range e.inst {
		end = max(end, e.inst[i].recv)
	}
	truth := e.truth
	e.truth++
	e.sum.Instances++
	e.busyNs += float64(end - T)
	st := &e.tstats[w.tl]
	st.Instances++
	st.Messages += int64(len(e.inst))
	if v := string(e.variant); len(st.Variants) < maxVariants || st.Variants[v] > 0 {
		st.Variants[v]++
	}
	base := e.nextID
	e.nextID += int64(len(e.inst))
	for i := range e.inst {
		e.queue(&e.inst[i], truth, base, int64(i))
	}
	e.sum.Generated += int64(len(e.inst))
	e.lastTrue = max(e.lastTrue, end)
	return end, len(e.inst)
}

// exec runs steps at node cur whose last event on this path was at t, act
// being the last message cur received on it (its index in e.inst, −1 for
// none: the cause of cur's next send); it returns the time of cur's last
// event and its last received message.
func (e *engine) exec(cur int, t int64, act int32, steps []*Step) (int64, int32) {
	for _, s := range steps {
		if s.Prob < 1 && e.r.Float64() >= s.Prob {
			e.variant = append(e.variant, '-')
			continue
		}
		t, act = e.step(cur, t, act, s)
	}
	return t, act
}

func (e *engine) step(cur int, t int64, act int32, s *Step) (int64, int32) {
	switch s.Op {
	case OpPar:
		e.variant = append(e.variant, '{')
		end, endAct := t, act
		for _, c := range s.Children {
			if c.Prob < 1 && e.r.Float64() >= c.Prob {
				e.variant = append(e.variant, '-')
				continue
			}
			// Every child starts from the block's start; the step after the
			// block follows the child that finished last.
			if ct, ca := e.step(cur, t, act, c); ct >= end {
				end, endAct = ct, ca
			}
		}
		e.variant = append(e.variant, '}')
		return end, endAct
	case OpCall:
		x := e.pick(&s.To, cur)
		e.variant = append(e.variant, '>')
		e.variant = append(e.variant, e.nodes[x].Name...)
		e.variant = append(e.variant, '(')
		send := t + e.delay(s.Wait, s.WaitAt, cur)
		recv := send + e.net(cur, x)
		call := e.nextCall
		e.nextCall++
		if e.nextCall < 0 { // wrapped: ids only need to pair within a window
			e.nextCall = 1
		}
		ci := int32(len(e.inst))
		e.inst = append(e.inst, rawMsg{send: send, recv: recv, src: int32(cur), dst: int32(x),
			dstPort: uint16(e.nodes[x].Port), bytes: int64(s.Bytes.Sample(e.r, 1)), kind: trace.KindCall, call: call, parent: act})
		tx, xact := e.exec(x, recv, ci, s.Children)
		rsend := tx + e.delay(s.Reply, s.ReplyAt, x)
		rrecv := rsend + e.net(x, cur)
		// The call takes a connection of cur's pool to x for its duration.
		cp := e.connect(cur, x, send, rrecv)
		e.inst[ci].srcPort = cp
		e.inst = append(e.inst, rawMsg{send: rsend, recv: rrecv, src: int32(x), dst: int32(cur), srcPort: uint16(e.nodes[x].Port),
			dstPort: cp, bytes: int64(s.RBytes.Sample(e.r, 1)), kind: trace.KindReturn, call: call, parent: xact})
		e.variant = append(e.variant, ')')
		return rrecv, int32(len(e.inst) - 1)
	default: // OpSend
		x := e.pick(&s.To, cur)
		e.variant = append(e.variant, '.')
		e.variant = append(e.variant, e.nodes[x].Name...)
		e.variant = append(e.variant, '(')
		send := t + e.delay(s.Wait, s.WaitAt, cur)
		recv := send + e.net(cur, x)
		sp := uint16(e.nodes[cur].Port)
		if e.nodes[cur].Client {
			sp = e.port(cur, send, send+int64(portLinger*1e9)) // a datagram from a fresh socket
		}
		si := int32(len(e.inst))
		e.inst = append(e.inst, rawMsg{send: send, recv: recv, src: int32(cur), dst: int32(x), srcPort: sp,
			dstPort: uint16(e.nodes[x].Port), bytes: int64(s.Bytes.Sample(e.r, 1)), call: trace.NoRef, parent: act})
		e.exec(x, recv, si, s.Children)
		e.variant = append(e.variant, ')')
		return send, act
	}
}

func (e *engine) delay(d Dist, at map[string]Dist, node int) int64 {
	if at != nil {
		if o, ok := at[e.nodes[node].Name]; ok {
			d = o
		}
	}
	return int64(d.Sample(e.r, e.cfg.StdScale) * 1e9)
}

// pick chooses the receiver among the target's nodes, avoiding the sender
// itself when there is another choice.
func (e *engine) pick(tg *Target, cur int) int {
	if tg.Same && e.nodes[cur].Region != "" {
		m := e.sameCache[tg]
		if m == nil {
			m = map[string]*Target{}
			e.sameCache[tg] = m
		}
		reg := e.nodes[cur].Region
		sub, ok := m[reg]
		if !ok {
			sub = &Target{Text: tg.Text}
			prev := 0.0
			for i, c := range tg.Choices {
				w := tg.Weights[i] - prev
				prev = tg.Weights[i]
				if e.nodes[c].Region == reg {
					sum := w
					if n := len(sub.Weights); n > 0 {
						sum += sub.Weights[n-1]
					}
					sub.Choices = append(sub.Choices, c)
					sub.Weights = append(sub.Weights, sum)
				}
			}
			if len(sub.Choices) == 0 {
				sub = tg // nobody in the region: any member
			}
			m[reg] = sub
		}
		tg = sub
	}
	n := len(tg.Choices)
	if n == 1 {
		return tg.Choices[0]
	}
	total := tg.Weights[n-1]
	for try := 0; try < 8; try++ {
		u := e.r.Float64() * total
		i := sort.SearchFloat64s(tg.Weights, u)
		if i >= n {
			i = n - 1
		}
		if tg.Choices[i] != cur {
			return tg.Choices[i]
		}
	}
	for _, c := range tg.Choices {
		if c != cur {
			return c
		}
	}
	return cur
}

// net samples the one-way network delay from a to b.
func (e *engine) net(a, b int) int64 {
	k := e.nodes[a].class*e.classes + e.nodes[b].class
	d := e.links[k]
	if d == nil {
		l := e.linkFor(a, b)
		d = &l
		e.links[k] = d
	}
	return int64(d.Sample(e.r, 1) * 1e9)
}

// DefaultNetDelay is the one-way delay between nodes no link line covers.
var DefaultNetDelay = Dist{Kind: Const, A: 100e-6}

func (e *engine) linkFor(a, b int) Dist {
	score := func(end string, n int) int {
		switch {
		case end == "*":
			return 0
		case strings.HasPrefix(end, "@"):
			if e.nodes[n].Region == end[1:] {
				return 1
			}
			return -1
		case end == e.nodes[n].Name:
			return 3
		case end == e.nodes[n].Group:
			return 2
		}
		return -1
	}
	best, bestScore := DefaultNetDelay, -1
	for _, l := range e.cfg.Links {
		sa, sb := score(l.From, a), score(l.To, b)
		if sa < 0 || sb < 0 {
			continue
		}
		if sa+sb >= bestScore {
			best, bestScore = l.Delay, sa+sb
		}
	}
	return best
}

func (e *engine) addEndpoint(name string) trace.EndpointID {
	e.t.Endpoints = append(e.t.Endpoints, name)
	return trace.EndpointID(len(e.t.Endpoints) - 1)
}

// The ephemeral port range (Linux's default is 32768–60999).
const (
	ephLo    = 32768
	ephHi    = 60999
	ephRange = ephHi - ephLo + 1
	// portLinger is how long (seconds) a closed connection's port stays
	// out of use (TCP's TIME_WAIT).
	portLinger = 60
)

// connect returns the port of a connection from node cur to node x that is
// idle at true time send and keeps it busy until end: the most recently used
// idle connection of cur's pool to x (connections idle for longer than the
// idle timeout are closed first), or a new one from a random free ephemeral
// port. A connection that has carried its calls is closed after this one.
// Instances are made one after another, not in time order, so a connection
// is idle only after the latest call it was given: conservative, never two
// calls at once on one connection.
func (e *engine) connect(cur, x int, send, end int64) uint16 {
	g := &e.nodes[cur]
	if g.pools == nil {
		g.pools = map[int32]*[]*gconn{}
	}
	pp := g.pools[int32(x)]
	if pp == nil {
		pp = new([]*gconn)
		g.pools[int32(x)] = pp
	}
	pool := *pp
	best := -1
	w := 0
	for _, c := range pool {
		if c.busy < send && send-c.busy > e.connIdle {
			g.held[c.port] = c.busy + e.connIdle + int64(portLinger*1e9)
			continue
		}
		pool[w] = c
		if c.busy < send && (best < 0 || c.busy > pool[best].busy) {
			best = w
		}
		w++
	}
	clear(pool[w:])
	pool = pool[:w]
	var c *gconn
	if best >= 0 {
		c = pool[best]
	} else {
		c = &gconn{port: e.port(cur, send, math.MaxInt64)}
		pool = append(pool, c)
		best = len(pool) - 1
	}
	c.busy = max(c.busy, end)
	c.uses++
	if c.uses >= e.connUses {
		g.held[c.port] = c.busy + int64(portLinger*1e9)
		pool = append(pool[:best], pool[best+1:]...)
	}
	if len(pool) == 0 {
		delete(g.pools, int32(x))
	} else {
		*pp = pool
	}
	return c.port
}

// port picks a random ephemeral port of node n that is free at true time t
// and holds it until the given time.
func (e *engine) port(n int, t, until int64) uint16 {
	g := &e.nodes[n]
	if g.held == nil {
		g.held = map[uint16]int64{}
	}
	if len(g.held) > max(g.prune, 1024) {
		// Forget the ports free before the current instance began:
		// instances start in time order, so no later connection can
		// find them held.
		for p, h := range g.held {
			if h < e.nowT {
				delete(g.held, p)
			}
		}
		g.prune = 2 * len(g.held)
	}
	for try := 0; try < 64; try++ {
		p := uint16(ephLo + e.r.IntN(ephRange))
		if h, ok := g.held[p]; !ok || h < t {
			g.held[p] = until
			return p
		}
	}
	// Nearly every port is held: the one free soonest.
	best, bh := uint16(ephLo), int64(math.MaxInt64)
	for p := ephLo; p <= ephHi; p++ {
		h, ok := g.held[uint16(p)]
		if !ok {
			h = math.MinInt64
		}
		if h < bh {
			best, bh = uint16(p), h
		}
	}
	g.held[best] = until
	return best
}

// endpoint interns node n's endpoint with the given port.
func (e *engine) endpoint(n int32, port uint16) trace.EndpointID {
	g := &e.nodes[n]
	if int(port) == g.Port {
		return g.ep
	}
	if g.ephIDs == nil {
		g.ephIDs = map[uint16]trace.EndpointID{}
	}
	id, ok := g.ephIDs[port]
	if !ok {
		id = e.addEndpoint(g.ipText + ":" + strconv.Itoa(int(port)))
		g.ephIDs[port] = id
	}
	return id
}

// message converts an outgoing message to the model, interning endpoints.
func (e *engine) message(g *genMsg) trace.Message {
	return trace.Message{Send: g.send, Recv: g.recv, ID: g.id, Bytes: g.bytes, Src: trace.NodeID(g.src), Dst: trace.NodeID(g.dst),
		SrcEP: e.endpoint(g.src, g.srcPort), DstEP: e.endpoint(g.dst, g.dstPort), Call: g.call, Truth: g.truth, Kind: g.kind}
}

// appendLine appends message g in the contract's text form (as
// trace.AppendTextLine writes it), with a newline.
func (e *engine) appendLine(b []byte, g *genMsg) []byte {
	b = appendTime(b, g.send)
	b = append(b, ' ')
	b = append(b, e.nodes[g.src].Name...)
	b = append(b, ' ')
	b = append(b, e.nodes[g.src].ipText...)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(g.srcPort), 10)
	b = append(b, ' ')
	b = appendTime(b, g.recv)
	b = append(b, ' ')
	b = append(b, e.nodes[g.dst].Name...)
	b = append(b, ' ')
	b = append(b, e.nodes[g.dst].ipText...)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(g.dstPort), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, g.bytes, 10)
	b = append(b, " id="...)
	b = strconv.AppendInt(b, g.id, 10)
	if g.kind != trace.KindNone {
		b = append(b, " kind="...)
		b = append(b, g.kind.String()...)
		b = append(b, " call="...)
		b = strconv.AppendInt(b, int64(g.call), 10)
	}
	b = append(b, " truth="...)
	b = strconv.AppendInt(b, int64(g.truth), 10)
	if e.cfg.Parents && g.parent != 0 {
		b = append(b, " parent="...)
		b = strconv.AppendInt(b, g.parent, 10)
	}
	return append(b, '\n')
}

// appendTime appends ns as decimal seconds with nine places, or "-".
func appendTime(b []byte, ns int64) []byte {
	if ns == trace.Unknown {
		return append(b, '-')
	}
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	frac := ns % 1e9
	var d [10]byte
	d[0] = '.'
	for i := 9; i >= 1; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, d[:]...)
}

// clock converts true time (ns since start) to node n's clock, ns since the
// epoch; Unknown for untraced nodes.
func (e *engine) clock(n int32, t int64) int64 {
	g := &e.nodes[n]
	if g.Untraced {
		return trace.Unknown
	}
	c := e.startNs + t + g.offNs
	if g.DriftPPM != 0 {
		c += int64(g.DriftPPM * 1e-6 * float64(t))
	}
	return c
}

func (e *engine) queue(r *rawMsg, truth int32, base, i int64) {
	if e.nodes[r.src].Untraced && e.nodes[r.dst].Untraced {
		e.sum.Unobservable++
		return
	}
	if e.cfg.Loss > 0 && e.r.Float64() < e.cfg.Loss {
		e.sum.Lost++
		return
	}
	m := genMsg{id: base + i, send: e.clock(r.src, r.send), recv: e.clock(r.dst, r.recv), bytes: r.bytes, src: r.src, dst: r.dst,
		srcPort: r.srcPort, dstPort: r.dstPort, call: r.call, truth: truth, kind: r.kind}
	if r.kind == trace.KindNone {
		m.call = trace.NoRef
	}
	if r.parent >= 0 {
		m.parent = base + int64(r.parent)
	}
	e.seq++
	if e.cfg.Sniffer != nil {
		e.snif.push(outItem{key: r.send, seq: e.seq, m: m})
		return
	}
	e.out.push(outItem{key: m.time(), seq: e.seq, m: m})
}

// release moves messages that no later instance can precede out of the
// queues: through the sniffer (true time < T) and to the output (observed
// time below the earliest clock reading of true time T).
func (e *engine) release(T int64, all bool) error {
	if e.cfg.Sniffer != nil {
		gap := int64(1e9 / e.cfg.Sniffer.Rate)
		for len(e.snif) > 0 && (all || e.snif[0].key < T) {
			it := e.snif.pop()
			// The sniffer queue holds the accepted messages not yet departed;
			// the oldest of the last Queue departures tells whether it is full.
			oldest := e.depart[e.departI]
			if oldest > it.key {
				e.sum.Lost++
				continue
			}
			last := e.depart[(e.departI+len(e.depart)-1)%len(e.depart)]
			e.depart[e.departI] = max(it.key, last) + gap
			e.departI = (e.departI + 1) % len(e.depart)
			e.out.push(outItem{key: it.m.time(), seq: it.seq, m: it.m})
		}
	}
	bound := int64(math.MaxInt64)
	if !all {
		bound = e.startNs + T + e.minOff + int64(math.Floor(e.minDrift*1e-6*float64(T))) - 1
	}
	for len(e.out) > 0 && e.out[0].key < bound {
		it := e.out.pop()
		if err := e.emit(&it.m); err != nil {
			return err
		}
		e.sum.Messages++
	}
	return nil
}

func (e *engine) summary() *Summary {
	s := e.sum
	s.Tracelets = e.tstats
	s.EndS = e.cfg.Start + float64(e.lastTrue)/1e9
	if e.lastTrue > 0 {
		s.MeanParallelism = e.busyNs / float64(e.lastTrue)
	}
	return &s
}

// outItem is a queued message with its sort key.
type outItem struct {
	key int64
	seq uint64
	m   genMsg
}

func (g *genMsg) time() int64 {
	if g.send != trace.Unknown {
		return g.send
	}
	return g.recv
}

// outHeap is a binary min-heap by (key, seq).
type outHeap []outItem

func (h outHeap) less(i, j int) bool {
	return h[i].key < h[j].key || h[i].key == h[j].key && h[i].seq < h[j].seq
}

func (h *outHeap) push(x outItem) {
	*h = append(*h, x)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !a.less(i, p) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *outHeap) pop() outItem {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && a.less(r, l) {
			j = r
		}
		if !a.less(j, i) {
			break
		}
		a[i], a[j] = a[j], a[i]
		i = j
	}
	*h = a
	return top
}

// assignClasses groups nodes that every link rule treats alike (same group,
// same region, not named by a rule), so link delays are looked up per class
// pair.
func (e *engine) assignClasses() {
	named := map[string]bool{}
	for _, l := range e.cfg.Links {
		named[l.From], named[l.To] = true, true
	}
	ids := map[string]int{}
	for i := range e.nodes {
		n := &e.nodes[i]
		key := n.Group + "\x00" + n.Region
		if named[n.Name] && n.Name != n.Group {
			key += "\x00" + n.Name
		}
		c, ok := ids[key]
		if !ok {
			c = len(ids)
			ids[key] = c
		}
		n.class = c
	}
	e.classes = len(ids)
	e.links = make([]*Dist, e.classes*e.classes)
}
