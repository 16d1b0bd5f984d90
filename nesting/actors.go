package nesting

import (
	"fmt"

	"wap5/trace"
)

// Actors (step 2b). A message may name the thread that sent it and the one
// that received it (trace.Message.SrcActor, DstActor; 0 = unknown). Servers
// that run each request in its own thread or process make the request's
// calls to their back-ends from the thread that received it; event loops and
// hand-offs between threads do not. Step 2b learns per node, from the calls
// with exactly one candidate parent, how often the call was sent by the
// actor that received that candidate, and uses it where the data shows it
// holds: at least the share ActorMin of those calls agree, and so many agree
// that chance cannot explain it (at most ActorChance, against the agreement
// expected if sending and receiving actors were unrelated: the sum over
// actors of their shares of the node's calls sent times their shares of
// calls received; an event loop, one actor, agrees by chance every time).
// There it keeps of each call's candidates only those received by the
// call's sending actor; a call none of whose candidates qualifies keeps
// them all.

// ActorStat is what step 2b learnt about the actors of one node that makes
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
	// Chance is the share of Same expected if the actors were unrelated,
	// Evidence the probability (an upper bound) of Same or more by chance.
	Chance, Evidence float64
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

// Rate is Same/Unambiguous (0 without samples).
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
	return fmt.Sprintf("%d actors, same actor in %d of %d unambiguous calls (%.1f%%; by chance %.1f%%, p ≤ %.1e), %s",
		a.Actors, a.Same, a.Unambiguous, 100*a.Rate(), 100*a.Chance, a.Evidence, use)
}

// actorPair is a call's sending actor (its call message's SrcActor, on the
// caller) and receiving actor (DstActor, on the callee).
type actorPair struct{ send, recv trace.ActorID }

// noteActors records call ci's actors (step 1); s.actors stays nil while no
// call has any.
func (s *state) noteActors(ci int, m *trace.Envelope) {
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

// actorFilter is step 2b at node b: ov are b's calls out (their candidates
// found, in cands), iv the calls into b. It returns the node's statistics
// (ok false when no call into or out of b has actors) and narrows the
// candidates where the statistics allow.
func (s *state) actorFilter(b trace.NodeID, iv []inRec, ov []outRec, cands []candidate) (st ActorStat, ok bool) {
	act := s.actors
	st.Node = b
	// How often each actor received the calls into b and sent b's calls
	// (package sameactor, shared with linking).
	t := &s.actorTally
	for j := range iv {
		t.Received(act[iv[j].id].recv)
	}
	for k := range ov {
		t.Sent(act[ov[k].id].send)
	}
	// 2b-i. Learn from the calls with one candidate.
	for k := range ov {
		if c := &ov[k]; c.candN == 1 {
			t.Pair(act[c.id].send, act[iv[cands[c.candOff].parent].id].recv)
		}
	}
	// 2b-ii. Use it only where it holds beyond chance.
	h := t.Decide(s.opt.ActorMin, s.opt.ActorChance)
	if !h.Any {
		return st, false
	}
	st.Actors, st.Unambiguous, st.Same, st.Chance, st.Evidence, st.Used = h.Actors, h.Unambiguous, h.Same, h.Chance, h.Evidence, h.Used
	if !st.Used {
		return st, true
	}
	// 2b-iii. Keep the candidates received by the call's sending actor.
	for j := range ov {
		c := &ov[j]
		sa := act[c.id].send
		if c.candN < 2 || sa == 0 {
			continue
		}
		cs := cands[c.candOff : c.candOff+c.candN]
		k := 0
		for _, cd := range cs {
			if act[iv[cd.parent].id].recv == sa {
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
