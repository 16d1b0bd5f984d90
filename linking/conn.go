package linking

import (
	"math"
	"slices"

	"wap5/internal/prefetch"
	"wap5/trace"
)

// Connection affinity (J4's tie-breaker): a server that serves a connection
// from one thread makes that thread's calls on the thread's own connection,
// so the spans of consecutive requests on one incoming connection tend to
// call a destination over the same outgoing connection. Before a node is
// repaired, every span takes as hints the outgoing connections its
// neighbours on the incoming connection (the previous and the next request)
// used, per destination, in the assignment as it stands (a snapshot, so that
// a span's cost does not change while other spans are rearranged). How much
// a call on another connection costs is learned from the snapshot: how often
// neighbouring spans that both call a destination use one connection for it.

// connHint is an outgoing connection a span's neighbour used for dst.
type connHint struct {
	dst      trace.NodeID
	src, end trace.EndpointID
}

// maxConnCost caps the price (nats) of a call on another connection than
// the hints': a tie-breaker, never more than a fraction of a delay's cost.
const maxConnCost = 2.0

// connHints fills ns.hints and ns.connCost at node b from the current
// assignment.
func (j *joint) connHints(b trace.NodeID, ns *nodeSpans) {
	ns.hints = nil
	ns.connCost = 0
	// Requests on one incoming connection, in receive order (ns.req is).
	// The last span of each connection (src, dst endpoints), in a table
	// reused from node to node.
	last := j.scr.connLast.reset(len(ns.req))
	prev := slices.Grow(j.scr.connPrev[:0], len(ns.req))[:len(ns.req)]
	j.scr.connPrev = prev
	any := false
	// (Only the requests' endpoints are read, scattered over a large
	// trace: asked for a few requests ahead.)
	for s, c := range ns.req {
		if a := s + sweepAhead; a < len(ns.req) {
			prefetch.At(j.eps, ns.req[a])
		}
		m := j.eps[c]
		prev[s] = -1
		if m.src == trace.NoEndpoint || m.dst == trace.NoEndpoint {
			continue
		}
		k := uint64(uint32(m.src))<<32 | uint64(uint32(m.dst))
		if p, ok := last.get(k); ok {
			prev[s] = p
			any = true
		}
		last.put(k, int32(s))
	}
	if !any {
		return
	}
	// The hint lists are reused from node to node (a large trace made
	// ~100 MB of garbage here).
	h := j.scr.hints[:cap(j.scr.hints)]
	if len(h) < len(ns.req) {
		h = append(h, make([][]connHint, len(ns.req)-len(h))...)
	}
	h = h[:len(ns.req)]
	for s := range h {
		h[s] = h[s][:0]
	}
	ns.hints, j.scr.hints = h, h
	same, pairs := 0.0, 0.0
	for s := range ns.req {
		// (The calls' records, scattered over a large trace: asked for
		// a few spans ahead.)
		if a := s + sweepAhead; a < len(ns.req) {
			for _, k := range ns.members[a] {
				prefetch.At(j.hot, k)
				prefetch.At(j.eps, k)
			}
		}
		p := prev[s]
		if p < 0 {
			continue
		}
		for _, k := range ns.members[s] {
			mk := j.pm(k)
			for _, q := range ns.members[p] {
				mq := j.pm(q)
				if mq.Dst != mk.Dst {
					continue
				}
				pairs++
				if mq.SrcEP == mk.SrcEP && mq.DstEP == mk.DstEP {
					same++
				}
				break
			}
		}
		for _, q := range ns.members[p] {
			mq := j.pm(q)
			ns.hints[s] = append(ns.hints[s], connHint{mq.Dst, mq.SrcEP, mq.DstEP})
		}
		for _, k := range ns.members[s] {
			mk := j.pm(k)
			ns.hints[p] = append(ns.hints[p], connHint{mk.Dst, mk.SrcEP, mk.DstEP})
		}
	}
	// Affinity a (with a prior of one pair each way); only a clear habit
	// (a ≥ 0.6) is worth anything.
	if pairs < 10 {
		return
	}
	a := (same + 1) / (pairs + 2)
	if a >= 0.6 {
		ns.connCost = math.Min(maxConnCost, math.Log(a/(1-a)))
	}
}

// connCost is the affinity term of request c's span with the given calls:
// a call to a destination its neighbours called over other connections only.
func (j *joint) connCostOf(ns *nodeSpans, c int32, calls []int32) float64 {
	if ns == nil || ns.connCost == 0 || ns.hints == nil {
		return 0
	}
	s, ok := ns.at(c)
	if !ok || len(ns.hints[s]) == 0 {
		return 0
	}
	cost := 0.0
	for _, k := range calls {
		m := j.pm(k)
		hinted, match := false, false
		for _, h := range ns.hints[s] {
			if h.dst == m.Dst {
				hinted = true
				if h.src == m.SrcEP && h.end == m.DstEP {
					match = true
					break
				}
			}
		}
		if hinted && !match {
			cost += ns.connCost
		}
	}
	return cost
}
