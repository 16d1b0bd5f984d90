package reconcile

// Packet captures as observation sources (WAP5 §4 and §7: "we treated each
// packet as a message" — here, each segment as bytes sent or received — and
// the same packet seen by two sniffers is de-duplicated by choosing one
// sniffer's clock per node). The steps, as numbered in the code:
//
//  P1. Read every capture file; each file is one capture point with one
//      clock. Files are streamed, never held: each pass below reads them
//      again in time order (pcapstream.go, steps S1–S3), keeping state per
//      connection and endpoint, not per packet.
//  P2. Detect address translation across the captures (package nat, WAP5
//      §7.1), merge it with Options.NAT, and canonicalise every address: a
//      DNAT virtual address becomes the real server, an SNAT address the
//      real client, so both sides of the router name a flow alike.
//  P3. Choose each host's clock (WAP5 §7): the capture that sees the host's
//      own packets with the highest TTL (one on its host or its link, before
//      any router decremented them), then the one with most packets to or
//      from it. Only that capture reports the host's sends and receives, so
//      a packet seen by several sniffers is counted once, with the sender's
//      sniffer giving the send time and the receiver's the receive time.
//      With logs in the input (mixed), an address that no log covers and
//      that every capture saw only through a router (its highest TTL below
//      the initial 64, 128 or 255: a masquerading router's, or a host
//      behind it) is distant: in its flows with a peer no log covers
//      either but the logs' unpaired connections went to (or came from),
//      no capture reports its sends or receives, so the captured peer's
//      ends stay open for step 6 to pair with those (a traced client
//      behind a masquerade seen by the server's capture). Its other flows
//      keep it: a logged host's are seen by the logs under the same
//      addresses, and the capture gives the far side; those of hosts the
//      logs never reached have nothing else to pair with.
//  P4. Identify TCP connections across captures by their endpoint pair and
//      the initial sequence numbers (SYN, or SYN-ACK's ack−1), which neither
//      routing nor NAT change; a SYN with a new ISN on the same pair is the
//      next connection (port reuse). Stream offsets count from ISN+1; when
//      no capture saw the handshake, from the lowest sequence number seen.
//  P5. Replay each capture as a Source: OpOpen at the SYN (client) and
//      SYN-ACK (server); OpSend for bytes leaving a host whose clock this is,
//      retransmitted bytes dropped; OpRecv when bytes become deliverable in
//      order at the receiving host (out-of-order segments wait for the gap;
//      a gap the capture never saw is skipped at FIN, RST or the end, with a
//      warning); OpClose at FIN or RST. UDP datagrams are OpSend and OpRecv
//      with libsockcap's checksum. The matcher then builds messages from
//      these exactly as from logs, preferring logs where both exist.

import (
	"fmt"
	"iter"
	"net/netip"
	"sort"
	"strings"

	"wap5/libsockcap"
	"wap5/nat"
)

func init() {
	OpenPcap = func(path string, opts Options) ([]Source, error) {
		set, err := OpenPcaps([]string{path}, opts, nil)
		if err != nil {
			return nil, err
		}
		return set.Sources, nil
	}
}

// PcapSet is what OpenPcaps makes of a set of capture files.
type PcapSet struct {
	Sources  []Source // one per capture file, in the order given
	NAT      *nat.Map // the translations detected in the packets, merged with Options.NAT
	Clocks   []string // "HOST: FILE" — whose capture gives each host's times (P3)
	Warnings []string // problems that concern all captures (NAT detection)
}

// OpenPcaps reads capture files taken at the same time (possibly at
// several points of the network) and returns them as observation sources.
// hosts names hosts by address (nil: hosts are named by address). The
// files are streamed (pcapstream.go): read again by each pass, never held.
func OpenPcaps(paths []string, opts Options, hosts HostNames) (*PcapSet, error) {
	return openPcapFiles(paths, opts, hosts, nil)
}

// openPcapFiles is OpenPcaps, in mixed input with what the logs cover (P3).
func openPcapFiles(paths []string, opts Options, hosts HostNames, logs *logCover) (*PcapSet, error) {
	feeds := make([]feed, len(paths))
	for i, p := range paths {
		feeds[i] = fileFeed{path: p, ci: int32(i), window: opts.packetReorder()}
	}
	return openFeeds(feeds, opts, hosts, logs)
}

