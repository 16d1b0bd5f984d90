package reconcile

import (
	"net/netip"
	"strings"
	"time"

	"wap5/libsockcap"
	"wap5/trace"
)

// dgKey is a datagram flow without its source port (which a sender that
// never bound may not know) plus the datagram's length and checksum (step 4).
type dgKey struct {
	proto libsockcap.Proto
	dport uint16
	spath string
	dpath string
	scope string
	n     int64
	sum   uint32
}

type contentKey struct {
	n   int64
	sum uint32
}

// dgram is one datagram sent or received, waiting for its other end.
type dgram struct {
	send     bool
	t        int64 // as the observer recorded it
	ct       int64 // on the reference clock (step 0), for comparisons
	node     trace.NodeID
	actor    trace.ActorID // the thread that sent or received it
	host     string        // the observer's host, for fillWildcard
	local    libsockcap.Endpoint
	remote   libsockcap.Endpoint
	src, dst netip.AddrPort // canonical source and destination
	key      dgKey
	done     bool
}

type dgramState struct {
	sends, recvs map[dgKey][]*dgram
	content      map[contentKey][]*dgram
	recent       map[dgKey]int64 // last match of a flow, for duplicates
	// receivers and senders: traced datagram endpoints by port, so a send
	// nobody received can be told lost (receiver traced) from untraced.
	receivers map[uint16][]dgOwner
	pruneAt   int
}

type dgOwner struct {
	addr netip.Addr
	node trace.NodeID
	ep   libsockcap.Endpoint
}

func (s *dgramState) init() {
	s.sends = map[dgKey][]*dgram{}
	s.recvs = map[dgKey][]*dgram{}
	s.content = map[contentKey][]*dgram{}
	s.recent = map[dgKey]int64{}
	s.receivers = map[uint16][]dgOwner{}
	s.pruneAt = 1024
}

// compatible: the same address, or one of them a wildcard or unknown.
func compatible(a, b netip.Addr) bool {
	return !a.IsValid() || !b.IsValid() || a.IsUnspecified() || b.IsUnspecified() || a == b
}

func compatiblePort(a, b uint16) bool { return a == 0 || b == 0 || a == b }

func (m *matcher) observeDgram(ob *Observation) {
	if (ob.Op != OpSend && ob.Op != OpRecv) || ob.Bytes < 0 {
		return
	}
	d := &dgram{send: ob.Op == OpSend, t: ob.Time, ct: ob.Time - m.corr, node: m.names.node(ob.Observer), host: netScope(ob.Observer),
		local: ob.Local, remote: ob.Remote}
	if ob.Tid > 0 {
		d.actor = m.names.actor(ob.Observer, ob.Tid)
	}
	k := dgKey{proto: ob.Proto, n: ob.Bytes, sum: ob.Sum}
	if d.send {
		d.src, d.dst = m.nat.canon(ob.Local.Addr), m.nat.canon(ob.Remote.Addr)
		k.spath, k.dpath = ob.Local.Path, ob.Remote.Path
	} else {
		d.src, d.dst = m.nat.canon(ob.Remote.Addr), m.nat.canon(ob.Local.Addr)
		k.spath, k.dpath = ob.Remote.Path, ob.Local.Path
		m.noteReceiver(ob, d.node)
	}
	k.dport = d.dst.Port()
	switch {
	case ob.Proto == libsockcap.ProtoUnix:
		// One scope for both names: an abstract name on either side
		// makes it the network namespace's.
		if strings.HasPrefix(k.spath, "@") || strings.HasPrefix(k.dpath, "@") {
			k.scope = netScope(ob.Observer)
		} else {
			k.scope = hostScope(ob.Observer)
		}
	case d.dst.Addr().IsLoopback() || d.src.Addr().IsLoopback():
		k.scope = netScope(ob.Observer)
	}
	d.key = k
	s := &m.dg
	other := s.recvs
	if !d.send {
		other = s.sends
	}
	if p := m.takeDgram(other, k, d); p != nil {
		m.matchDgram(d, p)
		return
	}
	mine := s.sends
	if !d.send {
		mine = s.recvs
	}
	mine[k] = append(mine[k], d)
	ck := contentKey{k.n, k.sum}
	s.content[ck] = append(s.content[ck], d)
	m.schedule(deadline{at: m.now + m.window, dg: d, kind: dlDgram})
}

