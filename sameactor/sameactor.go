// Package sameactor learns, per node, whether the calls a node makes leave
// from the thread (actor, trace.ActorID) that received their cause — the
// habit of thread-per-request and process-per-connection servers, not of
// event loops — and whether the habit is strong enough to use. Nesting
// (step 2b) and linking (the joint linker) share it.
//
// Steps, numbered as in the code:
//
//  1. Count, at one node, how often each actor received the node's requests
//     and how often each sent the node's calls (Received, Sent).
//  2. Count the unambiguous calls — those with exactly one possible cause —
//     and how many of them the cause's receiving actor sent (Pair).
//  3. Decide (Decide): the habit holds when at least two actors received
//     requests, at least the share min of the unambiguous calls agree, and
//     agreement by chance is ruled out: the probability of that many
//     agreeing or more, were sending and receiving actors unrelated, is at
//     most maxChance. Chance agreement is the sum over actors of their share
//     of calls sent times their share of requests received; the tail is
//     bounded by C(n, s)·p^s.
package sameactor

import (
	"math"

	"wap5/trace"
)

// Habit is what was learnt at one node.
type Habit struct {
	// Actors is the number of distinct actors that received requests.
	Actors int
	// Unambiguous counts the calls with one possible cause and both actors
	// known; Same those of them sent by the cause's receiving actor.
	Unambiguous, Same int
	// Chance is the share of Same expected if the actors were unrelated;
	// Evidence bounds the probability of Same or more by chance.
	Chance, Evidence float64
	// Used: the habit holds (Decide's thresholds are met).
	Used bool
	// Any: some request received or call sent had its actor known.
	Any bool
}

// Rate is Same/Unambiguous (0 without samples).
func (h Habit) Rate() float64 {
	if h.Unambiguous == 0 {
		return 0
	}
	return float64(h.Same) / float64(h.Unambiguous)
}

// Tally accumulates one node's counts (steps 1–2); Decide ends the node and
// resets the tally for the next. The zero value is ready to use.
type Tally struct {
	in, out     []int32 // by actor: requests received, calls sent
	seen        []trace.ActorID
	nin, nout   int
	actors      int
	unamb, same int
}

func (t *Tally) note(a trace.ActorID, n []int32) {
	if t.in[a] == 0 && t.out[a] == 0 {
		t.seen = append(t.seen, a)
	}
	n[a]++
}

func (t *Tally) grow() {
	if t.in == nil {
		t.in, t.out = make([]int32, trace.MaxActors+1), make([]int32, trace.MaxActors+1)
	}
}

// Received is step 1 for a request received by actor a (unknown: ignored).
func (t *Tally) Received(a trace.ActorID) {
	if a == trace.NoActor {
		return
	}
	t.grow()
	if t.in[a] == 0 {
		t.actors++
	}
	t.note(a, t.in)
	t.nin++
}

// Sent is step 1 for a call sent by actor a (unknown: ignored).
func (t *Tally) Sent(a trace.ActorID) {
	if a == trace.NoActor {
		return
	}
	t.grow()
	t.note(a, t.out)
	t.nout++
}

// Pair is step 2 for an unambiguous call sent by actor send whose cause was
// received by actor recv (either unknown: ignored).
func (t *Tally) Pair(send, recv trace.ActorID) {
	if send == trace.NoActor || recv == trace.NoActor {
		return
	}
	t.unamb++
	if send == recv {
		t.same++
	}
}

// Decide is step 3 with the thresholds min (share of agreement) and
// maxChance (probability of chance agreement); min > 1 never uses the habit.
// It resets the tally.
func (t *Tally) Decide(min, maxChance float64) Habit {
	h := Habit{Actors: t.actors, Unambiguous: t.unamb, Same: t.same, Any: t.nin > 0 || t.nout > 0}
	for _, a := range t.seen {
		h.Chance += float64(t.in[a]) * float64(t.out[a])
		t.in[a], t.out[a] = 0, 0
	}
	if t.nin > 0 && t.nout > 0 {
		h.Chance /= float64(t.nin) * float64(t.nout)
	}
	h.Evidence = ChanceTail(h.Unambiguous, h.Same, h.Chance)
	h.Used = h.Actors >= 2 && h.Unambiguous > 0 && float64(h.Same) >= min*float64(h.Unambiguous) && h.Evidence <= maxChance
	t.seen, t.nin, t.nout, t.actors, t.unamb, t.same = t.seen[:0], 0, 0, 0, 0, 0
	return h
}

// ChanceTail bounds the probability of s or more successes in n trials of
// probability p: C(n, s)·p^s.
func ChanceTail(n, s int, p float64) float64 {
	if s == 0 || p >= 1 {
		return 1
	}
	if p <= 0 {
		return 0
	}
	ln := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	return math.Min(1, math.Exp(ln(n)-ln(s)-ln(n-s)+float64(s)*math.Log(p)))
}
