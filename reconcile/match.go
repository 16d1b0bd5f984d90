package reconcile

import (
	"fmt"
	"net/netip"
	"runtime/debug"
	"slices"
	"sort"
	"unsafe"

	"wap5/internal/prefetch"
	"wap5/libsockcap"
	"wap5/trace"
)

// run is a logical message being built: bytes [off, off+n) of one direction.
type run struct {
	off, n int64
	ctx    int64 // bytes of the other direction this end had seen when the run began
	t      int64 // first write (or, for a receiver-cut run, first read)
	last   int64 // latest write, for gap splitting
	node   trace.NodeID
	// actor: of a send run, the thread of its first write; of a receive
	// run, the thread of its latest read (the one that delivered its last
	// byte so far).
	actor trace.ActorID
	done  bool
}

// read is one receive: bytes [off, off+n) of the peer's direction.
type read struct {
	off, n, t int64
	node      trace.NodeID
	actor     trace.ActorID
}

// actorFix: a message emitted before the read of its last byte (at) was
// seen; that read's thread becomes its DstActor.
type actorFix struct {
	at  int64
	msg msgRef
}

// end is one end of a stream connection instance.
//
// The fields first in the record are those the scans over many ends read
// (matcher.oldestPending, the pruning of proc.held: whether the reference
// is live, its connection, its first runs, its holders): they fetch the
// record's first lines only (endHot), not all eight.
type end struct {
	c *conn
	// gen counts the retirements of this record: a reference kept past
	// its connection's retirement (matcher.pend, proc.held) is stale once
	// gen moved on, whether the record was reused since or not.
	gen    uint32
	side   uint8 // c.ends[side] is this end
	role   Role
	hasLog bool
	closed bool
	runs   []run // send runs not yet emitted; the last one may be open
	rruns  []run // receive runs, kept while the sender may be untraced
	// The first send run and receive run live here (runs and rruns start
	// as slices of them), likewise the first read, socket reference and
	// holder: a short connection has one or two of each, so its end needs
	// no other object.
	run0    [1]run
	rrun0   [1]run
	holders []holder // processes whose logs hold it (holders.go)
	hold0   [1]holder
	local   libsockcap.Endpoint // as this end sees itself
	remote  libsockcap.Endpoint // the peer as this end sees it
	// obs is the log that first observed this end (nil when only packets
	// did): step 6 never pairs two ends of one process (a relay).
	obs  *Observer
	sent int64 // highest stream offset sent (end of the bytes seen so far)
	rcvd int64
	// Offsets counted from the log's own calls (logs carry none).
	logSent, logRcvd int64
	reads            []read // receives not yet consumed
	fixes            []actorFix
	socks            []sockRef
	sock0            [1]sockRef
	read0            [1]read
	node             trace.NodeID // node of the latest observer
	// Interned names of local and remote, once known (epOK bits).
	lep, rep trace.EndpointID
	epOK     uint8
	// inPend: listed in matcher.pend (it has had a run since the last
	// look there).
	inPend bool
	// alone: allocated on its own (a connection's second end), not as
	// the end of a connEnd; reused on its own too.
	alone bool
}

// endHot is the size of end's first fields, up to and with hold0.
const endHot = unsafe.Offsetof(end{}.hold0) + unsafe.Sizeof(end{}.hold0)

// endRef is an end as listed somewhere that its retirement does not visit.
type endRef struct {
	e   *end
	gen uint32
}

func (e *end) ref() endRef { return endRef{e, e.gen} }

// live: the end is not retired since the reference was taken.
func (r endRef) live() bool { return r.e.gen == r.gen }

func (m *matcher) localEP(e *end) trace.EndpointID {
	if e.epOK&1 != 0 {
		return e.lep
	}
	return m.nameEP(e, 1)
}

func (m *matcher) remoteEP(e *end) trace.EndpointID {
	if e.epOK&2 != 0 {
		return e.rep
	}
	return m.nameEP(e, 2)
}

// nameEP names e's local (bit 1) or remote (bit 2) endpoint the first
// time it is asked for (localEP, remoteEP: inlined).
func (m *matcher) nameEP(e *end, bit uint8) trace.EndpointID {
	e.epOK |= bit
	if bit == 1 {
		e.lep = m.names.endpoint(e.local)
		return e.lep
	}
	e.rep = m.names.endpoint(e.remote)
	return e.rep
}

// conn is one instance (lifetime) of a stream connection key.
type conn struct {
	key     connKey
	aliases []connKey // keys of merged ends (translated addresses)
	ends    [2]*end
	first   int64
	// slot: where the list of its key is in matcher.conns (connIndex).
	slot int32
	// Step 6 (with lrole, below): the source of the end that created it
	// (its clock), the signature it is indexed under in matcher.sigs, and
	// the last search that looked at it.
	lsrc  int32
	sig   sizes
	visit uint32
	// gen counts the retirements of this record (see end.gen): a timer
	// of an earlier life does not fire on a reused one.
	gen uint32
	// Step 8: calls not yet answered and returns whose call is not yet
	// emitted, in stream order.
	calls []pendingCall
	rets  []pendingRet
	// Their first entries live here (calls and rets start as slices of
	// them): no allocation for a connection's usual one call and return.
	call0 [1]pendingCall
	ret0  [1]pendingRet
	// Last, so that in a connEnd gone shares a line with its end's first
	// fields (end.c, end.gen): what a lookup of an end by its socket and
	// the scans over many ends read first.
	resolved bool // both ends present, or the missing one declared untraced
	retiring bool
	gone     bool
	// Step 6: the role of the end that created it when that was a client's
	// or a server's (0 otherwise, or once its peer turned out to be an
	// untraced peer: no candidate).
	lrole  Role
	serial int32 // creation order
}

// connEnd is a connection allocated with the end that made it (one object
// instead of two: most connections of a large set have only that end, the
// peer being untraced).
type connEnd struct {
	conn
	end end
}

// newConnEnd takes a record of a retired connection (the most recently
// retired first: its lines are likely still cached) or allocates one. A
// short connection's record is otherwise its largest allocation, and the
// records of millions of connections were most of what the collector had
// to make room for.
func (m *matcher) newConnEnd() *connEnd {
	n := len(m.free)
	if n == 0 {
		return &connEnd{}
	}
	ce := m.free[n-1]
	m.reused++
	m.free[n-1] = nil
	m.free = m.free[:n-1]
	cg, eg := ce.conn.gen, ce.end.gen
	*ce = connEnd{}
	ce.conn.gen, ce.end.gen = cg, eg
	return ce
}

// newEnd is newConnEnd for a connection's second end.
func (m *matcher) newEnd() *end {
	n := len(m.freeEnds)
	if n == 0 {
		return &end{alone: true}
	}
	e := m.freeEnds[n-1]
	m.reused++
	m.freeEnds[n-1] = nil
	m.freeEnds = m.freeEnds[:n-1]
	g := e.gen
	*e = end{alone: true, gen: g}
	return e
}

// sockTable finds an end by its source's socket id: ids are a counter of
// the source, and the ends in use at a time are a narrow span of it, so a
// slice serves the span from the oldest id still in use (base) on; others
// (an id far from it, or below base) go to a map. The slice moves on as
// its oldest ends are retired: its memory follows the ends in use, not
// every socket the log ever opened (millions on a large set).
type sockTable struct {
	base   uint64 // dense[i] is socket base+i
	dense  []*end
	sparse map[uint64]*end
}

const denseSockets = 1 << 20

func (t *sockTable) get(id uint64) *end {
	if i := id - t.base; id >= t.base && i < uint64(len(t.dense)) {
		if e := t.dense[i]; e != nil || len(t.sparse) == 0 {
			return e
		}
	}
	return t.sparse[id]
}