// PcapSources turns captures already read into observation sources (P2–P5).
func PcapSources(caps []*Capture, opts Options, hosts HostNames) *PcapSet {
	feeds := make([]feed, len(caps))
	for i, c := range caps {
		feeds[i] = memFeed{c, opts.packetReorder()}
	}
	set, err := openFeeds(feeds, opts, hosts, nil)
	if err != nil { // a memFeed does not fail
		return &PcapSet{NAT: &nat.Map{}, Warnings: []string{err.Error()}}
	}
	return set
}

// canonMemo canonicalises endpoints by the translations (P2), remembering
// each endpoint's answer; nil when there are no translations.
type canonMemo struct {
	m    *nat.Map
	memo map[pktEP]netip.AddrPort
}

func newCanon(m *nat.Map) *canonMemo {
	if len(m.Translations) == 0 {
		return nil
	}
	return &canonMemo{m: m, memo: make(map[pktEP]netip.AddrPort)}
}

func (c *canonMemo) ep(proto uint8, ep netip.AddrPort) netip.AddrPort {
	if c == nil {
		return ep
	}
	k := pktEP{ep, proto}
	r, ok := c.memo[k]
	if !ok {
		r = c.m.CanonicalAddrPort(proto, ep)
		c.memo[k] = r
	}
	return r
}

func (c *canonMemo) packet(p *nat.Packet) {
	if c != nil {
		p.Src = c.ep(p.Proto, p.Src)
		p.Dst = c.ep(p.Proto, p.Dst)
	}
}

// logCover is what the logs of a mixed input cover: the addresses their
// processes use and their hosts' names (nil: captures alone, or the logs'
// pre-pass did not run).
type logCover struct {
	addrs map[netip.Addr]string
	hosts map[string]bool
	// peers: the addresses the logs' unpaired connections went to or
	// came from (step 6's table of lonely peers after the logs alone).
	peers map[netip.Addr]bool
}

// newLogCover takes what the logs cover from the matcher that reconciled
// them alone.
func newLogCover(m *matcher) *logCover {
	lc := &logCover{addrs: m.logAddr, hosts: m.logged, peers: map[netip.Addr]bool{}}
	for k := range m.peers.v4 {
		lc.peers[netip.AddrFrom4([4]byte{byte(k >> 40), byte(k >> 32), byte(k >> 24), byte(k >> 16)})] = true
	}
	for k := range m.peers.v6 {
		lc.peers[netip.AddrFrom16(k.a)] = true
	}
	return lc
}

func (lc *logCover) covers(a netip.Addr, name string) bool {
	if lc == nil {
		return false
	}
	_, ok := lc.addrs[a]
	return ok || lc.hosts[name]
}

// initialTTL reports whether ttl is one a host sends with (64, 128, 255):
// a packet with another was forwarded by a router on its way.
func initialTTL(ttl uint8) bool { return ttl == 64 || ttl == 128 || ttl == 255 }

