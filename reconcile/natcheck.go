package reconcile

import (
	"net/netip"
	"time"

	"wap5/libsockcap"
)

// Step 6's evidence beyond the sizes of the first messages (doc.go, item
// 6): the timing of the two ends on clocks step 0 has related (clockRel,
// timely), and the untraced peers that lonely connections have shown
// (peerTable, untracedPeer).

// clockRel is what step 0 knows of the sources' clocks: each source's
// offset (off; nil: all 0), the clock tree it is in (sources of one tree
// have offsets related by handshake samples, or share one host's clock;
// sources of different trees are not related at all), and the interval
// [lo, hi] that its true offset less the estimate lies in, both against
// the tree's root: the sum of the intervals of the tree's edges on the way
// (clockEdge: between the two bounds the samples of both directions give,
// or below the one bound of one direction by at most clockNear); parent
// and depth in the tree, so that two sources compare over the edges
// between them only (the way above their lowest common ancestor adds the
// same error to both). sampled:
// that way crosses an edge estimated from samples, which drifts away from
// its estimate with time; the samples were taken between from and to (raw
// times).
type clockRel struct {
	off           []int64
	tree          []int32
	parent, depth []int32 // parent −1: a root
	lo, hi        []int64
	sampled       []bool
	from, to      int64
}

func newClockRel(n int) clockRel {
	rel := clockRel{tree: make([]int32, n), parent: make([]int32, n), depth: make([]int32, n),
		lo: make([]int64, n), hi: make([]int64, n), sampled: make([]bool, n)}
	for i := range rel.tree {
		rel.tree[i], rel.parent[i] = int32(i), -1
	}
	return rel
}

// maxClockDrift is the rate at which two clocks are taken to drift apart
// at most: twice the ±50 ppm of common crystal oscillators, for clocks
// without NTP.
const maxClockDrift = 200e-6

// sameHostClocks is the relation when step 0 estimated nothing (one host's
// logs, captures alone, no handshake between the hosts, Options.SyncedClocks,
// which says only that the clocks agree within the window): the logs of
// one host (one boot of one kernel) share its clock, every other source is
// on its own.
func sameHostClocks(hosts []string) clockRel {
	rel := newClockRel(len(hosts))
	first := map[string]int32{}
	for i, h := range hosts {
		if h == "" {
			continue
		}
		if f, ok := first[h]; ok {
			rel.tree[i], rel.parent[i], rel.depth[i] = f, f, 1
		} else {
			first[h] = int32(i)
		}
	}
	return rel
}

// sourceHosts is the host (hostScope) of each log source, "" for others.
func sourceHosts(sources []Source) []string {
	hosts := make([]string, len(sources))
	for i, s := range sources {
		if s, ok := s.(*logSource); ok {
			hosts[i] = hostScope(s.obs)
		}
	}
	return hosts
}

// corr is source i's offset.
func (r *clockRel) corr(i int32) int64 {
	if r.off == nil || i < 0 || int(i) >= len(r.off) {
		return 0
	}
	return r.off[i]
}

// related reports whether step 0 related the clocks of sources a and b.
func (r *clockRel) related(a, b int32) bool {
	return a >= 0 && b >= 0 && int(a) < len(r.tree) && int(b) < len(r.tree) && r.tree[a] == r.tree[b]
}

// drift is what the clocks of a and b may have drifted from their
// estimates at time t.
func (r *clockRel) drift(a, b int32, t int64) int64 {
	if !r.sampled[a] && !r.sampled[b] {
		return 0 // one host's clock
	}
	return int64(maxClockDrift * float64(max(t-r.from, r.to-t, 0)))
}