func (t *sockTable) set(id uint64, e *end) {
	if len(t.dense) == 0 && e != nil {
		t.base = id // nothing in the span: it starts here
	}
	i := id - t.base
	inSpan := id >= t.base && i < denseSockets
	if inSpan && len(t.sparse) > 0 {
		delete(t.sparse, id) // put there when out of the span
	}
	switch {
	case inSpan && i < uint64(len(t.dense)):
		t.dense[i] = e
		if e == nil && i == 0 {
			// The oldest went: move the span past every leading gap.
			for len(t.dense) > 0 && t.dense[0] == nil {
				t.dense = t.dense[1:]
				t.base++
			}
		}
	case e == nil:
		delete(t.sparse, id)
	case inSpan:
		for uint64(len(t.dense)) < i {
			t.dense = append(t.dense, nil)
		}
		t.dense = append(t.dense, e)
	default:
		if t.sparse == nil {
			t.sparse = map[uint64]*end{}
		}
		t.sparse[id] = e
	}
}

type sockRef struct {
	src    int
	socket uint64
}

// deadline is a timer of the merged clock: resolve a connection's peer,
// retire a closed connection, or expire a datagram.
type deadline struct {
	at   int64
	c    *conn
	dg   *dgram
	gen  uint32 // c.gen when scheduled
	kind uint8
}

const (
	dlResolve uint8 = iota
	dlRetire
	dlDgram
)

// matcher holds the streaming state of steps 2–6.
type matcher struct {
	opts   Options
	window int64
	// corr is the clock offset of the observation being handled (step 0):
	// times compared across sources are ob.Time − corr.
	corr  int64
	t     *trace.Trace // the output (tables by first use: canon)
	names *namer
	canon *outCanon
	nat   natTable
	ks    keyStrings // the strings of connection keys
	now   int64

	// hostAddr is the one non-loopback address each host uses on stream
	// sockets (invalid when several), to name wildcard datagram ends.
	hostAddr map[string]netip.Addr
	socks    []sockTable // by source, by Observation.Socket
	// logged: hosts whose processes are logged; logAddr: the addresses
	// they use; covered caches the decision per capture observer.
	logged  map[string]bool
	logAddr map[netip.Addr]string
	covered map[*Observer]bool
	// conns: the instances of each connection key, by the key's hash
	// (connIndex).
	conns connIndex
	// sigs finds the connections created by a client's or a server's end
	// that are still lonely, by the sizes of their first messages (step 6).
	sigs sigIndex
	// clk: what step 0 knows of the sources' clocks; peers: the lonely
	// connections by peer address (step 6, natcheck.go).
	clk    clockRel
	peers  peerTable
	timers []deadline // FIFO: deadlines are pushed in nondecreasing order
	thead  int
	// pend: the ends that may have runs not yet emitted (every end that
	// has one is listed), for oldestPending.
	pend []endRef
	// free, freeEnds: records of retired connections, for newConnEnd
	// and newEnd.
	free     []*connEnd
	freeEnds []*end
	reused   int // records taken from them
	// pre: by source, the connection key of the stream open it has read
	// next, made when it was read (prefetchObs) for endOf.
	pre []preKey
	// preHits, preStale: keys of m.pre used, and found out of date
	// (tests).
	preHits, preStale int
	// inFlight counts the connections made and not retired yet (those
	// merged in step 6 included): below prefetchFrom their records stay
	// cached, and prefetching them would only cost its calls.
	inFlight int

	dg dgramState

	// Holders (holders.go): the logs by process, and the live processes.
	procLogs map[procKey][]*Observer
	procs    map[procKey]*proc

	// Messages emitted so far, in blocks (see chunkSize).
	chunks [][]trace.Message
	chunk  []trace.Message
	// sink, when set, takes the messages as messages() gathers them.
	sink Sink
	// st, when streaming (Options.Stream), writes them out as the
	// window lets them go instead (emit.go).
	st *streamState

	// Counts for warnings.
	lostDgrams, dupDgrams, unreadBytes, dupRanges int64
	nconn                                         int32
	nextCall                                      int32
}

func newMatcher(t *trace.Trace, opts Options) (*matcher, error) {
	w := int64(opts.Window)
	if w <= 0 {
		w = int64(DefaultWindow)
	}
	m := &matcher{opts: opts, window: w, t: t, names: newNamer(opts.Granularity),
		hostAddr: map[string]netip.Addr{},
		logged:   map[string]bool{}, logAddr: map[netip.Addr]string{}, covered: map[*Observer]bool{}}
	m.canon = newOutCanon(m.names, t)
	m.dg.init()
	for _, tr := range opts.NAT {
		if err := m.nat.addRule(tr); err != nil {
			return nil, fmt.Errorf("nat rule %s %s -> %s: %v", tr.Kind, tr.Before, tr.After, err)
		}
	}
	return m, nil
}

// advance moves the merged clock and fires due timers.
func (m *matcher) advance(t int64) {
	if t > m.now {
		m.now = t
	}
	for m.thead < len(m.timers) && m.timers[m.thead].at <= m.now {
		d := m.timers[m.thead]
		m.timers[m.thead] = deadline{}
		m.thead++
		if m.inFlight >= prefetchFrom {
			m.prefetchTimers()
		}
		m.fire(d)
	}
	if m.thead > 4096 && m.thead*2 > len(m.timers) {
		n := copy(m.timers, m.timers[m.thead:])
		m.timers = m.timers[:n]
		m.thead = 0
	}
}

// prefetchObs fetches the record of the end that an observation just read
// from a source will find by its socket id: the observation is handled
// once the merge (step 1) comes to it, after those of the other sources
// that are earlier, which leaves the fetch time to complete. The end's
// connection is usually the record it lives in (a connEnd), so that is
// fetched whole; for an end allocated alone the lines before it are some
// other object's, which costs only the fetch.
func (m *matcher) prefetchObs(src int, ob *Observation) {
	if src < len(m.pre) {
		m.pre[src].ok = false // made for the observation before
	}
	if m.inFlight >= prefetchFrom {
		m.prefetchFor(src, ob)
	}
}

// prefetchFor is prefetchObs's fetch (prefetchObs is inlined).
func (m *matcher) prefetchFor(src int, ob *Observation) {
	if ob.Op == OpOpen {
		m.prefetchOpen(src, ob)
		return
	}
	if ob.Socket == 0 || src >= len(m.socks) {
		return
	}
	if e := m.socks[src].get(ob.Socket); e != nil {
		prefetch.Lines(uintptr(unsafe.Pointer(e))-unsafe.Offsetof(connEnd{}.end), unsafe.Sizeof(connEnd{}))
	}
}

// preKey is the key of a connection an open is about to look up (see
// prefetchObs): valid (ok) for the observation its source has read next,
// while the translations (natTable.ver) are those it was made with.
type preKey struct {
	key  connKey
	h    uint64
	side int
	nat  uint32
	ok   bool
}

// prefetchOpen keys the connection of a stream open just read from source
// src and fetches the slot of the connection table where endOf will look
// it up: the key is kept for endOf (m.pre), so it is made once either way.
// Opens of IP sockets only (Unix names and IPv6 zones are interned as
// they are keyed: made in their order of use).
func (m *matcher) prefetchOpen(src int, ob *Observation) {
	if !ob.Stream || ob.Observer == nil || ob.Proto == libsockcap.ProtoUnix || ob.Local.Unix || ob.Remote.Unix ||
		ob.Local.IsZero() && ob.Remote.IsZero() || ob.Local.Addr.Addr().Zone() != "" || ob.Remote.Addr.Addr().Zone() != "" {
		return
	}
	for len(m.pre) <= src {
		m.pre = append(m.pre, preKey{})
	}
	p := &m.pre[src]
	p.key, p.side = m.connKeyOf(ob)
	p.h, p.nat, p.ok = p.key.hash(), m.nat.ver, true
	m.conns.prefetch(p.h)
}

// reuseRecords: retired connections' records are reused (a variable for
// tests, which compare with a run that never reuses one).
var reuseRecords = true

