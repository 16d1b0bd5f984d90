package linking

import (
	"math"

	"wap5/trace"
)

// sweepNode is the node being swept (J3) laid out by position: what the
// sweep reads of the node's received messages (by position in insOf) and
// sends (by position in outsOf), gathered before the sweep in loops that do
// nothing else, and the sweep's state of the received messages by position.
//
// On a large trace a node's messages are scattered over the whole trace,
// and the sweep read several records per message in a chain (a received
// message's span, the span's request, its reply; a send's return; a
// forced reply's unsure bit): each load removed moved the wait to the next
// (results-jointsweep17.md). Gathered up front the loads are independent
// and many are in flight at once; the sweep itself then reads the node's
// own arrays in order.
type sweepNode struct {
	in  []sweepIn
	out []sweepOut
	// spP is, by position, the position of the received message's span
	// (its request, received at the node too), or −1 for spanRoot; uns
	// is joint.unsure by position. Both start as pass leaves them (span
	// i itself, spanRoot for an unpaired reply; not unsure): only this
	// node's sweep changes them for its received messages.
	spP []int32
	uns []bool
}

// sweepIn is a received message of the node being swept.
type sweepIn struct {
	close int64 // closes(i): when its own span ends
	edge  int32
	flags uint8 // inRet, inReq
}

const (
	inRet uint8 = 1 << iota // a return (role reply)
	inReq                   // a request
)

// sweepOut is a send of the node being swept.
type sweepOut struct {
	send int64
	// retRecv is, for a request, its return's receive time where the
	// node received it (else trace.Unknown).
	retRecv    int64
	peer       int32
	edge       int32
	role, half uint8
	flags      uint8 // outOrphan, outRetHere
}

const (
	outOrphan  uint8 = 1 << iota // unpaired and orphanReply
	outRetHere                   // a request whose return the node receives
)

// sweepGather is how many messages ahead the gathering loops ask for the
// records they read, and half as far for the records those lead to.
const sweepGather = 16

// gather lays node b out for its sweep: ins, recv and outs are insOf(b),
// insRecvOf(b) and outsOf(b).
func (j *joint) gather(b trace.NodeID, ins []int32, recv []int64, outs []int32) *sweepNode {
	nd := &j.node
	nd.in = grow(nd.in, len(ins))
	nd.spP = grow(nd.spP, len(ins))
	nd.uns = grow(nd.uns, len(ins))
	clear(nd.uns)
	hz := j.horizon[b]
	// 1. The received messages: each one's record, and a request's reply
	// (when its span closes), asked for ahead.
	for p, i := range ins {
		if a := p + sweepGather; a < len(ins) {
			prefetchAt(j.hot, ins[a])
		}
		if a := p + sweepGather/2; a < len(ins) {
			if h := &j.hot[ins[a]]; h.role == roleRequest {
				prefetchAt(j.hot, h.peer)
			}
		}
		h := &j.hot[i]
		var f uint8
		switch h.role {
		case roleReply:
			f = inRet
		case roleRequest:
			f = inReq
		}
		// closes(i), with b's horizon (edgeDst of its edge is b).
		cl := int64(math.MaxInt64)
		if h.role == roleRequest && j.hot[h.peer].send != trace.Unknown {
			cl = j.hot[h.peer].send
		} else if h.half == halfOpen && h.recv != trace.Unknown {
			cl = h.recv + hz
		}
		nd.in[p] = sweepIn{close: cl, edge: h.edge, flags: f}
		nd.spP[p] = int32(p)
		if h.half == halfHead {
			nd.spP[p] = -1
		}
	}
	// 2. The sends: each one's record and a request's return.
	nd.out = grow(nd.out, len(outs))
	var fixed []bool
	for p, o := range outs {
		if a := p + sweepGather; a < len(outs) {
			prefetchAt(j.hot, outs[a])
		}
		if a := p + sweepGather/2; a < len(outs) {
			if h := &j.hot[outs[a]]; h.role == roleRequest && h.peer >= 0 {
				prefetchAt(j.hot, h.peer)
			}
		}
		h := &j.hot[o]
		w := sweepOut{send: h.send, retRecv: trace.Unknown, peer: h.peer, edge: h.edge, role: h.role, half: h.half}
		switch h.role {
		case roleOneway:
			if fixed == nil {
				fixed = j.fixedEndpoints()
			}
			if e := j.eps[o]; fixed[e.src] && !fixed[e.dst] { // orphanReply
				w.flags |= outOrphan
			}
		case roleRequest:
			if rm := &j.hot[h.peer]; j.edgeDst[rm.edge] == b {
				w.flags |= outRetHere
				w.retRecv = rm.recv
			}
		}
		nd.out[p] = w
	}
	return nd
}

// posIn is the position of message i, received at t, in a node's received
// messages ins (ordered by receive time recv, then index), or −1.
func posIn(ins []int32, recv []int64, i int32, t int64) int32 {
	return posFrom(ins, recv, i, t, 0)
}

// posFrom is posIn where the position is known to be from or after from:
// it gallops from there (a call's return is mostly received soon after the
// call is sent, a few places on).
func posFrom(ins []int32, recv []int64, i int32, t int64, from int) int32 {
	before := func(h int) bool { return recv[h] < t || recv[h] == t && ins[h] < i }
	lo, hi := from, len(ins)
	for d := 1; lo+d < hi; d *= 2 {
		if !before(lo + d - 1) {
			hi = lo + d
			break
		}
		lo += d
	}
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if recv[h] < t || recv[h] == t && ins[h] < i {
			lo = h + 1
		} else {
			hi = h
		}
	}
	if lo < len(ins) && ins[lo] == i && recv[lo] == t {
		return int32(lo)
	}
	return -1
}

// grow is s resliced to n elements, reallocated (unzeroed contents
// aside) only when its capacity is short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