// before reports whether an event of source a at offset-corrected time ta
// can have happened before one of source b at tb, whatever the errors of
// their offsets: the true times are ta − ea and tb − eb, and eb − ea is
// the error of the edges from their lowest common ancestor l down to b
// less that of those down to a, at least (lo[b] − lo[l]) − (hi[a] −
// hi[l]); up to drift and causalSlack.
func (r *clockRel) before(a int32, ta int64, b int32, tb int64, drift int64) bool {
	l := r.ancestor(a, b)
	return tb-ta >= (r.lo[b]-r.lo[l])-(r.hi[a]-r.hi[l])-drift-causalSlack
}

// ancestor is the lowest common ancestor of a and b (of one tree).
func (r *clockRel) ancestor(a, b int32) int32 {
	for r.depth[a] > r.depth[b] {
		a = r.parent[a]
	}
	for r.depth[b] > r.depth[a] {
		b = r.parent[b]
	}
	for a != b {
		a, b = r.parent[a], r.parent[b]
	}
	return a
}

// timely reports whether the lonely ends e (of c) and oe (of o), whose
// first messages agree, can be one connection as far as their times go on
// clocks step 0 related: the client's first message is written before the
// server reads it, and the server's first message is written before the
// client reads it, in offset-corrected time, within the errors the offsets
// may have (clockRel.before). Ends of unrelated clocks are not tested here
// (causal is, whatever the clocks).
func (m *matcher) timely(c *conn, e *end, o *conn, oe *end) bool {
	r := &m.clk
	if !r.related(c.lsrc, o.lsrc) {
		return true
	}
	ce, se, cs, ss := e, oe, c.lsrc, o.lsrc
	if e.role == RoleServer {
		ce, se, cs, ss = oe, e, ss, cs
	}
	cc, sc := r.corr(cs), r.corr(ss)
	d := r.drift(cs, ss, m.now)
	if len(ce.runs) > 0 && len(se.rruns) > 0 && !r.before(cs, ce.runs[0].t-cc, ss, se.rruns[0].t-sc, d) {
		return false // the server read the request before the client wrote it
	}
	if len(se.runs) > 0 && len(ce.rruns) > 0 && !r.before(ss, se.runs[0].t-sc, cs, ce.rruns[0].t-cc, d) {
		return false // the client read the response before the server wrote it
	}
	return true
}

// Untraced peers: a lonely end's peer address (a client's destination as it
// wrote it, ip:port; a server's client as it saw it, ip) is an untraced
// peer when at least peerFlows lonely connections of traced processes with
// known first sizes (which could have been paired) used it, more than the
// translations found through it, counting each only if it came within
// peerRecent of the one before, the last within peerRecent; and it is no
// traced host's own address. Such an address names a host that is not
// traced: a virtual address in front of traced servers has its flows
// paired, and a chance pair through an untraced peer is outnumbered by
// its lonely flows again at once.
const (
	peerFlows  = 3
	peerRecent = int64(5 * time.Minute)
)

// peerTable counts the lonely connections by peer address.
type peerTable struct {
	v4    map[uint64]*peerStat
	v6    map[peerKey6]*peerStat
	local map[netip.Addr]bool // addresses captured ends used locally
	// pruneAt: the entries at which those idle for peerRecent are
	// dropped (they count as nothing any more), so that the table
	// follows the peers of the last minutes, not every address the set
	// ever saw.
	pruneAt int
}

// prune drops the entries idle for more than peerRecent at now.
func (x *peerTable) prune(now int64) {
	for k, st := range x.v4 {
		if now-st.last > peerRecent {
			delete(x.v4, k)
		}
	}
	for k, st := range x.v6 {
		if now-st.last > peerRecent {
			delete(x.v6, k)
		}
	}
	x.pruneAt = max(4096, 2*(len(x.v4)+len(x.v6)))
}

type peerStat struct {
	last int64 // the latest lonely connection or translation (merged clock)
	n, t int32 // lonely connections and translations (see peerRecent)
}

// add counts a lonely connection (or a translation) at time now.
func (st *peerStat) add(now int64, translated bool) {
	if now-st.last > peerRecent {
		st.n, st.t = 0, 0
	}
	st.last = now
	if translated {
		st.t++
	} else {
		st.n++
	}
}