// prefetchTimers prefetches for the timers after the one firing now:
// the record of the one timerAhead on, a window after it was last
// touched (out of the caches by now: fetching it from memory while this
// one fires overlaps the two); for a retirement timerAhead/2 on, whose
// record is in by now, the connection table's slot it leaves. (The slots
// of its endpoints' names, which it looks up when it emits, were fetched
// too until rc8: an address lookup and a prefetch per end for names
// mostly new, and the full set ran 3–9 % faster without them in three
// pairs of runs side by side, bench/results-rc8.md.)
func (m *matcher) prefetchTimers() {
	if i := m.thead + timerAhead; i < len(m.timers) {
		if c := m.timers[i].c; c != nil {
			prefetch.Lines(uintptr(unsafe.Pointer(c)), unsafe.Sizeof(connEnd{}))
		}
	}
	if i := m.thead + timerAhead/2; i < len(m.timers) && m.timers[i].kind == dlRetire {
		if c := m.timers[i].c; c != nil && !c.gone {
			m.conns.prefetchSlot(c.slot) // retire drops it from its list
		}
	}
}

// prefetchFrom is how many connections in flight make advance and
// prefetchObs prefetch their records: 2048 records are 1.5 MB, about
// what a core's own caches hold. A variable for tests (prefetching must
// change nothing but the time).
var prefetchFrom = 2048

// timerAhead is how many timers ahead advance prefetches.
var timerAhead = 8

func (m *matcher) schedule(d deadline) {
	if d.c != nil {
		d.gen = d.c.gen
	}
	m.timers = append(m.timers, d)
}

func (m *matcher) fire(d deadline) {
	switch d.kind {
	case dlResolve:
		if d.c.gen == d.gen && !d.c.gone && !d.c.resolved {
			m.resolve(d.c)
			m.pump(d.c, false)
		}
	case dlRetire:
		c := d.c
		if c.gen != d.gen || c.gone {
			return
		}
		c.retiring = false
		for _, e := range c.ends {
			if e != nil && !e.closed {
				return // used again since (a forked child): wait for its close
			}
		}
		m.retire(c)
	case dlDgram:
		m.expireDgram(d.dg)
	}
}

// observe handles one observation (steps 2–5).
func (m *matcher) observe(src int, ob *Observation, corr int64) {
	m.corr = corr
	// advance, its usual case in place: the clock moves, no timer is due
	// (the timers' list only grows between firings, so advance compacts
	// it whenever it can)
	if t := ob.Time - corr; t > m.now {
		m.now = t
	}
	if m.thead < len(m.timers) && m.timers[m.thead].at <= m.now {
		m.advance(m.now)
	}
	if ob.Observer == nil {
		return
	}
	if ob.Origin == OriginPacket && m.coveredByLogs(ob.Observer) {
		return // logs win for the hosts they cover
	}
	switch ob.Op {
	case OpFork:
		m.fork(ob)
		return
	case OpExit:
		m.exit(ob)
		return
	}
	if ob.Origin == OriginLog && ob.Op == OpOpen {
		m.noteLogAddr(ob)
	} else if ob.Op == OpOpen && !m.opts.DisableNATDetection {
		m.peers.noteLocal(ob.Local) // a captured end: a traced host's address (step 6)
	}
	if !ob.Stream {
		m.observeDgram(ob)
		return
	}
	// endOf's usual case in place: the end of a known socket
	var e *end
	if ob.Socket != 0 && ob.Op != OpOpen && src < len(m.socks) {
		if x := m.socks[src].get(ob.Socket); x != nil && !x.c.gone {
			e = x
		}
	}
	if e == nil {
		if e = m.endOf(src, ob); e == nil {
			return
		}
	}
	if ob.Origin == OriginPacket && e.hasLog {
		return // the log of this end says it better
	}
	e.node = m.names.node(ob.Observer)
	if ob.Origin == OriginLog && !e.hasLog {
		// The log takes over an end a capture saw first: what is still
		// pending belongs to the logged process.
		e.hasLog, e.obs = true, ob.Observer
		for i := range e.runs {
			e.runs[i].node = e.node
		}
		for i := range e.reads {
			e.reads[i].node = e.node
		}
		for i := range e.rruns {
			e.rruns[i].node = e.node
		}
	}
	if ob.Op == OpOpen {
		m.noteAddr(ob.Observer, ob.Local)
	}
	if ob.Origin == OriginLog && ob.Op != OpClose {
		// hold's usual case in place: the process holds it already
		if o, h := ob.Observer, e.holders; len(h) > 0 && o.procBy == m && h[0].p == o.proc {
			h[0].held = true
		} else {
			m.hold(e, o)
		}
	}
	c := e.c
	var act trace.ActorID
	if ob.Tid > 0 {
		act = m.names.actor(ob.Observer, ob.Tid)
	}
	switch ob.Op {
	case OpOpen:
		if ob.Role != RoleUnknown {
			e.role = ob.Role
		}
	case OpSend:
		if ob.Bytes <= 0 {
			return
		}
		m.send(e, ob, act)
		e.closed = false
	case OpRecv:
		if ob.Bytes <= 0 {
			return
		}
		m.recv(e, ob, act)
		e.closed = false
	case OpClose:
		if ob.Origin == OriginLog && m.release(e, ob.Observer) {
			return // another process (a forked child) still holds the socket
		}
		m.closeEnd(e)
	}
	m.indexSig(c)
	m.pump(c, false)
}

// closeEnd: the end went away (its last holder closed it, or FIN/RST); its
// open runs are over.
func (m *matcher) closeEnd(e *end) {
	c := e.c
	e.closed = true
	if n := len(e.runs); n > 0 {
		e.runs[n-1].done = true
	}
	if n := len(e.rruns); n > 0 {
		e.rruns[n-1].done = true
	}
	other := c.ends[1-e.side]
	if !c.retiring && (other == nil && c.resolved || other != nil && other.closed) {
		c.retiring = true
		m.schedule(deadline{at: m.now + m.window, c: c, kind: dlRetire})
	}
}

// coveredByLogs reports whether a capture's host is one whose processes are
// logged: by name, or by an address a logged host was seen using.
func (m *matcher) coveredByLogs(o *Observer) bool {
	if len(m.logged) == 0 {
		return false
	}
	if m.covered[o] {
		return true
	}
	c := m.logged[o.Host]
	if !c {
		if a, err := netip.ParseAddr(o.Host); err == nil {
			_, c = m.logAddr[a]
		}
	}
	if c {
		m.covered[o] = true // only yes is final: a log may name the host later
	}
	return c
}

func (m *matcher) noteLogAddr(ob *Observation) {
	if ob.Local.Unix || !ob.Local.Addr.IsValid() {
		return
	}
	if a := ob.Local.Addr.Addr().Unmap(); !a.IsLoopback() && !a.IsUnspecified() {
		if h, ok := m.logAddr[a]; !ok || h != ob.Observer.Host {
			m.logAddr[a] = ob.Observer.Host
		}
	}
}

// noteAddr remembers the address a host uses (see hostAddr), seen by o.
func (m *matcher) noteAddr(o *Observer, e libsockcap.Endpoint) {
	if e.Unix || !e.Addr.IsValid() {
		return
	}
	a := e.Addr.Addr()
	if a.IsLoopback() || a.IsUnspecified() {
		return
	}
	if o.notedBy == m && o.noted == a {
		return // noted already: the entry holds a, or "several"
	}
	o.notedBy, o.noted = m, a
	n := netScope(o)
	old, seen := m.hostAddr[n]
	switch {
	case !seen:
		m.hostAddr[n] = a
	case old.IsValid() && old != a:
		m.hostAddr[n] = netip.Addr{} // several: no single name
	}
}

