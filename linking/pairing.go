package linking

import (
	"unsafe"

	"wap5/internal/prefetch"
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
	r := &rpcs{peer: offMake[int32](&l.runMem, n), role: offMake[uint8](&l.runMem, n)}
	for i := range r.peer {
		r.peer[i] = -1
	}
	link := func(a, b int32) {
		r.peer[a], r.peer[b] = b, a
		r.role[a], r.role[b] = roleRequest, roleReply
	}
	// By call id, scoped to the unordered node pair: an open-addressing
	// table of the calls' message indices (a Go map of 2 M keys cost
	// ~2.5 s of hashing and probing on the CoDeeN-sized trace). A later
	// call with the same key replaces an earlier one, as a map would.
	// (indexEdges counted the calls: counted.)
	nCalls := l.idCalls
	if !l.counted {
		nCalls = 0
		for i := range l.msgs {
			if m := &l.msgs[i]; m.Kind == trace.KindCall && m.Call != trace.NoRef {
				nCalls++
			}
		}
	}
	if l.o.IgnoreKinds {
		nCalls = 0
	}
	byID := nCalls > 0
	if byID {
		calls := newCallTable(l.msgs, nCalls, &l.runMem)
		// The table is read no more after this pairing: given back (kept,
		// where the process keeps memory: J2's arrays take its pages,
		// resident already, instead of fresh ones).
		defer l.runMem.release(unsafe.Pointer(unsafe.SliceData(calls.ents)))
		// (The table is far larger than the caches: each call's and
		// return's first slot is asked for callAhead messages ahead, and
		// for a return the call in that slot half as far ahead.)
		msgs := l.msgs
		for i := range msgs {
			l.prefetchMsgs(int32(i))
			if a := i + callAhead; a < len(msgs) {
				if m := &msgs[a]; m.Kind == trace.KindCall && m.Call != trace.NoRef {
					calls.prefetchSlot(m)
				}
			}
			m := &msgs[i]
			if m.Kind == trace.KindCall && m.Call != trace.NoRef && !l.o.IgnoreKinds {
				calls.put(int32(i))
			}
		}
		for i := range msgs {
			l.prefetchMsgs(int32(i))
			if a := i + callAhead; a < len(msgs) {
				if m := &msgs[a]; m.Kind == trace.KindReturn && m.Call != trace.NoRef {
					calls.prefetchSlot(m)
				}
			}
			if a := i + callAhead/2; a < len(msgs) {
				if m := &msgs[a]; m.Kind == trace.KindReturn && m.Call != trace.NoRef {
					calls.prefetchCall(m)
				}
			}
			m := &msgs[i]
			if m.Kind != trace.KindReturn || m.Call == trace.NoRef {
				continue
			}
			if p := calls.find(m); p >= 0 {
				if c := calls.ents[p].idx; r.peer[c] < 0 {
					link(c, int32(i))
					calls.ents[p].idx = callGone
				}
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
	// (Counted by indexEdges: without ids, every message with both
	// endpoints; with them, those without kind= and call= together,
	// which the ids never pair.)
	nOn := l.epMsgs
	if byID {
		nOn = l.epNoID
	}
	if !l.counted {
		nOn = 0
		for i := range l.msgs {
			if onConn(i) {
				nOn++
			}
		}
	}
	if nOn == 0 {
		// Every message was paired by id or has no connection (the
		// CoDeeN-sized trace): no connection table, and no arrays by
		// message (~24 MB of fresh memory there) for nothing.
		return r
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
func (j *joint) orphanReply(i int32) bool {
	f := j.fixedEndpoints()
	e := j.eps[i]
	return f[e.src] && !f[e.dst]
}

// callTable maps a call's key — its call id and unordered node pair — to
// the message of the call (pairRPCs): linear probing over message indices,
// each with a tag of its key's hash so that a probe rarely loads a message.
type callTable struct {
	msgs []trace.Message
	ents []callEnt
}

type callEnt struct {
	idx int32  // the call's message; callFree: empty; callGone: deleted
	tag uint32 // the key's hash, high half
}

const (
	callFree int32 = -1
	callGone int32 = -2 // a tombstone: probes go on past it
)

// newCallTable is a table for n calls, its slots outside the Go heap
// where it is large (offMake in o: 64 MB on the CoDeeN-sized trace, which
// in the heap was garbage from J1 on that the collector and
// debug.FreeOSMemory gave back to the system, and J2 then faulted in
// afresh).
func newCallTable(msgs []trace.Message, n int, o *offHeap) *callTable {
	size := 64
	for size < 2*(n+1) {
		size *= 2
	}
	t := &callTable{msgs: msgs, ents: offMake[callEnt](o, size)}
	for i := range t.ents {
		t.ents[i].idx = callFree
	}
	return t
}

func callHash(m *trace.Message) uint64 {
	a, b := min(m.Src, m.Dst), max(m.Src, m.Dst)
	return mix(uint64(uint32(m.Call))<<32|uint64(uint32(a))) ^ mix(uint64(uint32(b))+0x9e3779b97f4a7c15)
}

func sameCall(m, q *trace.Message) bool {
	return m.Call == q.Call && min(m.Src, m.Dst) == min(q.Src, q.Dst) && max(m.Src, m.Dst) == max(q.Src, q.Dst)
}

// slot is where m's key is, or the free slot that ends its probe.
func (t *callTable) slot(m *trace.Message) int {
	h := callHash(m)
	tag, mask := uint32(h>>32), len(t.ents)-1
	p := int(h) & mask
	for {
		e := &t.ents[p]
		if e.idx == callFree || e.idx >= 0 && e.tag == tag && sameCall(&t.msgs[e.idx], m) {
			return p
		}
		p = (p + 1) & mask
	}
}

// callAhead is how many messages ahead pairRPCs asks for the call table's
// slots.
const callAhead = 16

// prefetchSlot asks for the cache line of m's key's first slot.
func (t *callTable) prefetchSlot(m *trace.Message) {
	prefetch.At(t.ents, int32(int(callHash(m))&(len(t.ents)-1)))
}

// prefetchCall asks for the message of the call in m's key's first slot
// (asked for by prefetchSlot before), where it holds one with m's tag.
func (t *callTable) prefetchCall(m *trace.Message) {
	h := callHash(m)
	if e := t.ents[int(h)&(len(t.ents)-1)]; e.idx >= 0 && e.tag == uint32(h>>32) {
		prefetch.At(t.msgs, e.idx)
	}
}

// put adds call i (replacing a call with the same key). The table never
// grows: it is sized for every call, and puts precede deletes.
func (t *callTable) put(i int32) {
	m := &t.msgs[i]
	p := t.slot(m)
	t.ents[p] = callEnt{idx: i, tag: uint32(callHash(m) >> 32)}
}

// find is the slot of the call with m's key, or −1.
func (t *callTable) find(m *trace.Message) int {
	if p := t.slot(m); t.ents[p].idx >= 0 {
		return p
	}
	return -1
}