// dgNear: a waiting datagram this close to d in offset-corrected time is
// preferred to older ones of the same content (a one-way delay is well
// below it; a periodic datagram sent again, after a loss, is further).
const dgNear = int64(time.Second)

// takeDgram removes and returns the waiting datagram of flow k that is
// compatible with d: the oldest within dgNear of it, else the oldest; nil
// if none. Without the preference, one lost datagram of a periodic flow
// would shift every later receive onto the previous send.
func (m *matcher) takeDgram(pend map[dgKey][]*dgram, k dgKey, d *dgram) *dgram {
	list, ok := pend[k]
	if !ok {
		return nil
	}
	var got *dgram
	for _, p := range list {
		if p.done || !dgCompatible(d, p) {
			continue
		}
		if got == nil {
			got = p
		}
		if dt := p.ct - d.ct; dt >= -dgNear && dt <= dgNear {
			got = p
			break
		}
	}
	if got != nil {
		got.done = true
	}
	for len(list) > 0 && list[0].done {
		list = list[1:]
	}
	if len(list) == 0 {
		delete(pend, k)
	} else {
		pend[k] = list
	}
	return got
}

func dgCompatible(a, b *dgram) bool {
	return compatible(a.dst.Addr(), b.dst.Addr()) && compatible(a.src.Addr(), b.src.Addr()) &&
		compatiblePort(a.src.Port(), b.src.Port())
}

func (m *matcher) matchDgram(a, b *dgram) {
	s, r := a, b
	if !a.send {
		s, r = b, a
	}
	s.done, r.done = true, true
	m.dg.recent[s.key] = m.now
	if len(m.dg.recent) > m.dg.pruneAt {
		for k, t := range m.dg.recent {
			if t < m.now-m.window {
				delete(m.dg.recent, k)
			}
		}
		m.dg.pruneAt = 2*len(m.dg.recent) + 1024
	}
	// A wildcard-bound end is named by its host's address when the host
	// has one, else as the other end saw it.
	srcEP := m.fillWildcard(s.local, s.host)
	if isWildcard(srcEP) {
		srcEP = r.remote
	}
	dstEP := m.fillWildcard(r.local, r.host)
	if isWildcard(dstEP) {
		dstEP = s.remote
	}
	msg := m.emit(s.t, s.node, m.names.endpoint(srcEP), r.t, r.node, m.names.endpoint(dstEP), s.key.n)
	msg.SrcActor, msg.DstActor = s.actor, r.actor
}

func (m *matcher) noteReceiver(ob *Observation, node trace.NodeID) {
	if ob.Local.Unix || !ob.Local.Addr.IsValid() {
		return
	}
	p := ob.Local.Addr.Port()
	for _, o := range m.dg.receivers[p] {
		if o.addr == ob.Local.Addr.Addr() && o.node == node {
			return
		}
	}
	m.dg.receivers[p] = append(m.dg.receivers[p], dgOwner{addr: ob.Local.Addr.Addr(), node: node, ep: ob.Local})
}

