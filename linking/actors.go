package linking

import (
	"fmt"

	"wap5/sameactor"
	"wap5/trace"
)

// Actors (J2b; the joint linker only). A message may name the thread that
// sent it and the one that received it (trace.Message.SrcActor, DstActor;
// 0 = unknown). A server that runs each request in a thread or process of
// its own sends the request's calls from the thread that received the
// request; an event loop does not. Before the sweeps, the habit is learnt
// per node as nesting learns it (package sameactor, the same thresholds:
// Options.ActorMin, ActorChance): from the node's calls that fit in exactly
// one request span (received before the call was sent, replied after its
// return arrived), how often the call left from the thread that received the
// span's request, against chance. Where it holds, a call from another thread
// than the one that received a span's request costs actorMismatch in that
// span — in the sweep (J3) for a candidate parent of the span, and in the
// span costs of the repair (J4). A call whose thread received none of the
// spans it could join pays the price in every one of them: timing decides
// among them as before. Without actors (gen traces, pcaps) nothing changes.

// actorMismatch is the price (nats) of a call from another thread than the
// one that received its span's request, where the habit holds: as good as
// an exclusion (beyond over-capacity), but a call no span's thread sent
// still goes where timing puts it.
const actorMismatch = 20

// ActorHabit is what the joint linker learnt about the actors of one node.
type ActorHabit struct {
	Node trace.NodeID
	sameactor.Habit
}

// String is a one-line summary for logs.
func (h ActorHabit) String() string {
	use := "not used"
	if h.Used {
		use = "used"
	}
	return fmt.Sprintf("%d actors, same actor in %d of %d calls with one possible span (%.1f%%; by chance %.1f%%, p ≤ %.1e), %s",
		h.Actors, h.Same, h.Unambiguous, 100*h.Rate(), 100*h.Chance, h.Evidence, use)
}

// learnActors is J2b: j.actorOn[b] where the habit holds at b.
func (j *joint) learnActors() {
	j.actorOn = nil
	if j.o.ActorMin > 1 || j.actors == nil { // no message names a thread
		return
	}
	var t sameactor.Tally
	var recv, end []int64
	var req []int32
	on := make([]bool, len(j.t.Nodes))
	used := false
	for b := range j.t.Nodes {
		b := trace.NodeID(b)
		recv, end, req = recv[:0], end[:0], req[:0]
		longest := int64(0)
		for _, c := range j.insOf(b) {
			if j.r.role[c] != roleRequest {
				continue
			}
			p := j.hot[c].peer
			mp, mc := j.pm(p), j.pm(c)
			if mp.Src != b || mp.Send == trace.Unknown || mp.Send < mc.Recv {
				continue
			}
			recv, end, req = append(recv, mc.Recv), append(end, mp.Send), append(req, c)
			longest = max(longest, mp.Send-mc.Recv)
			t.Received(j.actorOf(c).dst)
		}
		for _, o := range j.outsOf(b) {
			if j.r.role[o] != roleRequest {
				continue
			}
			m, sa := j.pm(o), j.actorOf(o).src
			t.Sent(sa)
			if sa == trace.NoActor || len(req) == 0 {
				continue
			}
			// The spans it fits in: exactly one?
			need, from := j.need(b, o), m.Send-longest
			only, n := int32(-1), 0
			for p := lastAtOrBefore64(recv, m.Send); p >= 0 && recv[p] >= from && n < 2; p-- {
				if end[p] >= need {
					only = req[p]
					n++
				}
			}
			if n == 1 {
				t.Pair(sa, j.actorOf(only).dst)
			}
		}
		h := t.Decide(j.o.ActorMin, j.o.ActorChance)
		if h.Actors > 0 { // threads received requests here
			j.actorHabits = append(j.actorHabits, ActorHabit{Node: b, Habit: h})
		}
		on[b] = h.Used
		used = used || h.Used
	}
	if used {
		j.actorOn = on
	}
}

// hasActors reports whether any message names an actor (noted by
// indexEdges where it read the messages: counted).
func (j *joint) hasActors() bool {
	if j.counted {
		return j.anyActor
	}
	for i := range j.msgs {
		if j.msgs[i].SrcActor != trace.NoActor || j.msgs[i].DstActor != trace.NoActor {
			return true
		}
	}
	return false
}

// spanActor is the thread of span c at node b: the one that received its
// request (a half span of a lost request: the one that sent its reply).
func (j *joint) spanActor(b trace.NodeID, c int32) trace.ActorID {
	if j.dstOf(c) == b {
		return j.actorOf(c).dst
	}
	return j.actorOf(c).src
}

// actorCost is the price of send o at node b in span sp (spanRoot or a
// request; trig the candidate parent when sp is not a span).
func (j *joint) actorCost(b trace.NodeID, o, sp, trig int32) float64 {
	sa := j.actorOf(o).src
	if sa == trace.NoActor {
		return 0
	}
	var a trace.ActorID
	if sp >= 0 {
		a = j.spanActor(b, sp)
	} else {
		a = j.actorOf(trig).dst
	}
	if a == trace.NoActor || a == sa {
		return 0
	}
	return actorMismatch
}

// actorSpanCost is the actor term of request c's span at b with the given
// calls.
func (j *joint) actorSpanCost(b trace.NodeID, c int32, calls []int32) float64 {
	a := j.spanActor(b, c)
	if a == trace.NoActor {
		return 0
	}
	cost := 0.0
	for _, k := range calls {
		if sa := j.actorOf(k).src; sa != trace.NoActor && sa != a {
			cost += actorMismatch
		}
	}
	return cost
}
