package nesting

import (
	"fmt"
	"time"
	"unsafe"

	"wap5/sameactor"
	"wap5/trace"
)

// TimeMode says which timestamps the algorithm compares.
type TimeMode int

const (
	// TimeLocal compares the times each node recorded itself (send times of
	// the messages a node sends, receive times of those it receives).
	TimeLocal TimeMode = iota
	// TimeSend uses each message's send time only (receive time when the
	// sender was not traced), like Project 5's single-timestamp traces.
	TimeSend
)

// Options tunes the algorithm. The zero value is not useful; start from
// DefaultOptions.
type Options struct {
	Time TimeMode
	// SkewWindow loosens the nesting test of step 2: a call counts as
	// nested if it starts no more than SkewWindow before its parent and ends
	// no more than SkewWindow after it.
	SkewWindow time.Duration
	// Smooth is the standard deviation, in bins, of the Gaussian the
	// scoreboard histograms are convolved with (0: no smoothing).
	Smooth float64
	// X, Y, Z are the exponents of the overlapping-, same- and generic-child
	// penalties.
	X, Y, Z float64
	// BinLo, BinRatio and Bins shape the scoreboard histograms.
	BinLo    time.Duration
	BinRatio float64
	Bins     int
	// HistPatterns is how many of the most frequent patterns get delay
	// histograms in their steps (they cost 340 bins per delay each).
	HistPatterns int
	// NoInstances leaves Paths.Instances empty.
	NoInstances bool
	// ActorMin and ActorChance gate step 2b: a node's calls are
	// restricted to candidate parents received by their sending actor when,
	// of its calls with one candidate, at least the share ActorMin were sent
	// by the actor that received it, and the probability of that much
	// agreement by chance is at most ActorChance (ActorMin > 1: never).
	ActorMin    float64
	ActorChance float64
}

// DefaultOptions returns Project 5's defaults: x = 2, y = z = 0, no skew
// window, no smoothing, 340 bins of ratio 1.05 from 1 ms.
func DefaultOptions() Options {
	return Options{X: 2, BinLo: time.Millisecond, BinRatio: 1.05, Bins: 340, HistPatterns: 100, ActorMin: 0.99, ActorChance: 1e-6}
}

// Result is the output of Nest: the paths, and what the run saw.
type Result struct {
	trace.Paths
	Messages  int // messages in the trace
	CallPairs int // calls matched with their returns
	Unpaired  int // messages that matched nothing
	// Parallelism is the mean number of candidate parents per call that had
	// any (Project 5's "mean per-node parallelism").
	Parallelism float64
	Roots       int // calls without a parent: one per path instance
	// Actors holds step 2c's statistics per node whose calls carry actors
	// (none when the trace has no actors).
	Actors []ActorStat
}

// Nest runs the nesting algorithm on t; t is not modified.
func Nest(t *trace.Trace, opt Options) *Result {
	s := &state{t: t}
	defer s.ar.free()
	// The envelopes in the arena, with room for the pass (findCallPairs).
	n := len(t.Messages)
	s.ar.reserve(n*int(unsafe.Sizeof(trace.Envelope{}))/8 + passWords(n))
	env := grabDirty[trace.Envelope](&s.ar, n)
	for i := range t.Messages {
		env[i] = trace.EnvelopeOf(&t.Messages[i])
	}
	return s.nest(env, true, opt)
}

// NestEnvelopes is Nest of the trace whose messages' envelopes are msgs
// (t.Messages is not read: see trace.ReadFileEnvelopes); neither is
// modified.
func NestEnvelopes(t *trace.Trace, msgs []trace.Envelope, opt Options) *Result {
	s := &state{t: t}
	defer s.ar.free()
	return s.nest(msgs, false, opt)
}