// expireDgram decides a datagram still waiting after the window: a
// translated match (step 6), a duplicate, a loss, or an untraced peer.
func (m *matcher) expireDgram(d *dgram) {
	s := &m.dg
	ck := contentKey{d.key.n, d.key.sum}
	defer func() {
		list := s.content[ck]
		for len(list) > 0 && list[0].done {
			list = list[1:]
		}
		if len(list) == 0 {
			delete(s.content, ck)
		} else {
			s.content[ck] = list
		}
		mine := s.sends
		if !d.send {
			mine = s.recvs
		}
		l := mine[d.key]
		for len(l) > 0 && l[0].done {
			l = l[1:]
		}
		if len(l) == 0 {
			delete(mine, d.key)
		} else {
			mine[d.key] = l
		}
	}()
	if d.done {
		return
	}
	if !m.opts.DisableNATDetection {
		for _, p := range s.content[ck] {
			if p.done || p.send == d.send {
				continue
			}
			dt := p.ct - d.ct
			if dt < -m.window || dt > m.window {
				continue
			}
			snd, rcv := d, p
			if !d.send {
				snd, rcv = p, d
			}
			proto := d.key.proto.String()
			m.learn("dnat", proto, snd.remote, m.fillWildcard(rcv.local, rcv.host))
			m.learn("snat", proto, m.fillWildcard(snd.local, snd.host), rcv.remote)
			m.matchDgram(snd, rcv)
			return
		}
	}
	d.done = true
	if d.send {
		// Lost if a traced process receives at that address, else untraced.
		for _, o := range s.receivers[d.dst.Port()] {
			if compatible(o.addr, d.dst.Addr()) {
				m.lostDgrams++
				msg := m.emit(d.t, d.node, m.names.endpoint(d.local), trace.Unknown, o.node, m.names.endpoint(d.remote), d.key.n)
				msg.SrcActor = d.actor
				return
			}
		}
		msg := m.emit(d.t, d.node, m.names.endpoint(d.local), trace.Unknown, m.names.peer(d.remote), m.names.endpoint(d.remote), d.key.n)
		msg.SrcActor = d.actor
		return
	}
	if t, ok := s.recent[d.key]; ok && d.ct-t <= 2*m.window && t-d.ct <= 2*m.window {
		m.dupDgrams++
		return
	}
	msg := m.emit(trace.Unknown, m.names.peer(d.remote), m.names.endpoint(d.remote), d.t, d.node, m.names.endpoint(d.local), d.key.n)
	msg.DstActor = d.actor
}

func isWildcard(e libsockcap.Endpoint) bool {
	return !e.Unix && (!e.Addr.IsValid() || e.Addr.Addr().IsUnspecified())
}

// fillWildcard replaces the wildcard address of a datagram endpoint by the
// only non-loopback address its host is seen using on stream sockets.
func (m *matcher) fillWildcard(e libsockcap.Endpoint, host string) libsockcap.Endpoint {
	if !isWildcard(e) || !e.Addr.IsValid() {
		return e
	}
	if a := m.hostAddr[host]; a.IsValid() {
		return libsockcap.Endpoint{Addr: netip.AddrPortFrom(a, e.Addr.Port())}
	}
	return e
}

// learn records a translation seen on a datagram flow, unless the two names
// are the same place (up to a wildcard) or it is the reverse of a known one
// (replies come back from the address the client wrote).
func (m *matcher) learn(kind, proto string, before, after libsockcap.Endpoint) {
	if before.Unix || after.Unix || !before.Addr.IsValid() || !after.Addr.IsValid() {
		return
	}
	b, a := before.Addr, after.Addr
	if b.Port() == a.Port() && compatible(b.Addr(), a.Addr()) {
		return
	}
	if back, ok := m.nat.exact[a]; ok && back.Port() == b.Port() && compatible(back.Addr(), b.Addr()) {
		return
	}
	if back, ok := m.nat.exact[b]; ok && back.Port() == a.Port() && compatible(back.Addr(), a.Addr()) {
		return
	}
	if b.Addr().IsUnspecified() || a.Addr().IsUnspecified() {
		// A wildcard cannot canonicalise anything else; count it only.
		m.nat.add(kind, proto, b, a, true)
		m.nat.forget(b)
		m.nat.forget(a)
		return
	}
	m.nat.add(kind, proto, b, a, true)
}