// endOf finds or creates the end an observation belongs to (step 2).
func (m *matcher) endOf(src int, ob *Observation) *end {
	ref := sockRef{src, ob.Socket}
	if ob.Socket != 0 && ob.Op != OpOpen && src < len(m.socks) {
		if e := m.socks[src].get(ob.Socket); e != nil && !e.c.gone {
			return e
		}
	}
	if ob.Local.IsZero() && ob.Remote.IsZero() {
		return nil
	}
	var key connKey
	var side int
	var h uint64
	if p := m.preOf(src); p != nil {
		key, side, h = p.key, p.side, p.h
	} else {
		key, side = m.connKeyOf(ob)
		h = key.hash()
	}
	list := m.conns.list(h, &key)
	var c *conn
	if ob.Op == OpOpen {
		m.abandonUnanswered(list, side)
		// The first live instance still waiting for this end, or whose
		// end so far comes only from a capture (a log's connect can be
		// stamped after the SYN was captured): the log takes it over.
		for _, x := range list {
			if x.gone {
				continue
			}
			if x.ends[side] == nil && !x.resolved {
				c = x
				break
			}
			if pe := x.ends[side]; pe != nil && ob.Origin == OriginLog && !pe.hasLog && m.now-x.first <= m.window {
				c = x
				break
			}
		}
	} else {
		// Data without an open: the latest instance with this end, else
		// one waiting for it (a log that started mid-connection, a forked
		// child, packets without the handshake).
		for i := len(list) - 1; i >= 0; i-- {
			if x := list[i]; x.ends[side] != nil && !x.gone {
				c = x
				break
			}
		}
		if c == nil {
			for _, x := range list {
				if x.ends[side] == nil && !x.resolved && !x.gone {
					c = x
					break
				}
			}
		}
	}
	var fresh *end // c's first end, made with it
	if c == nil {
		m.nconn++
		m.inFlight++
		ce := m.newConnEnd()
		ce.key, ce.first, ce.serial = key, m.now, m.nconn
		c, fresh = &ce.conn, &ce.end
		c.calls, c.rets = c.call0[:0], c.ret0[:0]
		c.slot = m.conns.add(h, c)
		if ob.Role == RoleClient || ob.Role == RoleServer {
			m.addLonely(c, ob.Role, src)
		}
		m.schedule(deadline{at: m.now + m.window, c: c, kind: dlResolve})
	}
	e := c.ends[side]
	if e == nil {
		if e = fresh; e == nil {
			e = m.newEnd()
		}
		e.c, e.side, e.local, e.remote, e.role = c, uint8(side), ob.Local, ob.Remote, ob.Role
		e.socks, e.holders = e.sock0[:0], e.hold0[:0]
		e.runs, e.reads, e.rruns = e.run0[:0], e.read0[:0], e.rrun0[:0]
		c.ends[side] = e
		if other := c.ends[1-side]; other != nil {
			m.paired(c)
		}
	} else if ob.Op == OpOpen && ob.Role != RoleUnknown {
		e.role = ob.Role
	}
	if e.local.IsZero() || (!e.local.Unix && e.local.Addr.Addr().IsUnspecified()) {
		e.local, e.epOK = ob.Local, 0
	}
	if e.remote.IsZero() {
		e.remote, e.epOK = ob.Remote, 0
	}
	if ob.Socket != 0 {
		for len(m.socks) <= src {
			m.socks = append(m.socks, sockTable{})
		}
		m.socks[src].set(ob.Socket, e)
		e.socks = append(e.socks, ref)
	}
	return e
}

// preOf takes the key prefetchOpen made for the observation of src being
// handled, if it is still valid.
func (m *matcher) preOf(src int) *preKey {
	if src >= len(m.pre) || !m.pre[src].ok {
		return nil
	}
	p := &m.pre[src]
	p.ok = false
	if p.nat != m.nat.ver {
		m.preStale++
		return nil
	}
	m.preHits++
	return p
}

// abandonUnanswered: an end opening a connection instance again on the same
// addresses ends the wait of earlier instances it opened and closed without
// a byte either way and whose peer never came (a refused non-blocking
// connect): a 4-tuple is reused only once its earlier connection is gone at
// both ends, so the peer's next open is for the new instance.
func (m *matcher) abandonUnanswered(list []*conn, side int) {
	for _, x := range list {
		if x.gone || x.resolved || x.ends[1-side] != nil {
			continue
		}
		if e := x.ends[side]; e != nil && e.closed && e.sent == 0 && e.rcvd == 0 && e.logSent == 0 && e.logRcvd == 0 {
			m.resolve(x)
		}
	}
}

// addLonely makes a new connection created by a client's or a server's
// end (role r) a candidate for step 6.
func (m *matcher) addLonely(c *conn, r Role, src int) {
	if m.opts.DisableNATDetection {
		return // no step 6: no index of candidates
	}
	c.lrole, c.lsrc = r, int32(src)
}

// paired is called when a connection has both ends: the receiver-cut runs
// are no longer needed.
func (m *matcher) paired(c *conn) {
	c.resolved = true
	for _, e := range c.ends {
		e.rruns = nil
	}
}

// send extends the end's open run or starts a new one (step 3).
func (m *matcher) send(e *end, ob *Observation, act trace.ActorID) {
	off, n := ob.Offset, ob.Bytes
	if off < 0 {
		off = e.logSent
		e.logSent += n
	}
	if off+n <= e.sent {
		m.dupRanges++
		return // seen already (retransmission, second sniffer, capture before log)
	}
	if off < e.sent {
		n -= e.sent - off
		off = e.sent
	}
	e.sent = off + n
	if k := len(e.runs); k > 0 {
		r := &e.runs[k-1]
		if !r.done && r.off+r.n == off && (m.opts.SplitGap <= 0 || ob.Time-r.last <= int64(m.opts.SplitGap)) {
			r.n += n
			r.last = ob.Time
			return
		}
		r.done = true
	}
	e.runs = append(e.runs, run{off: off, n: n, ctx: e.rcvd, t: ob.Time, last: ob.Time, node: e.node, actor: act})
	m.pending(e)
	// The other side spoke: the peer's receive run is over.
	if k := len(e.rruns); k > 0 {
		e.rruns[k-1].done = true
	}
}

// recv records a receive, ends this end's open send run, and extends its
// receive run while the sender may be untraced.
func (m *matcher) recv(e *end, ob *Observation, act trace.ActorID) {
	off, n := ob.Offset, ob.Bytes
	if off < 0 {
		off = e.logRcvd
		e.logRcvd += n
	}
	if off+n <= e.rcvd {
		m.dupRanges++
		return
	}
	if off < e.rcvd {
		n -= e.rcvd - off
		off = e.rcvd
	}
	e.rcvd = off + n
	if k := len(e.runs); k > 0 {
		e.runs[k-1].done = true
	}
	c := e.c
	sender := c.ends[1-e.side]
	if sender == nil {
		k := len(e.rruns)
		if k > 0 && !e.rruns[k-1].done && e.rruns[k-1].off+e.rruns[k-1].n == off &&
			(m.opts.SplitGap <= 0 || ob.Time-e.rruns[k-1].last <= int64(m.opts.SplitGap)) {
			e.rruns[k-1].n += n
			e.rruns[k-1].last = ob.Time
			e.rruns[k-1].actor = act
		} else {
			if k > 0 {
				e.rruns[k-1].done = true
			}
			e.rruns = append(e.rruns, run{off: off, n: n, ctx: e.sent, t: ob.Time, last: ob.Time, node: e.node, actor: act})
			m.pending(e)
		}
		if c.resolved {
			return // sender untraced: the receive runs are the messages
		}
	}
	e.reads = append(e.reads, read{off: off, n: n, t: ob.Time, node: e.node, actor: act})
	// Messages emitted before their last byte was read take this read's
	// thread if it delivered that byte.
	for len(e.fixes) > 0 && e.fixes[0].at < off+n {
		if e.fixes[0].at >= off {
			if msg := m.msgAt(e.fixes[0].msg); msg != nil {
				msg.DstActor = act
			}
		}
		m.unholdMsg(e.fixes[0].msg)
		e.fixes = popFront(e.fixes)
	}
}

// pending lists e in m.pend, when streaming (a run was added).
func (m *matcher) pending(e *end) {
	if !e.inPend && m.st != nil {
		e.inPend = true
		m.pend = append(m.pend, e.ref())
	}
}