func openFeeds(feeds []feed, opts Options, hosts HostNames, logs *logCover) (*PcapSet, error) {
	set := &PcapSet{NAT: &nat.Map{}}
	for _, t := range opts.NAT {
		set.NAT.Add(nat.Translation(t))
	}
	// P1, S1.
	fps := make([]*firstPass, len(feeds))
	for i, f := range feeds {
		fp, err := readFirstPass(f)
		if err != nil {
			return nil, err
		}
		fps[i] = fp
	}
	// P2, on S1's sample.
	if !opts.DisableNATDetection && len(fps) > 0 {
		sets := make([][]nat.Packet, len(fps))
		for i, fp := range fps {
			sets[i] = fp.sample
		}
		found := nat.DetectSets(sets, nat.Options{})
		for _, t := range found.Translations {
			set.NAT.Add(t)
		}
		for _, w := range found.Warnings {
			set.Warnings = append(set.Warnings, "nat: "+w)
		}
	}
	for _, fp := range fps {
		fp.sample = nil
	}
	cn := newCanon(set.NAT)

	// P3, on S1's counts per endpoint.
	type seen struct {
		ttl  uint8
		pkts int
	}
	stats := make([]map[netip.Addr]*seen, len(fps))
	for ci, fp := range fps {
		st := make(map[netip.Addr]*seen)
		for ek, e := range fp.eps {
			a := cn.ep(ek.proto, ek.ep).Addr()
			s := st[a]
			if s == nil {
				s = &seen{}
				st[a] = s
			}
			s.pkts += e.pkts
			s.ttl = max(s.ttl, e.ttl)
		}
		stats[ci] = st
		fp.eps = nil
	}
	clock := make(map[netip.Addr]int32)
	for ci, st := range stats {
		for a, s := range st {
			cur, ok := clock[a]
			if !ok {
				clock[a] = int32(ci)
				continue
			}
			o := stats[cur][a]
			if s.ttl > o.ttl || (s.ttl == o.ttl && s.pkts > o.pkts) {
				clock[a] = int32(ci)
			}
		}
	}
	var distant map[netip.Addr]bool
	if logs != nil {
		// P3, mixed input: the distant addresses.
		for a, ci := range clock {
			if ttl := stats[ci][a].ttl; ttl != 0 && !initialTTL(ttl) && !logs.covers(a, hosts.Name(a)) {
				if distant == nil {
					distant = make(map[netip.Addr]bool)
				}
				distant[a] = true
			}
		}
	}
	observers := make(map[netip.Addr]*Observer, len(clock))
	for a, ci := range clock {
		observers[a] = &Observer{Host: hosts.Name(a), File: fps[ci].info.File}
		set.Clocks = append(set.Clocks, fmt.Sprintf("%s: %s", hosts.Name(a), fps[ci].info.File))
	}
	sort.Strings(set.Clocks)

	// P4: handshakes from every capture first (S1 kept them), so that a
	// capture that started late still finds the connection another
	// capture saw open.
	conns := newConnTable()
	for _, fp := range fps {
		for i := range fp.syns {
			p := &fp.syns[i]
			cn.packet(p)
			conns.handshake(p)
		}
		fp.syns = nil
	}
	// S2: the first byte of directions whose handshake nobody saw.
	learn := true
	need := false
	for _, fp := range fps {
		for ck := range fp.data {
			pk := pairKey{cn.ep(ck.proto, ck.lo), cn.ep(ck.proto, ck.hi)}
			if pk.hi.Compare(pk.lo) < 0 {
				pk.lo, pk.hi = pk.hi, pk.lo
			}
			if len(conns.byPair[pk]) == 0 {
				need = true
			}
		}
		fp.data = nil
	}
	if need {
		for _, f := range feeds {
			a := conns.assigner(true)
			if _, _, err := sorted(f, noKeys, func(batch []nat.Packet) bool {
				for i := range batch {
					p := &batch[i]
					if p.Proto == nat.ProtoTCP {
						cn.packet(p)
						a.assign(p)
					}
				}
				return true
			}); err != nil {
				return nil, err
			}
		}
		learn = false
	}

	// P5, S3.
	for ci, f := range feeds {
		set.Sources = append(set.Sources, &pcapSource{
			f: f, fp: fps[ci], ci: int32(ci), clock: clock, observers: observers, conns: conns,
			cn: cn, asg: conns.assigner(learn), state: make(map[int32]*tcpSide),
			distant: distant, logs: logs, hosts: hosts,
		})
	}
	return set, nil
}

// tcpConn is one TCP connection, the same across captures.
type tcpConn struct {
	id    int32
	a, b  netip.AddrPort // a: the end that sent the SYN (or the lower address)
	isn   [2]uint32      // per direction (0: a→b): the sequence number of the first data byte
	known [2]bool        // isn from a SYN or SYN-ACK
	based [2]bool        // isn from the lowest sequence number seen
	syn   bool
}

type synKey struct {
	pair pairKey
	orig netip.AddrPort
	isn  uint32
}

