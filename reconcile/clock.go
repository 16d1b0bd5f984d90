package reconcile

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"wap5/libsockcap"
)

// Step 0 (clock offsets for matching): hosts' clocks may disagree by
// minutes (WAP5 §7), far more than the window an end waits for its peer.
// Before matching, the logs are read once for two kinds of events that one
// source does and another then sees: a connect and the accept of the same
// connection (same protocol and canonical 4-tuple, instances of a reused
// tuple paired in order), and a datagram's send and its receive (same
// destination port, length and checksum, paired in order). The second
// happens after the first, so second − first ≥ offset(second's source) −
// offset(first's source); events the other way between the same two
// sources bound the offset from the other side. Per pair of sources: the
// smallest difference near the median (robust to a mispaired instance or a
// lost datagram), the midpoint of the two bounds when there are both. A
// maximum spanning tree over the pairs (most samples first; sources of one
// host joined at offset 0 where nothing links them) gives every source an
// offset against one reference. The merge (step 1) and every comparison of
// times across sources then use offset-corrected time; the messages keep
// the times their observers recorded (correcting them is `wap5 skew`'s job).

// rereader is a source that can be read again from its start, for the
// offset pass: logs (decoded once for both readings: logSource.reread),
// and captures (one clock per capture: its sniffer's).
// Sources built by the caller cannot, and keep offset 0. The pass runs when
// logs of two or more hosts, or logs and captures, are reconciled together
// (captures alone: OpenPcaps has chosen one clock per host already).
type rereader interface {
	reread() (Source, error)
}

// Limits of the offset pass: waiting opens per connection key, and samples
// kept per pair of sources.
const (
	maxWaitingOpens = 1024
	maxClockSamples = 4096
	// clockNear: the width of the densest cluster of samples (the accept
	// follows the connect by microseconds to milliseconds, a datagram
	// arrives within milliseconds; a mispaired reuse of a tuple lies a
	// reuse period away, seconds to minutes).
	clockNear = int64(500 * time.Millisecond)
)

// hsConn and hsDgram identify what one source does first and another then
// sees: a connection (its protocol and canonical client and server ends,
// each an interned address, clockPass.ipID, and a port; connect, then
// accept), or a datagram (destination port, length and checksum; send, then
// receive). Small keys: the table of waiting events is probed once per open
// and datagram of the pass.
type hsConn struct {
	client, server uint32
	cport, sport   uint16
	proto          libsockcap.Proto
}

type hsDgram struct {
	n     int64
	sum   uint32
	dport uint16
	proto libsockcap.Proto
}

// hsEnd is an IP endpoint as the pass pairs it (interned without its port
// by clockPass.ipID for an hsConn): an epKey without the Unix fields
// (the pass skips Unix sockets), so that the table of waiting events, which
// holds every open of an untraced peer for clockHorizon, stays small.
type hsEnd struct {
	addr  [16]byte
	zone  int32
	scope int32
	port  uint16
	bits  uint8
}

type hsOpen struct {
	src int32
	t   int64
}

// hsQueue: the first events (connects, sends) and second events (accepts,
// receives) of one key still waiting for their other half, oldest first,
// and the last of each that was paired.
type hsQueue struct {
	first, second         []hsOpen
	lastFirst, lastSecond hsOpen
	hasFirst, hasSecond   bool
	// first and second start as slices of these: a key usually waits
	// with one event, which then needs no other object.
	first0, second0 [1]hsOpen
}

// srcPair: the source of the first event and that of the second.
type srcPair struct{ first, second int32 }