// pump emits every message of c that can be decided now; final forces the
// rest out (unread bytes get an unknown receive time).
func (m *matcher) pump(c *conn, final bool) {
	for d := 0; d < 2; d++ {
		s, r := c.ends[d], c.ends[1-d]
		switch {
		case s != nil && r != nil:
			m.pumpPair(s, r, final)
		case s != nil && (c.resolved || final):
			for len(s.runs) > 0 && (s.runs[0].done || final) {
				x := s.runs[0]
				s.runs = popFront(s.runs)
				m.emitStream(c, &x, s.role, x.t, x.node, m.localEP(s), trace.Unknown, m.names.peer(s.remote), m.remoteEP(s), x.actor, trace.NoActor)
			}
			compact(&s.runs)
		case r != nil && (c.resolved || final):
			r.reads = r.reads[:0]
			for len(r.rruns) > 0 && (r.rruns[0].done || final) {
				x := r.rruns[0]
				r.rruns = popFront(r.rruns)
				role := RoleUnknown
				switch r.role {
				case RoleServer:
					role = RoleClient
				case RoleClient:
					role = RoleServer
				}
				m.emitStream(c, &x, role, trace.Unknown, m.names.peer(r.remote), m.remoteEP(r), x.t, x.node, m.localEP(r), trace.NoActor, x.actor)
			}
			compact(&r.rruns)
		}
	}
}

// popFront drops a queue's first element; a short queue keeps its whole
// array, so a connection's steady back-and-forth allocates nothing.
func popFront[T any](s []T) []T {
	if len(s) <= 16 {
		// Short queues (the usual one or two entries) shift down, so the
		// array's front is never lost to reslicing.
		copy(s, s[1:])
		return s[:len(s)-1]
	}
	return s[1:]
}

func compact[T any](s *[]T) {
	if len(*s) == 0 && cap(*s) > 64 {
		*s = nil
	}
}

// pumpPair matches the sender's runs against the receiver's reads (step 3).
func (m *matcher) pumpPair(s, r *end, final bool) {
	if len(s.runs) > 0 && !s.runs[0].done && !final {
		return // the first run is still open (the usual case, inlined)
	}
	m.pumpRuns(s, r, final)
}

// pumpRuns is pumpPair past its inlined case.
func (m *matcher) pumpRuns(s, r *end, final bool) {
	for len(s.runs) > 0 {
		x := &s.runs[0]
		if !x.done && !final {
			return
		}
		target := x.off
		if m.opts.RecvAt == RecvLast {
			target = x.off + x.n - 1
		}
		for len(r.reads) > 0 && r.reads[0].off+r.reads[0].n <= target {
			r.reads = popFront(r.reads)
		}
		recvT, recvNode := trace.Unknown, r.node
		if len(r.reads) > 0 && r.reads[0].off <= target {
			recvT, recvNode = r.reads[0].t, r.reads[0].node
		} else if !final {
			return // not read yet
		} else {
			m.unreadBytes += x.n
		}
		// DstActor: the thread of the read that delivered the last byte.
		da, pending := trace.NoActor, false
		if recvT != trace.Unknown {
			last := x.off + x.n - 1
			pending = true
			for i := range r.reads {
				if rd := &r.reads[i]; rd.off+rd.n > last {
					if rd.off <= last {
						da, pending = rd.actor, false
					}
					break
				}
			}
		}
		m.emitStream(s.c, x, s.role, x.t, x.node, m.localEP(s), recvT, recvNode, m.localEP(r), x.actor, da)
		if pending && !final {
			ref := m.lastRef()
			m.holdMsg(ref)
			r.fixes = append(r.fixes, actorFix{at: x.off + x.n - 1, msg: ref})
		}
		s.runs = popFront(s.runs)
	}
	compact(&s.runs)
	compact(&r.reads)
}

// emit appends a message and returns it (valid until messages(), or while
// streaming until the next observation: blocks never move; lastRef names
// it for later).
func (m *matcher) emit(send int64, src trace.NodeID, srcEP trace.EndpointID, recv int64, dst trace.NodeID, dstEP trace.EndpointID, n int64) *trace.Message {
	if len(m.chunk) == cap(m.chunk) {
		if m.chunk != nil {
			m.chunks = append(m.chunks, m.chunk)
		}
		m.chunk = m.newChunk()
	}
	m.chunk = append(m.chunk, trace.Message{Send: send, Recv: recv, ID: trace.NoRef, Bytes: n,
		Src: src, Dst: dst, SrcEP: srcEP, DstEP: dstEP, Call: trace.NoRef, Truth: trace.NoRef})
	return &m.chunk[len(m.chunk)-1]
}

// emitStream emits a stream message and pairs calls with returns on its
// connection (step 8): a message from the connecting end is a call; one
// from the accepting end is the return of the call holding the last byte
// the server had read when it began to answer (run.ctx). Pairing by stream
// offsets, not by time, holds whatever the clocks of the two hosts say.
func (m *matcher) emitStream(c *conn, x *run, role Role, send int64, src trace.NodeID, srcEP trace.EndpointID, recv int64, dst trace.NodeID, dstEP trace.EndpointID, sa, da trace.ActorID) *trace.Message {
	msg := m.emit(send, src, srcEP, recv, dst, dstEP, x.n)
	msg.SrcActor, msg.DstActor = sa, da
	switch role {
	case RoleClient:
		msg.Kind, msg.Call = trace.KindCall, m.nextCall
		m.nextCall++
		c.calls = append(c.calls, pendingCall{off: x.off, end: x.off + x.n, id: msg.Call})
	case RoleServer:
		if x.ctx <= 0 {
			return msg // the server spoke first: not an answer
		}
		ref := m.lastRef()
		m.holdMsg(ref)
		c.rets = append(c.rets, pendingRet{at: x.ctx - 1, msg: ref})
	default:
		return msg
	}
	m.pairCalls(c, false)
	return msg
}

type pendingCall struct {
	off, end int64
	id       int32
}

type pendingRet struct {
	at  int64  // the last request byte the server had read
	msg msgRef // held until settled (emit.go)
}

// pairCalls settles the returns whose call is known; final gives up on the
// rest (their calls were never seen).
func (m *matcher) pairCalls(c *conn, final bool) {
	for len(c.rets) > 0 {
		r := c.rets[0]
		for len(c.calls) > 0 && c.calls[0].end <= r.at {
			c.calls = popFront(c.calls) // ended before: not answered by this one
		}
		switch {
		case len(c.calls) > 0 && c.calls[0].off <= r.at:
			if msg := m.msgAt(r.msg); msg != nil {
				msg.Kind, msg.Call = trace.KindReturn, c.calls[0].id
			}
			c.calls = popFront(c.calls)
		case len(c.calls) == 0 && !final:
			return // its call is not decided yet
		}
		m.unholdMsg(r.msg)
		c.rets = popFront(c.rets)
	}
}

// chunkSize is how many messages the matcher collects per block: the
// result is copied once into a slice of the exact size instead of being
// regrown (and copied, and faulted in) many times.
var chunkSize = 1 << 15 // a variable for tests (small blocks release often)