// connTable is P4's connections, shared by the passes over all captures.
type connTable struct {
	conns  []*tcpConn
	bySyn  map[synKey]*tcpConn
	byPair map[pairKey][]*tcpConn
	noSyn  map[pairKey]*tcpConn
}

func newConnTable() *connTable {
	return &connTable{bySyn: map[synKey]*tcpConn{}, byPair: map[pairKey][]*tcpConn{}, noSyn: map[pairKey]*tcpConn{}}
}

type pairKey struct{ lo, hi netip.AddrPort }

func pairOf(p *nat.Packet) pairKey {
	if p.Dst.Compare(p.Src) < 0 {
		return pairKey{p.Dst, p.Src}
	}
	return pairKey{p.Src, p.Dst}
}

type lastKey struct {
	conn int32
	dir  int
}

// near: seq is within 1 GiB of the direction's last sequence number, so a
// long transfer stays on its connection while a new ISN starts another.
func near(last, seq uint32) bool {
	d := int32(seq - last)
	return d > -1<<30 && d < 1<<30
}

// plausible: seq lies at most 1 GiB after the direction's first byte (or a
// little before it: the SYN itself, a keep-alive).
func plausible(c *tcpConn, dir int, seq uint32) bool {
	d := int32(seq - c.isn[dir])
	return d >= -2 && d < 1<<30
}

func (t *connTable) newConn(a, b netip.AddrPort) *tcpConn {
	c := &tcpConn{id: int32(len(t.conns)), a: a, b: b}
	t.conns = append(t.conns, c)
	return c
}

// handshake registers a SYN or SYN-ACK segment (P4, first part).
func (t *connTable) handshake(p *nat.Packet) {
	orig, isn, other := p.Src, p.Seq+1, p.Dst
	if p.Flags&nat.FlagACK != 0 {
		orig, isn, other = p.Dst, p.Ack, p.Src
	}
	k := synKey{pairOf(p), orig, isn}
	c := t.bySyn[k]
	if c == nil {
		c = t.newConn(orig, other)
		c.syn = true
		c.isn[0], c.known[0] = isn, true
		t.bySyn[k] = c
		t.byPair[k.pair] = append(t.byPair[k.pair], c)
	}
	if p.Flags&nat.FlagACK != 0 {
		c.isn[1], c.known[1] = p.Seq+1, true
	}
}

// assigner finds each packet's connection in one pass over one capture
// (P4, second part). With learn, directions without a handshake take their
// first byte from the lowest sequence number seen.
type assigner struct {
	t     *connTable
	cur   map[pairKey]*tcpConn
	last  map[lastKey]uint32 // per connection direction, the last sequence number
	learn bool
}

func (t *connTable) assigner(learn bool) *assigner {
	return &assigner{t: t, cur: map[pairKey]*tcpConn{}, last: map[lastKey]uint32{}, learn: learn}
}

// assign returns p's connection, or nil (a bare acknowledgement of no
// known connection).
func (a *assigner) assign(p *nat.Packet) *tcpConn {
	t := a.t
	pk := pairOf(p)
	var c *tcpConn
	dir := func(c *tcpConn) int {
		if p.Src == c.a {
			return 0
		}
		return 1
	}
	if p.Flags&nat.FlagSYN != 0 {
		if p.Flags&nat.FlagACK != 0 {
			c = t.bySyn[synKey{pk, p.Dst, p.Ack}]
		} else {
			c = t.bySyn[synKey{pk, p.Src, p.Seq + 1}]
		}
		if c == nil {
			return nil
		}
		a.cur[pk] = c
		a.last[lastKey{c.id, dir(c)}] = p.Seq + 1
		return c
	}
	data := p.Len > 0 || p.Flags&nat.FlagFIN != 0
	if c = a.cur[pk]; c != nil && (!c.known[dir(c)] || near(a.last[lastKey{c.id, dir(c)}], p.Seq)) {
		// keep
	} else if cands := t.byPair[pk]; len(cands) > 0 {
		var best *tcpConn
		var bestD uint32
		for _, k := range cands {
			if d := dir(k); k.known[d] && plausible(k, d, p.Seq) {
				if dd := p.Seq - k.isn[d]; best == nil || dd+2 < bestD+2 {
					best, bestD = k, dd
				}
			}
		}
		switch {
		case best != nil:
			c = best
		case data:
			c = nil
		}
	}
	if c == nil && data {
		c = t.noSyn[pk]
		if c == nil {
			c = t.newConn(pk.lo, pk.hi)
			t.noSyn[pk] = c
		}
	}
	if c == nil {
		return nil
	}
	a.cur[pk] = c
	a.last[lastKey{c.id, dir(c)}] = p.Seq
	if d := dir(c); a.learn && !c.known[d] && data && (!c.based[d] || int32(p.Seq-c.isn[d]) < 0 && int32(p.Seq-c.isn[d]) > -1<<30) {
		// The lowest sequence number seen in this direction (a
		// reordered earlier segment, not the far side of a wrap).
		c.isn[d], c.based[d] = p.Seq, true
	}
	return c
}