// clockPass collects samples: the time of a second event minus that of its
// first (raw clocks), which is at least offset(second) − offset(first).
type clockPass struct {
	nat *natTable
	ks  keyStrings
	// waiting: the events waiting for their other half, by key (the
	// two kinds of key never meet: prune counts both tables together).
	waiting  map[hsConn]*hsQueue
	waitingD map[hsDgram]*hsQueue
	samples  map[srcPair]*[]int64 // one lookup per sample taken
	now      int64                // latest raw time seen
	pruneAt  int
	// from, to: the first and the last time (raw) a sample was taken,
	// for the drift allowance of clockRel.drift.
	from, to int64
	// Opens whose peer's address no source has used as its local address
	// (yet) are parked by that address (see park), not in waiting: on a
	// large set nearly every open is one of an untraced client or server.
	ips   []hsIP
	ipIDs map[hsIP]uint32
	// ipIDs4: the ids of plain IPv4 addresses (no zone, no scope: all
	// but loopback) by their 4 bytes, a map of one-word keys; ipIDs
	// holds the others.
	ipIDs4  map[uint32]uint32
	isLocal []bool         // by ips index: a source's open used it locally
	parked  [][]parkedOpen // by ips index of the peer's address
	nparked int
	parkAt  int
	enoughN []int // scratch of enough
}

// hsIP is an hsEnd without its port: an address as scoped for pairing.
type hsIP struct {
	addr  [16]byte
	zone  int32
	scope int32
	bits  uint8
}

// parkedOpen is a connect or an accept waiting for its peer's address to
// turn out to be a source's (parked under the peer's hsIP).
type parkedOpen struct {
	t            int64
	src          int32
	local        uint32 // ips index of the local address
	lport, pport uint16
	proto        libsockcap.Proto
	second       bool // an accept (the peer is the client)
}

// The pass stops reading once, checked every clockCheckEvery observations,
// all the sources it reads are connected by pairs of sources with at least
// clockEnough samples (both directions together), the sources of one host
// being connected by their shared clock.
const (
	clockCheckEvery = 1 << 16
	clockEnough     = 64
)

// enough reports whether the sources in idx are all connected so.
func (p *clockPass) enough(n int, hosts []string, idx []int) bool {
	parent := make([]int, n)
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	union := func(a, b int) { parent[find(a)] = find(b) }
	first := map[string]int{}
	for i, h := range hosts {
		if h == "" {
			continue
		}
		if f, ok := first[h]; ok {
			union(f, i)
		} else {
			first[h] = i
		}
	}
	// Samples by ordered pair, in a matrix (one pass over the map, no
	// lookups: it is checked many times over a large set).
	if len(p.enoughN) < n*n {
		p.enoughN = make([]int, n*n)
	}
	cnt := p.enoughN[:n*n]
	clear(cnt)
	for pair, s := range p.samples {
		cnt[int(pair.first)*n+int(pair.second)] += len(*s)
	}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			if cnt[a*n+b]+cnt[b*n+a] >= clockEnough {
				union(a, b)
			}
		}
	}
	for _, i := range idx[1:] {
		if find(i) != find(idx[0]) {
			return false
		}
	}
	return true
}

// clockHorizon: events waiting longer than this (raw merged time) for
// their other half are dropped (untraced peers, lost datagrams).
const clockHorizon = int64(30 * time.Minute)

// endKey names an end for pairing. Loopback addresses are scoped by kernel
// (boot id), not by node name as in matching: processes of one kernel named
// as different nodes (--node) may talk over one loopback, and may still have
// different clocks (libfaketime); a coincidence between network namespaces
// only adds a stray sample.
func (p *clockPass) endKey(e libsockcap.Endpoint, o *Observer) hsEnd {
	ap := p.nat.canon(e.Addr)
	a := ap.Addr()
	k := hsEnd{addr: a.As16(), port: ap.Port(), bits: uint8(a.BitLen())}
	if z := a.Zone(); z != "" {
		k.zone = p.ks.id(z)
	}
	if a.IsLoopback() {
		k.scope = p.ks.scopes(o).kernel
	}
	return k
}