type peerKey6 struct {
	a    [16]byte
	port uint16
	dst  bool
}

// peerAddr is what a lonely end's peer is counted under: for a client its
// destination (address and port), for a server its client's address. Loopback,
// unspecified and Unix addresses are not counted (ok false).
func peerAddr(e *end) (netip.Addr, uint16, bool) {
	if e.remote.Unix || !e.remote.Addr.IsValid() || (e.role != RoleClient && e.role != RoleServer) {
		return netip.Addr{}, 0, false
	}
	a := e.remote.Addr.Addr().Unmap()
	if a.IsLoopback() || a.IsUnspecified() {
		return netip.Addr{}, 0, false
	}
	if e.role == RoleServer {
		return a, 0, true
	}
	return a, e.remote.Addr.Port(), true
}

// stat finds (add: or adds) the entry of address a, port (a
// destination's) or none (0 and !dst: a client's address).
func (x *peerTable) stat(a netip.Addr, port uint16, dst bool, add bool) *peerStat {
	if a.Is4() {
		b := a.As4()
		k := uint64(b[0])<<40 | uint64(b[1])<<32 | uint64(b[2])<<24 | uint64(b[3])<<16 | uint64(port)
		if dst {
			k |= 1 << 63
		}
		st := x.v4[k]
		if st == nil && add {
			if x.v4 == nil {
				x.v4 = map[uint64]*peerStat{}
			}
			st = &peerStat{}
			x.v4[k] = st
		}
		return st
	}
	k := peerKey6{a: a.As16(), port: port, dst: dst}
	st := x.v6[k]
	if st == nil && add {
		if x.v6 == nil {
			x.v6 = map[peerKey6]*peerStat{}
		}
		st = &peerStat{}
		x.v6[k] = st
	}
	return st
}

// noteLocal remembers an address a captured end used locally: a traced
// host's, never an untraced peer (the logs' are in matcher.logAddr).
func (x *peerTable) noteLocal(ep libsockcap.Endpoint) {
	if ep.Unix || !ep.Addr.IsValid() {
		return
	}
	a := ep.Addr.Addr().Unmap()
	if !x.local[a] {
		if x.local == nil {
			x.local = map[netip.Addr]bool{}
		}
		x.local[a] = true
	}
}

// noteLonely counts c, declared untraced, under its end's peer address, if
// its first sizes were known (it could have been paired).
func (m *matcher) noteLonely(c *conn) {
	e := lonelyEnd(c)
	if e == nil || !signature(e).listed() {
		return
	}
	a, port, ok := peerAddr(e)
	if !ok {
		return
	}
	m.peers.stat(a, port, e.role == RoleClient, true).add(m.now, false)
	if x := &m.peers; len(x.v4)+len(x.v6) >= max(x.pruneAt, 4096) {
		x.prune(m.now)
	}
}

// noteTranslated counts a translation found through e's peer address.
func (m *matcher) noteTranslated(e *end) {
	if a, port, ok := peerAddr(e); ok {
		m.peers.stat(a, port, e.role == RoleClient, true).add(m.now, true)
	}
}

// untracedPeer reports whether the lonely end e's peer address is an
// untraced peer now.
func (m *matcher) untracedPeer(e *end) bool {
	a, port, ok := peerAddr(e)
	if !ok {
		return false
	}
	st := m.peers.stat(a, port, e.role == RoleClient, false)
	if st == nil || st.n < peerFlows || st.n <= st.t || m.now-st.last > peerRecent {
		return false
	}
	if _, ok := m.logAddr[a]; ok || m.peers.local[a] {
		return false
	}
	return true
}

// lonelyEnd is the end a lonely connection has.
func lonelyEnd(c *conn) *end {
	var e *end
	for _, x := range c.ends {
		if x != nil {
			e = x
		}
	}
	return e
}