// tcpSide is one capture's replay state of one connection direction.
type tcpSide struct {
	started  bool
	sent     []span // byte ranges already reported sent (merged, sorted)
	rcvNext  int64  // next byte the receiver can deliver
	rcvInit  bool
	pending  []span // out-of-order bytes held for delivery
	last     int64  // last offset, for unwrapping
	opened   bool
	closed   bool
	rcvClose bool
}

type span struct{ from, to int64 }

// Which packets need fingerprints in S2 (none) and the replay (datagrams:
// a router's second copy of one is recognised by it).
func noKeys(*nat.Packet) bool    { return false }
func udpKeys(p *nat.Packet) bool { return p.Proto == nat.ProtoUDP }

// maxPending bounds TCP reassembly per direction: out-of-order segments
// held behind a gap.
const maxPending = 4096

// pcapSource replays one capture (P5, S3).
type pcapSource struct {
	f         feed
	fp        *firstPass
	ci        int32
	clock     map[netip.Addr]int32
	observers map[netip.Addr]*Observer
	conns     *connTable
	cn        *canonMemo
	asg       *assigner
	state     map[int32]*tcpSide // conn id*2 + direction
	pull      func() ([]nat.Packet, bool)
	stop      func()
	batch     []nat.Packet
	bi        int
	lastPkt   nat.Packet
	any       bool
	queue     []Observation
	qi        int
	done      bool
	err       error
	gaps      int64
	gapConns  int
	overflows int
	warned    []string
	udpSeen   map[udpCopy]udpSeen
	// distant: addresses seen only through a router that no log covers
	// (P3, mixed input; nil otherwise), whose flows with peers no log
	// covers get no observations of their side.
	distant map[netip.Addr]bool
	logs    *logCover
	hosts   HostNames
}

// reread replays the same capture again from its start (step 0 of the
// matcher): the connections and clocks are shared.
func (s *pcapSource) reread() (Source, error) {
	return &pcapSource{f: s.f, fp: s.fp, ci: s.ci, clock: s.clock, observers: s.observers, conns: s.conns,
		cn: s.cn, asg: s.conns.assigner(s.asg.learn), state: make(map[int32]*tcpSide),
		distant: s.distant, logs: s.logs, hosts: s.hosts}, nil
}

func (s *pcapSource) Name() string { return s.fp.info.File }
func (s *pcapSource) Err() error   { return s.err }

func (s *pcapSource) Warnings() []string {
	w := s.fp.warnings()
	w = append(w, s.warned...)
	if s.gaps > 0 {
		w = append(w, fmt.Sprintf("%s: %d bytes in %d TCP connections were never seen by this capture (missed packets); delivery skipped over them", s.fp.info.File, s.gaps, s.gapConns))
	}
	if s.overflows > 0 {
		w = append(w, fmt.Sprintf("%s: %d times a TCP direction held more than %d out-of-order segments behind a gap (reassembly window); delivered past the gap", s.fp.info.File, s.overflows, maxPending))
	}
	return w
}