func (p *clockPass) observe(src int, ob *Observation) {
	if ob.Proto == libsockcap.ProtoUnix || ob.Local.Unix || ob.Remote.Unix {
		return // one kernel, one clock
	}
	var second bool
	switch {
	case ob.Stream && ob.Op == OpOpen:
		if !ob.Local.Addr.IsValid() || !ob.Remote.Addr.IsValid() {
			return
		}
		switch ob.Role {
		case RoleClient:
		case RoleServer:
			second = true
		default:
			return
		}
		l, r := p.endKey(ob.Local, ob.Observer), p.endKey(ob.Remote, ob.Observer)
		if ob.Time > p.now {
			p.now = ob.Time
		}
		p.prune()
		// Only an open whose peer's address a source uses locally can
		// ever pair: the other half is observed by that source.
		// This source's address is one from now on; opens parked under
		// it join the table first, in their order.
		li, ri := p.ipID(l), p.ipID(r)
		if !p.isLocal[li] {
			p.isLocal[li] = true
			p.promote(li)
		}
		if !p.isLocal[ri] {
			// No waiting half to pair with either: that half would
			// have made the peer's address a local one.
			p.park(ri, parkedOpen{t: ob.Time, src: int32(src), local: li, lport: l.port, pport: r.port,
				proto: ob.Proto, second: second})
			return
		}
		k := hsConn{proto: ob.Proto, client: li, server: ri, cport: l.port, sport: r.port}
		if second {
			k = hsConn{proto: ob.Proto, client: ri, server: li, cport: r.port, sport: l.port}
		}
		p.pair(p.queue(k), second, hsOpen{int32(src), ob.Time})
		return
	case !ob.Stream && ob.HasSum && (ob.Op == OpSend || ob.Op == OpRecv):
		dst := ob.Remote.Addr
		if ob.Op == OpRecv {
			dst, second = ob.Local.Addr, true
		}
		if !dst.IsValid() {
			return
		}
		if ob.Time > p.now {
			p.now = ob.Time
		}
		p.prune()
		p.pair(p.queueD(hsDgram{proto: ob.Proto, dport: p.nat.canon(dst).Port(), n: ob.Bytes, sum: ob.Sum}),
			second, hsOpen{int32(src), ob.Time})
	}
}

// newQueue is an empty entry of the table of waiting events.
func newQueue() *hsQueue {
	q := &hsQueue{}
	q.first, q.second = q.first0[:0], q.second0[:0]
	return q
}

// queue is connection k's entry of the table of waiting events.
func (p *clockPass) queue(k hsConn) *hsQueue {
	q := p.waiting[k]
	if q == nil {
		q = newQueue()
		p.waiting[k] = q
	}
	return q
}

// queueD is datagram k's entry of the table of waiting events. (queue and
// queueD stay two functions: one generic over the key measured 5–15 % slower
// in BenchmarkStep0Logs, its map accesses going through the dictionary.)
func (p *clockPass) queueD(k hsDgram) *hsQueue {
	q := p.waitingD[k]
	if q == nil {
		q = newQueue()
		p.waitingD[k] = q
	}
	return q
}

// pair pairs event me of a key (its queue q; a second event when second)
// with the oldest waiting event of the other kind from another source,
// taking a sample, or leaves it waiting.
func (p *clockPass) pair(q *hsQueue, second bool, me hsOpen) {
	mine, other := &q.first, &q.second
	if second {
		mine, other = &q.second, &q.first
	}
	last, hasLast := &q.lastSecond, &q.hasSecond
	if second {
		last, hasLast = &q.lastFirst, &q.hasFirst
	}
	for i, o := range *other {
		if o.src == me.src {
			continue // the same clock: nothing to learn
		}
		// Paired in order with the oldest waiting event of the other
		// source; an instance missing on one side (a refused connect, a
		// lost datagram) shifts that pairing by one for the rest of the
		// key's reuses, so the neighbours on both sides are samples too:
		// the right alignment forms the densest cluster.
		pair := srcPair{me.src, o.src}
		if second {
			pair = srcPair{o.src, me.src}
		}
		cand := [3]int64{o.t}
		nc := 1
		for _, x := range (*other)[i+1:] {
			if x.src == o.src {
				cand[nc] = x.t
				nc++
				break
			}
		}
		if *hasLast && last.src == o.src {
			cand[nc] = last.t
			nc++
		}
		if len(p.samples) == 0 || me.t < p.from {
			p.from = me.t
		}
		p.to = max(p.to, me.t)
		s := p.samples[pair]
		if s == nil {
			s = new([]int64)
			p.samples[pair] = s
		}
		for _, t := range cand[:nc] {
			if len(*s) < maxClockSamples {
				if second {
					*s = append(*s, me.t-t)
				} else {
					*s = append(*s, t-me.t)
				}
			}
		}
		*last, *hasLast = o, true
		*other = slices.Delete(*other, i, i+1)
		return
	}
	wait(mine, me)
}