// NestEnvelopesScratch is NestEnvelopes that may use msgs' memory as
// scratch once step 1 is done with it (steps 2 to 4 then touch no fresh
// memory for theirs): afterwards msgs holds anything. For a caller that
// drops the envelopes after the pass (wap5 nest).
func NestEnvelopesScratch(t *trace.Trace, msgs []trace.Envelope, opt Options) *Result {
	s := &state{t: t}
	defer s.ar.free()
	return s.nest(msgs, true, opt)
}

// nest runs the algorithm on msgs; s holds the trace and may hold an
// arena. scratch: msgs' memory may be reused once step 1 is done.
func (s *state) nest(msgs []trace.Envelope, scratch bool, opt Options) *Result {
	if opt.BinRatio <= 1 {
		opt.BinRatio = 1.05
	}
	if opt.Bins <= 0 {
		opt.Bins = 340
	}
	if opt.BinLo <= 0 {
		opt.BinLo = time.Millisecond
	}
	r := &Result{Messages: len(msgs)}
	r.Algorithm = "nesting"
	s.msgs, s.opt = msgs, opt // all scratch in s.ar, freed by the caller: the result is on the Go heap
	// 1. Call pairs.
	s.findCallPairs()
	r.CallPairs, r.Unpaired = len(s.calls), s.unpaired
	if scratch {
		// The envelopes are not read after step 1: the ties and the
		// later steps' scratch go into their memory.
		s.ar.adopt(wordsOf(msgs))
		s.msgs = nil
	}
	s.ties = grabDirty[tie](&s.ar, len(s.calls))
	for i := range s.ties {
		s.ties[i] = tie{parent: -1, first: -1, next: -1}
	}
	if s.unpaired > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d messages could not be paired into a call and its return", s.unpaired, len(msgs)))
	}
	r.Warnings = append(r.Warnings, s.warnings...)
	if len(s.calls) == 0 {
		if len(msgs) > 0 {
			r.Warnings = append(r.Warnings, "no call pairs: the trace has neither kind=call/return nor endpoints to pair messages by")
		}
		return r
	}
	// 2. Candidate parents and the scoreboard, and 3. one parent per call,
	// node by node (a node's nestings score only in its own histograms).
	s.nestNodes()
	if s.withCand > 0 {
		r.Parallelism = float64(s.ncands) / float64(s.withCand)
	}
	r.Actors = s.actorStats
	// 4. Paths and patterns.
	s.findCallPaths(&r.Paths)
	r.Roots = s.roots
	return r
}

// call is one call pair, the fields every step compares (40 bytes; the
// rest is in tie and msgPair). Times are nanoseconds: cs the call leaving
// the caller, ca it reaching the callee, rd the return leaving the callee,
// cr it reaching the caller (each on the clock TimeMode selects).
type call struct {
	cs, ca, rd, cr int64
	caller, callee trace.NodeID
}

// tie is a call's place in the call trees (steps 3 and 4).
type tie struct {
	parent      int32 // −1: a root
	first, next int32 // first child and next sibling, children in order of their cs
	nkids       int32 // number of children
	pbin        int32 // scoreboard bin of the nesting delay in the parent
}

// msgPair is the call and the return message of a call.
type msgPair struct{ call, ret int32 }

// candidate is a possible parent of a call out of node b during steps 2
// and 3 at b: parent indexes b's calls in (byNode.in at b).
type candidate struct {
	parent int32
	hist   int32 // scoreboard histogram of (A, B, C)
	bin    int32 // 0: below BinLo; 1..Bins; Bins+1: above
}

type state struct {
	t        *trace.Trace // tables: node and endpoint names
	msgs     []trace.Envelope
	opt      Options
	ar       arena
	calls    []call
	ties     []tie     // by call
	pairs    []msgPair // by call
	unpaired int
	warnings []string

	ncands   int // candidates before step 2c
	withCand int

	actors     []actorPair // by call; nil when no message has actors
	actorStats []ActorStat
	actorTally sameactor.Tally // scratch: step 2b's counts at one node
	board      [][]float64
	bins       *binner
	roots      int
}