// messages moves the collected messages into the trace, sorted by time
// (send time, else receive time; ties by content: canon.go), renumbered
// into the trace's tables by first use — step 9. Sorting
// 16-byte keys and gathering once is much cheaper than sorting 64-byte
// messages, and the gather is the copy out of the blocks anyway.
func (m *matcher) messages() error {
	n := len(m.chunk)
	for _, c := range m.chunks {
		n += len(c)
	}
	if len(m.chunk) > 0 || len(m.chunks) == 0 {
		m.chunks = append(m.chunks, m.chunk)
	}
	blocks := m.chunks
	// With a sink there is no result to make room for: blocks are
	// dropped as they are consumed (by the second merge).
	release := m.opts.ReturnMemory && len(blocks) >= releaseBlocks && m.sink == nil
	if release {
		debug.FreeOSMemory() // the inputs' buffers, before the result
	}
	// Each block sorted stably by time (16-byte keys, then an in-place
	// permutation: cheaper than moving 64-byte messages in a sort).
	var keys []sortKey
	for _, c := range blocks {
		keys = sortBlock(c, keys)
	}
	keys = nil
	// Merge the blocks into the result (mergeBlocks).
	// Step 9's numbering and renumbering into the output's tables (canon)
	// are done as the messages are copied (while they are in cache), not
	// in passes of their own; a run of messages of one time is settled
	// once the merge has moved past its time.
	num := newCallNumbers(m.nextCall)
	c := m.canon
	settle := func(msgs []trace.Message) {
		c.sortTies(msgs)
		c.remap(msgs)
		num.number(msgs)
	}
	if m.sink != nil {
		// The sink begins with the final tables: a first merge only
		// numbers them (first use), the second hands the messages out.
		var stage []trace.Message
		pass := func(out bool) error {
			stage = stage[:0]
			step := func(msgs []trace.Message) error {
				if !out {
					c.sortTies(msgs)
					c.remap(msgs)
					return nil
				}
				settle(msgs)
				return m.sink.Messages(msgs)
			}
			err := mergeBlocks(blocks, out, false, func(run []trace.Message) error {
				stage = append(stage, run...)
				cut := tieCut(stage)
				if cut == 0 {
					return nil
				}
				err := step(stage[:cut])
				stage = stage[:copy(stage, stage[cut:])]
				return err
			})
			if err == nil && len(stage) > 0 {
				err = step(stage)
			}
			return err
		}
		if err := pass(false); err != nil {
			return err
		}
		c.finishTables(true)
		if err := m.sink.Begin(m.t, n); err != nil {
			return err
		}
		if err := pass(true); err != nil {
			return err
		}
		m.chunks, m.chunk = nil, nil
		return nil
	}
	msgs := make([]trace.Message, 0, n)
	done := 0
	mergeBlocks(blocks, true, release, func(run []trace.Message) error {
		msgs = append(msgs, run...)
		cut := done + tieCut(msgs[done:])
		settle(msgs[done:cut])
		done = cut
		return nil
	})
	settle(msgs[done:])
	c.finishTables(true)
	m.chunks, m.chunk = nil, nil
	m.t.Messages = msgs
	if release {
		debug.FreeOSMemory() // the last blocks
	}
	return nil
}

// mergeBlocks merges the blocks, each sorted by time, handing out runs
// of messages in time order (ties to the earlier block: the order of a
// stable sort of everything in emission order). Messages come out nearly
// in time order, so the merge mostly hands out long runs of one block, and
// blocks empty one after another: with drop each is dropped once handed
// out, and with release the memory goes back to the system now and then,
// so that blocks and result are not both resident (peak ≈ the result, not
// twice it).
func mergeBlocks(blocks [][]trace.Message, drop, release bool, out func([]trace.Message) error) error {
	pos := make([]int, len(blocks))
	h := blockHeap{blocks: blocks, pos: pos}
	for i, c := range blocks {
		if len(c) > 0 {
			h.idx = append(h.idx, i)
		}
	}
	h.init()
	every := max(releaseBlocks, len(blocks)/8) // at most ~8 releases: each is a full GC
	freed := 0
	for len(h.idx) > 0 {
		bi := h.idx[0]
		b := blocks[bi]
		// Hand out this block's messages while it stays ahead of every
		// other head.
		p := pos[bi]
		end := len(b)
		if len(h.idx) > 1 {
			limT, limB := h.second()
			q := p + 1
			for q < end {
				t := b[q].Time()
				if t > limT || t == limT && bi > limB {
					break
				}
				q++
			}
			end = q
		}
		if err := out(b[p:end]); err != nil {
			return err
		}
		pos[bi] = end
		if end == len(b) {
			if drop {
				blocks[bi] = nil
			}
			h.pop()
			if freed++; release && freed%every == 0 {
				debug.FreeOSMemory()
			}
		} else {
			h.down(0)
		}
	}
	return nil
}

type sortKey struct {
	t   int64
	idx int32
}

// sortBlock sorts one block stably by time, reusing keys.
func sortBlock(c []trace.Message, keys []sortKey) []sortKey {
	keys = sortKeys(c, keys)
	// Position i takes the message at keys[i].idx; follow the cycles.
	for i := range keys {
		if keys[i].idx < 0 || int(keys[i].idx) == i {
			continue
		}
		tmp := c[i]
		j := i
		for {
			k := int(keys[j].idx)
			keys[j].idx = -1
			if k == i {
				c[j] = tmp
				break
			}
			c[j] = c[k]
			j = k
		}
	}
	return keys
}

// blockHeap orders blocks by their next message (time, then block index).
type blockHeap struct {
	blocks [][]trace.Message
	pos    []int
	idx    []int
}

func (h *blockHeap) less(a, b int) bool {
	ta, tb := h.blocks[a][h.pos[a]].Time(), h.blocks[b][h.pos[b]].Time()
	return ta < tb || ta == tb && a < b
}

func (h *blockHeap) init() {
	for i := len(h.idx)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *blockHeap) down(i int) {
	n := len(h.idx)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && h.less(h.idx[r], h.idx[l]) {
			j = r
		}
		if !h.less(h.idx[j], h.idx[i]) {
			return
		}
		h.idx[i], h.idx[j] = h.idx[j], h.idx[i]
		i = j
	}
}

func (h *blockHeap) pop() {
	n := len(h.idx) - 1
	h.idx[0] = h.idx[n]
	h.idx = h.idx[:n]
	h.down(0)
}

// second is the head (time, block) of the runner-up: the smaller child of
// the root.
func (h *blockHeap) second() (int64, int) {
	c := 1
	if len(h.idx) > 2 && h.less(h.idx[2], h.idx[1]) {
		c = 2
	}
	b := h.idx[c]
	return h.blocks[b][h.pos[b]].Time(), b
}

// releaseBlocks: on traces of at least this many blocks, the memory of the
// copied blocks is returned to the system every this many blocks (or every
// eighth of them) during the gather.
const releaseBlocks = 4

// resolve decides a connection with one end: a translated peer (step 6) or
// an untraced one (step 5).
func (m *matcher) resolve(c *conn) {
	if c.resolved {
		return
	}
	if !m.opts.DisableNATDetection {
		if m.pairTranslated(c) {
			return
		}
		m.noteLonely(c)
	}
	c.resolved = true
	for _, e := range c.ends {
		if e != nil {
			e.reads = e.reads[:0]
			if e.closed && !c.retiring {
				c.retiring = true
				m.schedule(deadline{at: m.now + m.window, c: c, kind: dlRetire})
			}
		}
	}
}