// wait appends an event to a queue of waiting events, dropping the oldest
// beyond maxWaitingOpens.
func wait(l *[]hsOpen, me hsOpen) {
	if len(*l) >= maxWaitingOpens {
		*l = slices.Delete(*l, 0, 1)
	}
	*l = append(*l, me)
}

// ipID interns an address as scoped for pairing.
func (p *clockPass) ipID(e hsEnd) uint32 {
	a := hsIP{addr: e.addr, zone: e.zone, scope: e.scope, bits: e.bits}
	four := e.bits == 32 && e.zone == 0 && e.scope == 0
	var id uint32
	var ok bool
	if four {
		id, ok = p.ipIDs4[binary.BigEndian.Uint32(e.addr[12:])]
	} else {
		id, ok = p.ipIDs[a]
	}
	if !ok {
		id = uint32(len(p.ips))
		p.ips = append(p.ips, a)
		if four {
			if p.ipIDs4 == nil {
				p.ipIDs4 = map[uint32]uint32{}
			}
			p.ipIDs4[binary.BigEndian.Uint32(e.addr[12:])] = id
		} else {
			if p.ipIDs == nil {
				p.ipIDs = map[hsIP]uint32{}
			}
			p.ipIDs[a] = id
		}
		p.isLocal = append(p.isLocal, false)
		p.parked = append(p.parked, nil)
	}
	return id
}

// park keeps an open whose peer's address (ips index peer) is no source's
// local address so far; old ones are dropped as in prune.
func (p *clockPass) park(peer uint32, o parkedOpen) {
	p.parked[peer] = append(p.parked[peer], o)
	p.nparked++
	if p.nparked < p.parkAt {
		return
	}
	old := p.now - clockHorizon
	p.nparked = 0
	for i, l := range p.parked {
		j := 0
		for j < len(l) && l[j].t < old {
			j++
		}
		if j > 0 {
			l = append(l[:0], l[j:]...)
			p.parked[i] = l
		}
		p.nparked += len(l)
	}
	p.parkAt = max(4096, 2*p.nparked)
}

// promote moves the opens parked under a peer address that has just turned
// out to be a source's into the table of waiting events, in their order:
// they wait there as they would have from the start (nothing could have
// paired with them: its source would have made the address a local one
// before).
func (p *clockPass) promote(ip uint32) {
	for _, o := range p.parked[ip] {
		k := hsConn{proto: o.proto, client: o.local, server: ip, cport: o.lport, sport: o.pport}
		if o.second {
			k = hsConn{proto: o.proto, client: ip, server: o.local, cport: o.pport, sport: o.lport}
		}
		q := p.queue(k)
		mine := &q.first
		if o.second {
			mine = &q.second
		}
		wait(mine, hsOpen{o.src, o.t})
	}
	p.nparked -= len(p.parked[ip])
	p.parked[ip] = nil
}