func (s *pcapSource) Next(o *Observation) bool {
	if s.pull == nil && !s.done {
		s.pull, s.stop = iter.Pull(func(yield func([]nat.Packet) bool) {
			if _, _, err := sorted(s.f, udpKeys, yield); err != nil {
				s.err = err
			}
		})
	}
	for s.qi >= len(s.queue) {
		s.queue, s.qi = s.queue[:0], 0
		if s.bi >= len(s.batch) {
			if s.done {
				return false
			}
			b, ok := s.pull()
			if !ok {
				s.done = true
				s.stop()
				s.batch, s.bi = nil, 0
				s.flushAll()
				continue
			}
			s.batch, s.bi = b, 0
			continue
		}
		p := &s.batch[s.bi]
		s.bi++
		s.cn.packet(p)
		s.lastPkt, s.any = *p, true
		switch p.Proto {
		case nat.ProtoTCP:
			if c := s.asg.assign(p); c != nil {
				s.tcp(p, c)
			}
		case nat.ProtoUDP:
			s.udp(p)
		}
	}
	*o = s.queue[s.qi]
	s.qi++
	return true
}

// here is the observer of a's side of a flow with peer, if this capture
// gives a's clock (P3), unless a is distant and peer is uncovered and
// reached by the logs' unpaired connections (P3, mixed input).
func (s *pcapSource) here(a, peer netip.AddrPort) *Observer {
	if s.clock[a.Addr()] != s.ci {
		return nil
	}
	if s.distant != nil && s.distant[a.Addr()] && s.logs.peers[peer.Addr()] && !s.logs.covers(peer.Addr(), s.hosts.Name(peer.Addr())) {
		return nil
	}
	return s.observers[a.Addr()]
}

func endpoint(a netip.AddrPort) libsockcap.Endpoint {
	return libsockcap.Endpoint{Addr: netip.AddrPortFrom(a.Addr().Unmap(), a.Port())}
}

func (s *pcapSource) emit(p *nat.Packet, op Op, obs *Observer, local, remote netip.AddrPort, proto libsockcap.Proto, stream bool) *Observation {
	s.queue = append(s.queue, Observation{
		Time: p.Time, Op: op, Proto: proto, Stream: stream, Origin: OriginPacket, Observer: obs,
		Local: endpoint(local), Remote: endpoint(remote), Offset: -1, Loc: int64(p.Index),
	})
	return &s.queue[len(s.queue)-1]
}

// udpCopy identifies a datagram for spotting its second copy at one capture
// point (a capture on a router sees it before and after forwarding).
type udpCopy struct {
	src, dst netip.AddrPort
	key      uint64
}

type udpSeen struct {
	time int64
	ttl  uint8
}

// udpCopyWindow is how close in time two copies of a datagram must be.
const udpCopyWindow = 200_000_000

func (s *pcapSource) udp(p *nat.Packet) {
	if p.Len <= 0 {
		return
	}
	// The same datagram again within the window, with another TTL (it went
	// through a router between the two sightings), is a copy, not a resend.
	if s.udpSeen == nil {
		s.udpSeen = make(map[udpCopy]udpSeen)
	}
	k := udpCopy{p.Src, p.Dst, p.Key}
	if prev, ok := s.udpSeen[k]; ok && p.Time-prev.time < udpCopyWindow && prev.ttl != p.TTL {
		return
	}
	if len(s.udpSeen) > 4096 {
		for k, v := range s.udpSeen {
			if p.Time-v.time >= udpCopyWindow {
				delete(s.udpSeen, k)
			}
		}
	}
	s.udpSeen[k] = udpSeen{p.Time, p.TTL}
	for k, obs := range [2]*Observer{s.here(p.Src, p.Dst), s.here(p.Dst, p.Src)} {
		if obs == nil {
			continue
		}
		op, local, remote := OpSend, p.Src, p.Dst
		if k == 1 {
			op, local, remote = OpRecv, p.Dst, p.Src
		}
		o := s.emit(p, op, obs, local, remote, libsockcap.ProtoUDP, false)
		o.Bytes, o.Sum, o.HasSum = int64(p.Len), p.Sum, !p.Snapped
	}
}

func (s *pcapSource) side(c *tcpConn, dir int) *tcpSide {
	k := c.id*2 + int32(dir)
	st := s.state[k]
	if st == nil {
		st = &tcpSide{}
		s.state[k] = st
	}
	return st
}