// pairTranslated looks for a lonely connection of the opposite role whose
// first messages agree with c's (step 6) and merges the two.
func (m *matcher) pairTranslated(c *conn) bool {
	var e *end
	for _, x := range c.ends {
		if x != nil {
			e = x
		}
	}
	if e == nil || e.role == RoleUnknown || e.role == RolePair || c.key.proto == libsockcap.ProtoUnix {
		return false
	}
	sig := signature(e)
	if sig == (sizes{}) {
		return false
	}
	if sig.up < 0 || sig.down < 0 {
		return false // agrees with nothing
	}
	if m.untracedPeer(e) {
		return false
	}
	want := RoleServer
	if e.role == RoleServer {
		want = RoleClient
	}
	// Only candidates that know a direction c knows, with the same size,
	// can agree: those listed under that size (every lonely connection is
	// listed under each known size of its signature, see indexSig), in
	// order of creation time. Walk outwards from c's creation time, nearer
	// side first, until the window or the best so far is passed.
	m.sigs.stamp++
	var best *conn
	var bestDT int64
	consider := func(o *conn, dt int64) {
		if o.gone || o.resolved || o.visit == m.sigs.stamp {
			return
		}
		o.visit = m.sigs.stamp // listed under both sizes: look once
		if o == c || o.key.proto != c.key.proto {
			return
		}
		var oe *end
		for _, x := range o.ends {
			if x != nil {
				oe = x
			}
		}
		if oe == nil || oe.role == RoleUnknown || oe.role == e.role || oe.role == RolePair {
			return
		}
		if !sig.agrees(signature(oe)) || relay(e.obs, oe.obs) || !causal(e, oe) || !m.timely(c, e, o, oe) || m.untracedPeer(oe) {
			return
		}
		// The closest in time; on a tie the earliest created.
		if best == nil || dt < bestDT || dt == bestDT && o.serial < best.serial {
			best, bestDT = o, dt
		}
	}
	// within: dt is still worth looking at.
	within := func(dt int64) bool { return dt <= m.window && (best == nil || dt <= bestDT) }
	// The list also holds connections of other signatures (those of
	// its bucket): skipped.
	look := func(list []sigEntry) {
		r := sort.Search(len(list), func(i int) bool { return list[i].first >= c.first })
		l := r - 1
		for {
			dl, dr := int64(-1), int64(-1)
			if l >= 0 {
				if d := c.first - list[l].first; within(d) {
					dl = d
				}
			}
			if r < len(list) {
				if d := list[r].first - c.first; within(d) {
					dr = d
				}
			}
			switch {
			case dl < 0 && dr < 0:
				return
			case dr < 0 || dl >= 0 && dl <= dr:
				if o := &list[l]; o.role == want && o.sig == sig {
					consider(o.c, dl)
				}
				l--
			default:
				if o := &list[r]; o.role == want && o.sig == sig {
					consider(o.c, dr)
				}
				r++
			}
		}
	}
	// Agreeing candidates know the same sizes (agrees): one list.
	look(*m.sigs.bucket(want, sig))
	if natCrossCheck != nil {
		natCrossCheck(m, c, best)
	}
	if best == nil {
		return false
	}
	var oe *end
	for _, x := range best.ends {
		if x != nil {
			oe = x
		}
	}
	// Merge best's end into c as the missing side.
	side := 1 - e.side
	oe.c, oe.side = c, side
	c.ends[side] = oe
	best.gone = true
	// Later packets of the other end find c under best's key.
	c.aliases = append(c.aliases, best.key)
	c.aliases = append(c.aliases, best.aliases...)
	bl := m.conns.get(best.key.hash())
	for i, x := range bl {
		if x == best {
			bl[i] = c // c has best.key among its aliases
		}
	}
	m.paired(c)
	client, server := e, oe
	if e.role == RoleServer {
		client, server = oe, e
	}
	proto := c.key.proto.String()
	if !client.remote.Unix && client.remote.Addr != server.local.Addr {
		m.nat.add("dnat", proto, client.remote.Addr, server.local.Addr, true)
		m.noteTranslated(client)
	}
	if cl, sr := client.local.Addr, server.remote.Addr; !client.local.Unix && cl.IsValid() && sr.IsValid() && cl != sr {
		if cl.Addr() != sr.Addr() {
			m.noteTranslated(server)
		}
		if cl.Port() == sr.Port() {
			// Ports kept: the whole address is translated, and later
			// connections are keyed directly.
			m.nat.addAddr("snat", proto, cl.Addr(), sr.Addr())
		} else {
			m.nat.add("snat", proto, cl, sr, true)
		}
	}
	if (client.closed && server.closed) && !c.retiring {
		c.retiring = true
		m.schedule(deadline{at: m.now + m.window, c: c, kind: dlRetire})
	}
	return true
}

// relay reports whether two ends were observed by one logged process, or by
// a process and its forked child (same host and boot, one's pid the other's
// or its parent's): an accepted connection and a connection onward of one
// proxy, relaying a request and its response with the same sizes, look
// like a translated flow to step 6, but a translation happens between two
// hosts, never inside one process (step 6).
func relay(a, b *Observer) bool {
	if a == nil || b == nil {
		return false
	}
	if a == b {
		return true
	}
	if a.Pid <= 0 || b.Pid <= 0 || a.Host != b.Host || a.BootID != b.BootID {
		return false
	}
	return a.Pid == b.Pid || a.ppid == b.Pid || b.ppid == a.Pid
}

// causal reports whether two lonely ends of opposite roles whose first
// messages agree both ways could be the two ends of one connection as far
// as their timing goes, whatever their clocks: the client's first write of
// the request comes before the server's first read of it, and the server's
// first write of the response before the client's first read of it, so the
// server's delay from its first read to its first write (on its clock)
// cannot exceed the client's from its first write to its first read (on
// its own), whatever the offset between the clocks, and whichever side
// spoke first. causalSlack allows for clock rates and timestamp
// resolution. Ends knowing only one size are not tested.
func causal(a, b *end) bool {
	c, s := a, b
	if a.role == RoleServer {
		c, s = b, a
	}
	if len(c.runs) == 0 || len(c.rruns) == 0 || len(s.runs) == 0 || len(s.rruns) == 0 {
		return true
	}
	turn := s.runs[0].t - s.rruns[0].t
	rtt := c.rruns[0].t - c.runs[0].t
	return turn <= rtt+causalSlack+rtt/1000
}

// causalSlack: see causal.
const causalSlack = int64(1e6) // 1 ms

// natCrossCheck, when set (tests), is told every step-6 search's result.
var natCrossCheck func(m *matcher, c, best *conn)

// sigIndex lists lonely connections by the sizes of their first messages
// as far as they know them (step 6): under {role, up, down}, in lists
// ordered by creation time (then creation order). A search looks at the
// one list of the sizes it knows. A direction's size, once known, does not
// change while the connection is lonely (the first run is done, and nothing
// is emitted before the connection is resolved), so a connection moves at
// most twice (one size known, then both). Connections that found their
// peer are skipped by searches and dropped all at once when the entries
// have doubled since the last time.
//
// The lists are the buckets of a hash table of {role, up, down}: a bucket
// holds every signature that hashes to it (searches skip the others), and
// keeps its array when it empties. Nearly every lonely connection of a
// large set has sizes of its own, and a map entry per signature was an
// insertion and a deletion of a map entry per connection.
type sigIndex struct {
	buckets         [][]sigEntry // len is a power of two
	entries, pruned int
	stamp           uint32
}

// sigEntry is a connection as listed: with what orders it and what it is
// listed under, so that walking a list reads no connection.
type sigEntry struct {
	first  int64
	sig    sizes
	serial int32
	role   Role
	c      *conn
}

// bucket is the list of signature s of role r.
func (x *sigIndex) bucket(r Role, s sizes) *[]sigEntry {
	if x.buckets == nil {
		x.buckets = make([][]sigEntry, 1024)
	}
	return &x.buckets[sigHash(r, s)&uint64(len(x.buckets)-1)]
}

func sigHash(r Role, s sizes) uint64 {
	h := uint64(s.up)*0x9e3779b97f4a7c15 ^ uint64(s.down)*0xc2b2ae3d27d4eb4f ^ uint64(r)*0x165667b19e3779f9
	h ^= h >> 31
	h *= 0xd6e8feb86659fd93
	return h ^ h>>32
}

// grow doubles the buckets: each list splits in two, in its order.
func (x *sigIndex) grow() {
	n := len(x.buckets)
	nb := make([][]sigEntry, 2*n)
	for i, list := range x.buckets {
		lo, hi := nb[i][:0], nb[i+n][:0]
		for _, o := range list {
			if sigHash(o.role, o.sig)&uint64(2*n-1) == uint64(i) {
				lo = append(lo, o)
			} else {
				hi = append(hi, o)
			}
		}
		nb[i], nb[i+n] = lo, hi
	}
	x.buckets = nb
}

// listedBefore: c is listed before o (creation time, then creation order).
func listedBefore(c *conn, o *sigEntry) bool {
	return c.first < o.first || c.first == o.first && c.serial < o.serial
}

// insertConn adds c to list in creation-time order; signatures become known
// in about that order, so the place is near the end.
func insertConn(list []sigEntry, c *conn) []sigEntry {
	i := len(list)
	for i > 0 && listedBefore(c, &list[i-1]) {
		i--
		if len(list)-i > 64 {
			i = sort.Search(len(list), func(j int) bool { return listedBefore(c, &list[j]) })
			break
		}
	}
	return slices.Insert(list, i, sigEntry{first: c.first, sig: c.sig, serial: c.serial, role: c.lrole, c: c})
}

// removeConn drops c from list (where insertConn put it).
func removeConn(list []sigEntry, c *conn) []sigEntry {
	i := sort.Search(len(list), func(j int) bool {
		return !(list[j].first < c.first || list[j].first == c.first && list[j].serial < c.serial)
	})
	if i < len(list) && list[i].c == c {
		list = slices.Delete(list, i, i+1)
	}
	return list
}