// prune drops what has waited past clockHorizon, whenever the table has
// doubled since the last pruning.
func (p *clockPass) prune() {
	if len(p.waiting)+len(p.waitingD) < p.pruneAt {
		return
	}
	old := p.now - clockHorizon
	keep := func(l []hsOpen) []hsOpen {
		i := 0
		for i < len(l) && l[i].t < old {
			i++
		}
		return l[i:]
	}
	for k, q := range p.waiting {
		q.first, q.second = keep(q.first), keep(q.second)
		if len(q.first) == 0 && len(q.second) == 0 {
			delete(p.waiting, k)
		}
	}
	for k, q := range p.waitingD {
		q.first, q.second = keep(q.first), keep(q.second)
		if len(q.first) == 0 && len(q.second) == 0 {
			delete(p.waitingD, k)
		}
	}
	p.pruneAt = max(4096, 2*(len(p.waiting)+len(p.waitingD)))
}

// lowInDensest is the smallest sample of the densest cluster: the window
// of width clockNear holding the most samples (the earliest such window on
// a tie).
func lowInDensest(s []int64) int64 {
	s = slices.Clone(s)
	slices.Sort(s)
	best, bestN := 0, 0
	j := 0
	for i := range s {
		for j < len(s) && s[j]-s[i] <= clockNear {
			j++
		}
		if j-i > bestN {
			best, bestN = i, j-i
		}
	}
	return s[best]
}

// clockEdge is an estimate of offset(b) − offset(a) from n handshakes;
// the true value less d lies in [lo, hi] (clockRel).
type clockEdge struct {
	a, b   int
	d      int64
	n      int
	lo, hi int64
}

// estimateOffsets runs the offset pass over sources (step 0) and returns
// each source's offset against the reference (nil when nothing was
// estimated), with warnings about large offsets.
func estimateOffsets(sources []Source, opts Options) ([]int64, []string) {
	rel, warns := estimateClocks(sources, opts)
	return rel.off, warns
}

