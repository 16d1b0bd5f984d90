package linking

import (
	"wap5/trace"
)

// Roles of a message after RPC pairing.
const (
	roleOneway  uint8 = iota // not paired
	roleRequest              // a call; peer is its reply
	roleReply                // a return; peer is its call
)

// rpcs is the result of J1: every message's peer (−1 if unpaired) and role.
type rpcs struct {
	peer []int32
	role []uint8
}

// pairRPCs is J1: pair calls with returns, by kind=/call= where present,
// otherwise by request/response alternation on a connection.
func (l *linker) pairRPCs() *rpcs {
	n := len(l.msgs)
	r := &rpcs{peer: make([]int32, n), role: make([]uint8, n)}
	for i := range r.peer {
		r.peer[i] = -1
	}
	link := func(a, b int32) {
		r.peer[a], r.peer[b] = b, a
		r.role[a], r.role[b] = roleRequest, roleReply
	}
	// By call id, scoped to the unordered node pair.
	type callKey struct {
		call int32
		a, b trace.NodeID
	}
	// Sized at once: on a large trace growing the maps (rehashing
	// millions of entries) cost more than filling them.
	nCalls := 0
	for i := range l.msgs {
		if m := &l.msgs[i]; m.Kind == trace.KindCall && m.Call != trace.NoRef && !l.o.IgnoreKinds {
			nCalls++
		}
	}
	calls := make(map[callKey]int32, nCalls)
	for i := range l.msgs {
		m := &l.msgs[i]
		if m.Kind == trace.KindCall && m.Call != trace.NoRef && !l.o.IgnoreKinds {
			calls[callKey{m.Call, min(m.Src, m.Dst), max(m.Src, m.Dst)}] = int32(i)
		}
	}
	byID := len(calls) > 0
	if byID {
		for i := range l.msgs {
			m := &l.msgs[i]
			if m.Kind != trace.KindReturn || m.Call == trace.NoRef {
				continue
			}
			k := callKey{m.Call, min(m.Src, m.Dst), max(m.Src, m.Dst)}
			if c, ok := calls[k]; ok && r.peer[c] < 0 {
				link(c, int32(i))
				delete(calls, k)
			}
		}
	}
	// By connection: same endpoints, reversed.
	type end struct {
		n  trace.NodeID
		ep trace.EndpointID
	}
	less := func(a, b end) bool { return a.n < b.n || a.n == b.n && a.ep < b.ep }
	// A call or return with a call id the ids left unpaired lost its
	// peer: on a reused connection the next message the other way belongs
	// to another call.
	onConn := func(i int) bool {
		m := &l.msgs[i]
		return r.peer[i] < 0 && m.SrcEP != trace.NoEndpoint && m.DstEP != trace.NoEndpoint &&
			!(byID && m.Kind != trace.KindNone && m.Call != trace.NoRef)
	}
	nOn := 0
	for i := range l.msgs {
		if onConn(i) {
			nOn++
		}
	}
	conns := make(map[[2]end]int32, nOn/2+1) // a request and its reply per connection, at least
	conn := make([]int32, n)
	fwd := make([]bool, n)
	nc := 0
	for i := range l.msgs {
		m := &l.msgs[i]
		conn[i] = -1
		if !onConn(i) {
			continue
		}
		s, d := end{m.Src, m.SrcEP}, end{m.Dst, m.DstEP}
		k := [2]end{s, d}
		fwd[i] = true
		if less(d, s) {
			k, fwd[i] = [2]end{d, s}, false
		}
		c, ok := conns[k]
		if !ok {
			c = int32(nc)
			nc++
			conns[k] = c
		}
		conn[i] = c
	}
	start, items := csr(n, nc, func(i int) int { return int(conn[i]) })
	fixed := l.fixedEndpoints()
	var a, b []int32
	for c := 0; c < nc; c++ {
		a, b = a[:0], b[:0]
		for _, i := range items[start[c]:start[c+1]] {
			if fwd[i] {
				a = append(a, i)
			} else {
				b = append(b, i)
			}
		}
		open := int32(-1)
		step := func(i int32) {
			if open >= 0 && fwd[open] != fwd[i] {
				link(open, i)
				open = -1
				return
			}
			// A message from a server port to a client port with nothing
			// open is a reply whose request came before the trace (or the
			// chunk) began: pairing it would invert the connection.
			if m := &l.msgs[i]; fixed[m.SrcEP] && !fixed[m.DstEP] {
				open = -1
				return
			}
			open = i
		}
		for len(a) > 0 || len(b) > 0 {
			switch {
			case len(b) == 0 || len(a) > 0 && l.before(a[0], b[0]):
				step(a[0])
				a = a[1:]
			default:
				step(b[0])
				b = b[1:]
			}
		}
	}
	return r
}

// before orders a and b, which travel in opposite directions on one
// connection, on a clock both events share: a (X→Y) precedes b (Y→X) if it
// was received before b was sent (Y's clock), else if it was sent before b
// was received (X's clock).
func (l *linker) before(a, b int32) bool {
	ma, mb := &l.msgs[a], &l.msgs[b]
	if ma.Recv != trace.Unknown && mb.Send != trace.Unknown {
		return ma.Recv <= mb.Send
	}
	if ma.Send != trace.Unknown && mb.Recv != trace.Unknown {
		return ma.Send <= mb.Recv
	}
	return ma.Time() <= mb.Time()
}

// fixedEndpoints is FixedEndpoints of the linker's trace, computed once.
func (l *linker) fixedEndpoints() []bool {
	if l.fixed == nil {
		l.fixed = FixedEndpoints(l.t, l.o.FixedPortPeers)
	}
	return l.fixed
}

// orphanReply reports whether unpaired message i looks like a reply whose
// request is missing (lost, or before the trace): from a fixed port to an
// ephemeral one.
func (l *linker) orphanReply(i int32) bool {
	f := l.fixedEndpoints()
	m := &l.msgs[i]
	return f[m.SrcEP] && !f[m.DstEP]
}