// indexSig lists c under the sizes its signature has come to know since it
// was last indexed; called after every observation that may have changed
// it. Signatures that can agree with nothing (a size not counted from the
// stream's start, or nothing known) are not listed.
func (m *matcher) indexSig(c *conn) {
	if c.lrole != RoleUnknown && !c.resolved && !c.gone {
		m.indexSigOf(c)
	}
}

// indexSigOf is indexSig for a connection that may be listed.
func (m *matcher) indexSigOf(c *conn) {
	var e *end
	for _, x := range c.ends {
		if x != nil {
			e = x
		}
	}
	if e == nil {
		return
	}
	s := signature(e)
	if s == c.sig {
		return
	}
	x := &m.sigs
	if s.listed() && m.untracedPeer(e) {
		// No candidate from now on (and no search: pairTranslated).
		if old := c.sig; old.listed() {
			b := x.bucket(c.lrole, old)
			*b = removeConn(*b, c)
			x.entries--
		}
		c.lrole, c.sig = RoleUnknown, sizes{}
		return
	}
	if old := c.sig; old.listed() {
		b := x.bucket(c.lrole, old)
		*b = removeConn(*b, c)
		x.entries--
	}
	c.sig = s
	if s.listed() {
		b := x.bucket(c.lrole, s)
		*b = insertConn(*b, c)
		x.entries++
	}
	if x.entries >= 1024 && x.entries >= 2*x.pruned {
		x.entries = x.prune()
		x.pruned = x.entries
		for x.entries > 2*len(x.buckets) {
			x.grow()
		}
	}
}

// listed: the signature can agree with another (see agrees).
func (s sizes) listed() bool { return s.up >= 0 && s.down >= 0 && (s.up > 0 || s.down > 0) }

// prune drops the connections that are no longer lonely; it returns how
// many entries are left.
func (x *sigIndex) prune() int {
	n := 0
	for i, list := range x.buckets {
		live := list[:0]
		for _, o := range list {
			if !o.c.gone && !o.c.resolved {
				live = append(live, o)
			}
		}
		clear(list[len(live):])
		if len(live) == 0 && cap(live) > 16 {
			live = nil
		}
		x.buckets[i] = live
		n += len(live)
	}
	return n
}

// sizes is what a lonely end knows of a connection's first messages: the
// first message each way (sent by the client, sent by the server), as this
// end saw it (its own send runs, or its receive runs).
type sizes struct{ up, down int64 }

func signature(e *end) sizes {
	first := func(rs []run, done bool) int64 {
		if len(rs) == 0 || (done && !rs[0].done) {
			return 0
		}
		if rs[0].off != 0 {
			return -1 // not from the start: unusable
		}
		return rs[0].n
	}
	sent, got := first(e.runs, true), first(e.rruns, true)
	if e.role == RoleServer {
		return sizes{up: got, down: sent}
	}
	return sizes{up: sent, down: got}
}

// agrees: the same sizes each way, each known on both sides or on neither,
// and at least one known. A size one side knows and the other does not
// (its first message that way not over yet, or not begun) is no agreement:
// an unrelated connection still in its first exchange would otherwise
// agree with anything of the same size the other way (on a CoDeeN-sized
// set, most untraced connections were paired by their request size
// alone). The partner of an end that knows a size has, as a rule, seen
// that message whole too by the time step 6 looks (a window later): the
// bytes are the same, and its run ends when it hears from the other side
// again or closes. A peer that lingers without closing for a whole window
// after the other end closed is missed (declared untraced).
func (s sizes) agrees(o sizes) bool {
	return s == o && s.listed()
}

// retire forgets a finished connection after emitting what is left.
func (m *matcher) retire(c *conn) {
	if !c.resolved {
		m.resolve(c)
	}
	for _, e := range c.ends {
		if e == nil {
			continue
		}
		if n := len(e.runs); n > 0 {
			e.runs[n-1].done = true
		}
		if n := len(e.rruns); n > 0 {
			e.rruns[n-1].done = true
		}
	}
	m.pump(c, true)
	m.pairCalls(c, true)
	c.gone = true
	for _, e := range c.ends {
		if e != nil {
			for _, f := range e.fixes {
				m.unholdMsg(f.msg)
			}
			e.fixes = nil // last bytes never read: DstActor stays unknown
		}
	}
	for _, e := range c.ends {
		if e == nil {
			continue
		}
		for _, ref := range e.socks {
			if m.socks[ref.src].get(ref.socket) == e {
				m.socks[ref.src].set(ref.socket, nil)
			}
		}
	}
	m.conns.drop(c)
	for _, k := range c.aliases {
		m.conns.dropKey(k.hash(), c)
	}
	m.free1(c)
}

// free1 makes a retired connection's record reusable: every reference
// to it that is left is told stale by the generations, but for step 6's
// index, which drops it here.
func (m *matcher) free1(c *conn) {
	for _, e := range c.ends {
		if e != nil {
			e.gen++
			if e.alone && reuseRecords {
				m.freeEnds = append(m.freeEnds, e)
			}
		}
	}
	c.gen++
	m.inFlight--
	if !reuseRecords {
		return
	}
	if c.lrole != RoleUnknown && c.sig.listed() {
		b := m.sigs.bucket(c.lrole, c.sig)
		if n := len(*b); n > 0 {
			if *b = removeConn(*b, c); len(*b) < n {
				m.sigs.entries--
			}
		}
	}
	// c is the conn of a connEnd (endOf makes no other), whose end is
	// one of c's: a connection merged into another in step 6 (gone
	// without retiring) lends its end to the other and is never freed.
	m.free = append(m.free, (*connEnd)(unsafe.Pointer(c)))
}

// finish resolves and flushes everything at the end of the input.
func (m *matcher) finish() {
	for m.thead < len(m.timers) {
		d := m.timers[m.thead]
		m.thead++
		if d.kind != dlRetire {
			m.fire(d)
		}
	}
	// Every connection still known, in creation order.
	var all []*conn
	seen := map[*conn]bool{}
	m.conns.each(func(list []*conn) {
		for _, c := range list {
			if !seen[c] && !c.gone {
				seen[c] = true
				all = append(all, c)
			}
		}
	})
	sort.Slice(all, func(i, j int) bool { return all[i].serial < all[j].serial })
	for _, c := range all {
		if !c.gone {
			m.retire(c)
		}
	}
}

// sourceHeap merges sources by their next observation's time (step 1).
type cursor struct {
	src  Source
	idx  int
	ob   Observation
	at   int64 // ob.Time on the reference clock (step 0)
	corr int64 // this source's clock offset
	done bool
	// sc: the decoder of a log source (nil for others), for prefetch.
	sc *libsockcap.Scanner
}

// newCursor makes source s's cursor, idx its index, of a merge of n
// sources: with prefetchSources or more, a log's decoder prefetches
// (heapItem.prefetch).
func newCursor(s Source, idx, n int) *cursor {
	c := &cursor{src: s, idx: idx}
	if ls, ok := s.(*logSource); ok && ls.fast != nil && n >= prefetchSources {
		c.sc = ls.fast
		c.sc.EnablePrefetch()
	}
	return c
}

// prefetchSources: from how many sources merged the logs' decoders
// prefetch (with a few, their state stays in the caches between their
// turns, and noting the next record would cost without paying back).
var prefetchSources = 8

// prefetch fetches what reading a cursor's next observation reads first,
// when the cursor is the one the merge takes next (the top of the heap),
// while the observation before it is handled: its decoder's next record
// and what the decoder's tables hold of that record's descriptor. With a
// hundred logs merged, a log's decoder state is out of the caches by the
// time the merge comes back to it.
func (it *heapItem) prefetch() {
	if it.sc != nil {
		it.sc.Prefetch()
	}
}

// sourceHeap holds each cursor with its time (heapItem.at, a copy of
// cursor.at): sifting compares the items' times without reading the
// cursors.
type sourceHeap []heapItem

type heapItem struct {
	at int64
	c  *cursor
	sc *libsockcap.Scanner // c.sc, for prefetch (the heap is in the caches, the cursors not)
}