// estimateClocks is estimateOffsets with what step 6 needs to know of the
// estimates (clockRel): which sources' offsets are related, and how well.
func estimateClocks(sources []Source, opts Options) (clockRel, []string) {
	hosts := make([]string, len(sources))
	distinct := map[string]bool{}
	captures := 0
	for i, s := range sources {
		switch s := s.(type) {
		case *logSource:
			hosts[i] = hostScope(s.obs)
			distinct[hosts[i]] = true
		case *pcapSource:
			captures++ // the clock of its sniffer
		}
	}
	if len(distinct)+min(captures, 1) < 2 {
		return sameHostClocks(hosts), nil // one host's logs, or captures alone: one clock per host already
	}
	var re []Source
	var idx []int
	for i, s := range sources {
		if r, ok := s.(rereader); ok {
			if c, err := r.reread(); err == nil {
				re = append(re, c)
				idx = append(idx, i)
			}
		}
	}
	if len(re) < 2 {
		return sameHostClocks(hosts), nil
	}
	p := &clockPass{nat: &natTable{}, waiting: map[hsConn]*hsQueue{}, waitingD: map[hsDgram]*hsQueue{}, samples: map[srcPair]*[]int64{}, pruneAt: 4096}
	for _, tr := range opts.NAT {
		p.nat.addRule(tr) // checked by newMatcher
	}
	h := make(sourceHeap, 0, len(re))
	for i, s := range re {
		c := newCursor(s, idx[i], len(re))
		if s.Next(&c.ob) {
			c.at = c.ob.Time
			h = append(h, heapItem{c.at, c, c.sc})
		}
	}
	h.init()
	for n := 1; len(h) > 0; n++ {
		c := h[0].c
		p.observe(c.idx, &c.ob)
		if c.src.Next(&c.ob) {
			c.at = c.ob.Time
			h[0].at = c.at
			h.down(0)
		} else {
			h.pop()
		}
		if len(h) > 0 {
			h[0].prefetch()
		}
		// Every observation counts, the bare ones of a log's stream
		// data too (logSource.clockOnly): the points where the rule is
		// checked, and so the samples, are those of a full reading.
		if n%clockCheckEvery == 0 && p.enough(len(sources), hosts, idx) {
			// Every source is tied to the others by pairs with plenty
			// of samples: the rest of the logs would only refine
			// offsets that matching (within its window) needs no finer.
			for _, it := range h {
				if ls, ok := it.c.src.(*logSource); ok {
					ls.stop()
				}
			}
			break
		}
	}
	// Per unordered pair: both bounds.
	var edges []clockEdge
	for pair, sp := range p.samples {
		s := *sp
		a, b := int(pair.first), int(pair.second)
		if bp, ok := p.samples[srcPair{pair.second, pair.first}]; ok {
			back := *bp
			if a > b {
				continue // handled from the other side
			}
			hi, lo := lowInDensest(s), -lowInDensest(back)
			if lo <= hi {
				d := lo + (hi-lo)/2
				edges = append(edges, clockEdge{a, b, d, len(s) + len(back), lo - d, hi - d})
			} else {
				// The bounds disagree (drift, or a mispaired
				// cluster): as far off as they are apart.
				edges = append(edges, clockEdge{a, b, hi, len(s) + len(back), hi - lo, lo - hi})
			}
			continue
		}
		// One bound only: the true offset lies below it by the
		// quickest handshake's delay, taken to be under clockNear.
		edges = append(edges, clockEdge{a, b, lowInDensest(s), len(s), -clockNear, 0})
	}
	// Sources of one host share its clock where no handshake says better.
	first := map[string]int{}
	for i, h := range hosts {
		if h == "" {
			continue
		}
		if f, ok := first[h]; ok {
			edges = append(edges, clockEdge{f, i, 0, 0, 0, 0})
		} else {
			first[h] = i
		}
	}
	if len(p.samples) == 0 {
		return sameHostClocks(hosts), nil
	}
	slices.SortStableFunc(edges, func(x, y clockEdge) int {
		if x.n != y.n {
			return y.n - x.n
		}
		if x.a != y.a {
			return x.a - y.a
		}
		return x.b - y.b
	})
	// Maximum spanning forest (Kruskal), then offsets along the trees.
	parent := make([]int, len(sources))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	adj := make([][]clockEdge, len(sources))
	for _, e := range edges {
		ra, rb := find(e.a), find(e.b)
		if ra == rb {
			continue
		}
		parent[ra] = rb
		adj[e.a] = append(adj[e.a], e)
		adj[e.b] = append(adj[e.b], clockEdge{e.b, e.a, -e.d, e.n, -e.hi, -e.lo})
	}
	off := make([]int64, len(sources))
	rel := newClockRel(len(sources))
	rel.off, rel.from, rel.to = off, p.from, p.to
	seen := make([]bool, len(sources))
	var warns []string
	warned := map[string]bool{}
	for root := range sources {
		if seen[root] {
			continue
		}
		seen[root] = true
		rel.tree[root] = int32(root)
		queue := []int{root}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for _, e := range adj[x] {
				if seen[e.b] {
					continue
				}
				seen[e.b] = true
				off[e.b] = off[x] + e.d
				rel.tree[e.b], rel.sampled[e.b] = int32(root), rel.sampled[x] || e.n > 0
				rel.parent[e.b], rel.depth[e.b] = int32(x), rel.depth[x]+1
				rel.lo[e.b], rel.hi[e.b] = rel.lo[x]+e.lo, rel.hi[x]+e.hi
				queue = append(queue, e.b)
				if e.n > 0 && math.Abs(float64(off[e.b]-off[root])) >= float64(time.Second) && (hosts[e.b] == "" || !warned[hosts[e.b]]) {
					warned[hosts[e.b]] = true
					warns = append(warns, fmt.Sprintf("clocks: %s is %+.3f s off %s (estimated from %d connection and datagram samples, for matching only; times kept as recorded)",
						sources[e.b].Name(), float64(off[e.b]-off[root])/1e9, sources[root].Name(), e.n))
				}
			}
		}
	}
	return rel, warns
}
