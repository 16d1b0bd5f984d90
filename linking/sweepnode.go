package linking

import (
	"math"
	"unsafe"

	"wap5/internal/prefetch"
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
	// uns is joint.unsure by position. It starts as pass leaves it (not
	// unsure), and so do the received messages' spans (their own, or
	// spanRoot for an unpaired reply): only this node's sweep changes
	// them for its received messages.
	uns []bool
}

// sweepIn is a received message of the node being swept: its edge,
// whether it is a return (role reply), and its span as the sweep will find
// it when the message goes live (sweepSpan's fields; 24 bytes in all).
type sweepIn struct {
	close    int64
	sp, spp  int32
	edge     int32
	req, ret bool
}

// sweepSpan is a received message's span: the span's message sp (received
// at the node too, or spanRoot), its position spp (−1: spanRoot), when the
// span closes (closes(sp)) and whether sp is a request.
type sweepSpan struct {
	close   int64
	sp, spp int32
	req     bool
}

// setSpan gives the received message its span s.
func (in *sweepIn) setSpan(s sweepSpan) {
	in.close, in.sp, in.spp, in.req = s.close, s.sp, s.spp, s.req
}

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
	if nd.in == nil {
		// 0. The arrays at the largest node's size, once per pass,
		// outside the heap (offMap): pass gives them back after the
		// sweeps (dropNode), so that they are not held through the
		// repair and the heap does not grow for them.
		mi, mo := 1, 1
		for b := range j.t.Nodes {
			mi = max(mi, len(j.insOf(trace.NodeID(b))))
			mo = max(mo, len(j.outsOf(trace.NodeID(b))))
		}
		*nd = sweepNode{in: offMap[sweepIn](&j.runMem, mi), out: offMap[sweepOut](&j.runMem, mo), uns: offMap[bool](&j.runMem, mi)}
	}
	nd.in, nd.uns = nd.in[:len(ins)], nd.uns[:len(ins)]
	clear(nd.uns)
	hz := j.horizon[b]
	rootClose := j.closes(spanRoot)
	// 1. The received messages: each one's record, and a request's reply
	// (when its span closes), asked for ahead.
	for p, i := range ins {
		// (Both in one call: what is not needed is asked for twice.)
		if a := p + sweepGather; a < len(ins) {
			far := addrAt(j.hot, ins[a])
			near := far
			if h := &j.hot[ins[p+sweepGather/2]]; h.role == roleRequest {
				near = addrAt(j.hot, h.peer)
			}
			prefetch.Two(far, near)
		} else if a := p + sweepGather/2; a < len(ins) {
			if h := &j.hot[ins[a]]; h.role == roleRequest {
				prefetch.At(j.hot, h.peer)
			}
		}
		h := &j.hot[i]
		if h.half == halfHead {
			nd.in[p] = sweepIn{close: rootClose, sp: spanRoot, spp: -1, edge: h.edge, ret: h.role == roleReply}
			continue
		}
		// closes(i), with b's horizon (edgeDst of its edge is b).
		cl := int64(math.MaxInt64)
		if h.role == roleRequest && j.hot[h.peer].send != trace.Unknown {
			cl = j.hot[h.peer].send
		} else if h.half == halfOpen && h.recv != trace.Unknown {
			cl = h.recv + hz
		}
		nd.in[p] = sweepIn{close: cl, sp: i, spp: int32(p), edge: h.edge, req: h.role == roleRequest, ret: h.role == roleReply}
	}
	// 2. The sends: each one's record and a request's return.
	nd.out = nd.out[:len(outs)]
	var fixed []bool
	for p, o := range outs {
		if a := p + sweepGather; a < len(outs) {
			far := addrAt(j.hot, outs[a])
			near := far
			if h := &j.hot[outs[p+sweepGather/2]]; h.role == roleRequest && h.peer >= 0 {
				near = addrAt(j.hot, h.peer)
			}
			prefetch.Two(far, near)
		} else if a := p + sweepGather/2; a < len(outs) {
			if h := &j.hot[outs[a]]; h.role == roleRequest && h.peer >= 0 {
				prefetch.At(j.hot, h.peer)
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

// addrAt is the address of s[i], for prefetch2 and prefetch4.
func addrAt[T any](s []T, i int32) uintptr { return uintptr(unsafe.Pointer(&s[i])) }

// dropNode gives the sweeps' node arrays back (gather makes them again).
func (j *joint) dropNode() {
	nd := &j.node
	if nd.in != nil {
		for _, p := range []unsafe.Pointer{unsafe.Pointer(unsafe.SliceData(nd.in)), unsafe.Pointer(unsafe.SliceData(nd.out)), unsafe.Pointer(unsafe.SliceData(nd.uns))} {
			j.runMem.release(p)
		}
	}
	*nd = sweepNode{}
}