// socketID names one end of a connection for the matcher.
func socketID(c *tcpConn, end int) uint64 { return uint64(c.id)*2 + uint64(end) + 1 }

func (s *pcapSource) tcp(p *nat.Packet, c *tcpConn) {
	dir := 0
	if p.Src != c.a {
		dir = 1
	}
	st := s.side(c, dir)
	src, dst := s.here(p.Src, p.Dst), s.here(p.Dst, p.Src)
	open := func(obs *Observer, role Role, end int, local, remote netip.AddrPort) {
		o := s.emit(p, OpOpen, obs, local, remote, libsockcap.ProtoTCP, true)
		o.Role, o.Socket = role, socketID(c, end)
	}
	if p.Flags&nat.FlagSYN != 0 {
		// P5: the SYN opens the client's end, the SYN-ACK the server's.
		if src != nil && !st.opened {
			role := RoleClient
			if p.Flags&nat.FlagACK != 0 {
				role = RoleServer
			}
			open(src, role, dir, p.Src, p.Dst)
		}
		st.opened = true
	}
	// Offsets of this segment's data in its direction.
	seq := p.Seq
	if p.Flags&nat.FlagSYN != 0 {
		seq++
	}
	off := st.last + int64(int32(seq-c.isn[dir]-uint32(st.last)))
	st.last = off
	end := off + int64(p.Len)
	if p.Len > 0 && off >= 0 {
		if src != nil {
			for _, sp := range subtract(span{off, end}, st.sent) {
				o := s.emit(p, OpSend, src, p.Src, p.Dst, libsockcap.ProtoTCP, true)
				o.Socket, o.Offset, o.Bytes = socketID(c, dir), sp.from, sp.to-sp.from
			}
			st.sent = addSpan(st.sent, span{off, end})
		}
		if dst != nil {
			if !st.rcvInit {
				st.rcvInit = true
				if !c.known[dir] || !st.opened {
					st.rcvNext = off // the capture started mid-stream
				}
			}
			s.deliver(p, c, dir, st, dst, span{off, end})
		}
	}
	if p.Flags&nat.FlagACK != 0 && src != nil {
		s.ackPastGaps(p, c, 1-dir, src)
	}
	if p.Flags&(nat.FlagFIN|nat.FlagRST) != 0 {
		if dst != nil && st.rcvInit {
			s.skipGaps(p, c, dir, st, dst)
		}
		if src != nil && !st.closed {
			st.closed = true
			o := s.emit(p, OpClose, src, p.Src, p.Dst, libsockcap.ProtoTCP, true)
			o.Socket = socketID(c, dir)
		}
		if p.Flags&nat.FlagRST != 0 && dst != nil && !st.rcvClose {
			// A reset ends the receiving end too.
			st.rcvClose = true
			back := s.side(c, 1-dir)
			if back.rcvInit {
				s.skipGaps(p, c, 1-dir, back, dst)
			}
			o := s.emit(p, OpClose, dst, p.Dst, p.Src, libsockcap.ProtoTCP, true)
			o.Socket = socketID(c, 1-dir)
		}
	}
}

// deliver adds a received segment and reports the bytes that became
// deliverable in order.
func (s *pcapSource) deliver(p *nat.Packet, c *tcpConn, dir int, st *tcpSide, obs *Observer, sp span) {
	if sp.to <= st.rcvNext {
		return // retransmission of delivered bytes
	}
	st.pending = addSpan(st.pending, sp)
	if st.pending[0].from > st.rcvNext {
		if len(st.pending) > maxPending {
			// The reassembly window: a gap never filled while this many
			// segments wait behind it is skipped (counted as missed).
			s.overflows++
			s.skipGaps(p, c, dir, st, obs)
		}
		return
	}
	from := st.rcvNext
	st.rcvNext = st.pending[0].to
	st.pending = st.pending[1:]
	s.recv(p, c, dir, obs, from, st.rcvNext)
}

