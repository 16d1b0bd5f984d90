package nesting

import (
	"fmt"

	"wap5/trace"
)

// Actors (step 2c). A message may name the thread that sent it and the one
// that received it (trace.Message.SrcActor, DstActor; 0 = unknown). Servers
// that run each request in its own thread or process make the request's
// calls to their back-ends from the thread that received it; event loops and
// hand-offs between threads do not. Step 2c learns per node, from the calls
// with exactly one candidate parent, how often the call was sent by the
// actor that received that candidate, and where that holds (ActorMin of
// at least ActorSamples such calls, at a node where calls arrive on more
// than one actor) keeps of each call's candidates only those received by the
// call's sending actor; a call none of whose candidates qualifies keeps
// them all.

// ActorStat is what step 2c learnt about the actors of one node that makes
// calls and receives them with actors known.
type ActorStat struct {
	Node trace.NodeID
	// Actors is the number of distinct actors that received calls at the
	// node (1: an event loop, or a single thread).
	Actors int
	// Unambiguous counts the node's calls with exactly one candidate parent
	// and both actors known; Same those of them sent by the actor that
	// received the candidate.
	Unambiguous, Same int
	// Used: the filter was applied at this node.
	Used bool
	// Narrowed counts calls whose candidates the filter reduced, Fallback
	// calls with several candidates of which none was received by the
	// call's sending actor (they kept all).
	Narrowed, Fallback int
	// Before and After are the candidate parents of the node's calls with
	// more than one, summed, before and after the filter.
	Before, After int
}

// Rate is Same/Unambiguous (NaN-free: 0 without samples).
func (a ActorStat) Rate() float64 {
	if a.Unambiguous == 0 {
		return 0
	}
	return float64(a.Same) / float64(a.Unambiguous)
}

// String is a one-line summary for logs.
func (a ActorStat) String() string {
	use := "not used"
	if a.Used {
		use = fmt.Sprintf("used: %d calls narrowed (%d → %d candidates), %d kept all", a.Narrowed, a.Before, a.After, a.Fallback)
	}
	return fmt.Sprintf("%d actors, same actor in %d of %d unambiguous calls (%.1f%%), %s", a.Actors, a.Same, a.Unambiguous, 100*a.Rate(), use)
}

// actorPair is a call's sending actor (its call message's SrcActor, on the
// caller) and receiving actor (DstActor, on the callee).
type actorPair struct{ send, recv trace.ActorID }

// noteActors records call ci's actors (step 1); s.actors stays nil while no
// call has any.
func (s *state) noteActors(ci int, m *trace.Message) {
	if m.SrcActor == trace.NoActor && m.DstActor == trace.NoActor {
		if s.actors != nil {
			s.actors = append(s.actors, actorPair{})
		}
		return
	}
	if s.actors == nil {
		s.actors = make([]actorPair, ci, cap(s.calls))
	}
	s.actors = append(s.actors, actorPair{m.SrcActor, m.DstActor})
}

// actorFilter is step 2c at node b: outs are b's calls out (their
// candidates found), ins the calls into b. It returns the node's statistics
// (ok false when no call into or out of b has actors) and narrows the
// candidates where the statistics allow.
func (s *state) actorFilter(b trace.NodeID, ins, outs []int32) (st ActorStat, ok bool) {
	act, calls := s.actors, s.calls
	st.Node = b
	// Distinct receiving actors of the calls into b.
	seen := s.actorSeen[:0]
	for _, pi := range ins {
		a := act[pi].recv
		if a == trace.NoActor {
			continue
		}
		w, bit := int(a)>>6, uint64(1)<<(a&63)
		for len(s.actorBits) <= w {
			s.actorBits = append(s.actorBits, 0)
		}
		if s.actorBits[w]&bit == 0 {
			s.actorBits[w] |= bit
			seen = append(seen, a)
		}
	}
	st.Actors = len(seen)
	for _, a := range seen {
		s.actorBits[int(a)>>6] = 0
	}
	s.actorSeen = seen[:0]
	// 2c-i. Learn from the calls with one candidate.
	known := false
	for _, ci := range outs {
		c := &calls[ci]
		sa := act[ci].send
		known = known || sa != 0
		if c.candN != 1 || sa == 0 {
			continue
		}
		pa := act[s.cands[c.candOff].parent].recv
		if pa == 0 {
			continue
		}
		st.Unambiguous++
		if pa == sa {
			st.Same++
		}
	}
	if !known && st.Actors == 0 {
		return st, false
	}
	// 2c-ii. Use it only where it carries information and holds.
	st.Used = st.Actors >= 2 && st.Unambiguous >= s.opt.ActorSamples && st.Unambiguous > 0 &&
		float64(st.Same) >= s.opt.ActorMin*float64(st.Unambiguous)
	if !st.Used {
		return st, true
	}
	// 2c-iii. Keep the candidates received by the call's sending actor.
	for _, ci := range outs {
		c := &calls[ci]
		sa := act[ci].send
		if c.candN < 2 || sa == 0 {
			continue
		}
		cs := s.cands[c.candOff : c.candOff+c.candN]
		k := 0
		for _, cd := range cs {
			if act[cd.parent].recv == sa {
				cs[k] = cd
				k++
			}
		}
		st.Before += len(cs)
		switch {
		case k == 0:
			st.Fallback++
			st.After += len(cs)
		case k < len(cs):
			st.Narrowed++
			st.After += k
			c.candN = int32(k)
		default:
			st.After += k
		}
	}
	return st, true
}
