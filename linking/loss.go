package linking

import (
	"math"
	"slices"

	"wap5/trace"
)

// Half spans (J4 under message loss; Project 5 Figure 21). A lost reply
// leaves its request unpaired, a lost request its reply: without a span of
// their own, the calls the node made for them join the neighbouring spans
// and break those too. So the repair also offers spans with one end:
//
//   - open: an unpaired request received by the node (its reply was lost);
//     it lasts at most the node's longest span, and has no reply to place
//     (at the caller, such a request is a call like the others, without a
//     return: it is assigned to a span with them);
//   - headless: an unpaired reply sent by the node (its request was lost);
//     it began at most the node's longest span before, and its sends before
//     the first return it received have no known cause (a uniform delay
//     over the span; their parent is none: they start a path).
//
// A call in a half span costs what it costs in a whole one otherwise, so a
// lost message breaks its own path only.

// Kinds of half span, by the message that stands for it.
const (
	halfNone uint8 = iota
	halfOpen       // an unpaired request: no reply
	halfHead       // an unpaired reply: no request
)

// markHalves finds the messages that stand for half spans: unpaired
// messages that look like a request (kind=call, or to a fixed port from an
// ephemeral one) or like a reply (kind=return, or the other way).
func (j *joint) markHalves() {
	j.half = offMake[uint8](&j.runMem, len(j.msgs))
	j.lostCost = math.Inf(1)
	f := j.fixedEndpoints()
	paired, unpaired := 0, 0
	j.marks = make([][]int64, len(j.t.Nodes))
	j.halfAt = make([]bool, len(j.t.Nodes))
	for i := range j.msgs {
		if j.r.role[i] != roleOneway {
			paired++
			continue
		}
		m := &j.msgs[i]
		req, rep := m.Kind == trace.KindCall, m.Kind == trace.KindReturn
		if m.Kind == trace.KindNone || j.o.IgnoreKinds {
			req = f[m.DstEP] && !f[m.SrcEP]
			rep = f[m.SrcEP] && !f[m.DstEP]
		}
		if req || rep {
			unpaired++
		}
		// Where a call's return or a return's call is missing, the sends
		// of the node after it may have lost their cause.
		switch {
		case req && m.Send != trace.Unknown:
			j.marks[m.Src] = append(j.marks[m.Src], m.Send)
		case rep && m.Recv != trace.Unknown:
			j.marks[m.Dst] = append(j.marks[m.Dst], m.Recv)
		}
		switch {
		case req:
			j.half[i] = halfOpen
			j.halfAt[m.Dst] = true
		case rep && m.Send != trace.Unknown:
			j.half[i] = halfHead
			j.halfAt[m.Src] = true
		}
	}
	// The share of RPC messages whose peer is missing estimates the loss
	// rate; a send whose cause may have been lost costs at most
	// −log(rate) plus a uniform delay (lostCost, on top of headCost).
	if unpaired >= 10 && paired > 0 {
		rate := float64(unpaired) / float64(paired+unpaired)
		j.lostCost = -math.Log(rate)
		j.lossy = true
	}
	for _, m := range j.marks {
		slices.Sort(m)
	}
}

// lostCause is the cost of send a having lost its cause, the latest
// message its span received before it arriving at after: finite only when
// the node has a sign of loss (a call without its return, a return without
// its call) between that message and a.
func (j *joint) lostCause(b trace.NodeID, after int64, a int32) float64 {
	if math.IsInf(j.lostCost, 1) {
		return math.Inf(1)
	}
	s := j.hot[a].send
	m := j.marks[b]
	if p := lastAtOrBefore64(m, s); p < 0 || m[p] <= after {
		return math.Inf(1)
	}
	return j.lostCost + j.headCost()
}

// lostCall reports whether o, sent by its node, is a call whose return was
// lost: it is assigned to spans with the paired calls.
func (j *joint) lostCall(o int32) bool {
	h := &j.hot[o]
	return h.half == halfOpen && h.send != trace.Unknown
}

// spanBounds is when request (or half span) c's span at b begins and ends.
func (j *joint) spanBounds(c int32, longest int64) (int64, int64) {
	h := &j.hot[c]
	switch h.half {
	case halfOpen:
		return h.recv, h.recv + longest
	case halfHead:
		return h.send - longest, h.send
	}
	return h.recv, j.hot[h.peer].send
}

// addHalfSpans adds node b's half spans to ns (whose whole spans have
// their ns.recv and ns.end) and orders all spans by their beginning.
func (j *joint) addHalfSpans(b trace.NodeID, ns *nodeSpans) {
	if ns.longest == 0 {
		ns.longest = j.horizon[b]
	}
	whole := len(ns.req)
	if !j.halfAt[b] {
		return // no half span at b: nothing to scan for
	}
	for _, c := range j.insOf(b) {
		if j.half[c] == halfOpen && j.hot[c].recv != trace.Unknown {
			ns.req = append(ns.req, c)
		}
	}
	for _, o := range j.outsOf(b) {
		if j.half[o] == halfHead {
			ns.req = append(ns.req, o)
		}
	}
	if len(ns.req) == whole {
		return
	}
	for _, c := range ns.req[whole:] {
		st, en := j.spanBounds(c, ns.longest)
		ns.recv = append(ns.recv, st)
		ns.end = append(ns.end, en)
	}
	if !slices.IsSorted(ns.recv) {
		idx := make([]int, len(ns.req))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(x, y int) int { return cmpTime(ns.recv[x], ns.recv[y]) })
		req, st, en := make([]int32, len(idx)), make([]int64, len(idx)), make([]int64, len(idx))
		for i, x := range idx {
			req[i], st[i], en[i] = ns.req[x], ns.recv[x], ns.end[x]
		}
		ns.req, ns.recv, ns.end = req, st, en
	}
	for s, c := range ns.req {
		ns.sidx[c] = int32(s)
	}
}

// headCost is the cost of a send of a headless span before any return:
// its cause was lost, its delay is uniform over the longest span.
func (j *joint) headCost() float64 {
	l := j.x
	if j.curSpans != nil && j.curSpans.longest > 0 {
		l = j.curSpans.longest
	}
	return math.Log(float64(l) / 1e9)
}

// spanEnds are the sender of the request opening span c and the node
// serving it (for a headless span, the reply's receiver and sender).
func (j *joint) spanEnds(c int32) (src, node trace.NodeID) {
	e := j.hot[c].edge
	if j.hot[c].half == halfHead {
		return j.edgeDst[e], j.edgeSrc[e]
	}
	return j.edgeSrc[e], j.edgeDst[e]
}