func (s *pcapSource) recv(p *nat.Packet, c *tcpConn, dir int, obs *Observer, from, to int64) {
	local, remote := c.b, c.a
	if dir == 1 {
		local, remote = c.a, c.b
	}
	o := s.emit(p, OpRecv, obs, local, remote, libsockcap.ProtoTCP, true)
	o.Socket, o.Offset, o.Bytes = socketID(c, 1-dir), from, to-from
}

// ackPastGaps: the receiver of direction dir acknowledged bytes beyond a
// gap this capture never saw, so it did receive them; what is held after the
// gap is delivered now (the acknowledgement's time bounds the receive time),
// and the unseen bytes are counted as missed.
func (s *pcapSource) ackPastGaps(p *nat.Packet, c *tcpConn, dir int, obs *Observer) {
	st := s.state[c.id*2+int32(dir)]
	if st == nil || !st.rcvInit || len(st.pending) == 0 || (!c.known[dir] && !c.based[dir]) {
		return
	}
	ack := st.last + int64(int32(p.Ack-c.isn[dir]-uint32(st.last)))
	for len(st.pending) > 0 && ack > st.pending[0].from && st.pending[0].from > st.rcvNext {
		s.gaps += st.pending[0].from - st.rcvNext
		s.gapConns++
		st.rcvNext = st.pending[0].from
		from := st.rcvNext
		for len(st.pending) > 0 && st.pending[0].from <= st.rcvNext {
			st.rcvNext = max(st.rcvNext, st.pending[0].to)
			st.pending = st.pending[1:]
		}
		s.recv(p, c, dir, obs, from, st.rcvNext)
	}
}

// skipGaps delivers everything held, skipping bytes the capture never saw.
func (s *pcapSource) skipGaps(p *nat.Packet, c *tcpConn, dir int, st *tcpSide, obs *Observer) {
	if len(st.pending) > 0 {
		s.gapConns++
	}
	for _, sp := range st.pending {
		if sp.from > st.rcvNext {
			s.gaps += sp.from - st.rcvNext
		}
		s.recv(p, c, dir, obs, sp.from, sp.to)
		st.rcvNext = sp.to
	}
	st.pending = st.pending[:0]
}

// flushAll ends the capture: held bytes are delivered at the last packet's time.
func (s *pcapSource) flushAll() {
	if !s.any {
		return
	}
	last := &s.lastPkt
	keys := make([]int32, 0, len(s.state))
	for k, st := range s.state {
		if len(st.pending) > 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		c, dir := s.conns.conns[k/2], int(k%2)
		dstEP, srcEP := c.b, c.a
		if dir == 1 {
			dstEP, srcEP = c.a, c.b
		}
		if obs := s.here(dstEP, srcEP); obs != nil {
			s.skipGaps(last, c, dir, s.state[k], obs)
		}
	}
}

// addSpan inserts sp into a sorted list of disjoint spans, merging.
func addSpan(list []span, sp span) []span {
	if sp.to <= sp.from {
		return list
	}
	i := sort.Search(len(list), func(i int) bool { return list[i].to >= sp.from })
	j := i
	for j < len(list) && list[j].from <= sp.to {
		sp.from = min(sp.from, list[j].from)
		sp.to = max(sp.to, list[j].to)
		j++
	}
	if i == j {
		list = append(list, span{})
		copy(list[i+1:], list[i:])
		list[i] = sp
		return list
	}
	list[i] = sp
	return append(list[:i+1], list[j:]...)
}

// subtract returns the parts of sp not covered by the sorted spans in list.
func subtract(sp span, list []span) []span {
	var out []span
	i := sort.Search(len(list), func(i int) bool { return list[i].to > sp.from })
	for ; i < len(list) && list[i].from < sp.to; i++ {
		if list[i].from > sp.from {
			out = append(out, span{sp.from, list[i].from})
		}
		sp.from = max(sp.from, list[i].to)
	}
	if sp.from < sp.to {
		out = append(out, sp)
	}
	return out
}

// describeSpans is for test failure messages.
func describeSpans(l []span) string {
	var b strings.Builder
	for _, s := range l {
		fmt.Fprintf(&b, "[%d,%d)", s.from, s.to)
	}
	return b.String()
}
