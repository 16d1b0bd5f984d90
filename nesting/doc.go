// Package nesting infers causal call trees from RPC traces with Project 5's
// nesting algorithm (Aguilera et al., SOSP 2003, §5.1; Figure 4).
//
// The steps, numbered as in the code:
//
//  1. Find call pairs (§5.1.1.1, FindCallPairs). Messages marked kind=call
//     and kind=return are matched on (caller, callee, call id); without a
//     call id each return takes the earliest open call between the same
//     nodes. Messages without a kind are paired from their connection: the
//     two endpoints of a connection (or of a UDP socket pair) are told apart
//     as caller and callee by, in order, (a) an ephemeral port (≥ 32768, "*"
//     or an unnamed Unix socket) is the caller's; (b) the endpoint seen on
//     more connections is the callee's (a listening socket is shared by all
//     its connections); (c) a well-known port (< 1024) is the callee's; (d)
//     the side that receives the connection's first message is the callee.
//     Messages from caller to callee are calls, the others returns; request
//     and response alternate, so each return closes the earliest open call
//     of its connection. Messages are taken in order of the callee's clock
//     (a call when it arrived, a return when it left), so clock offsets
//     between caller and callee cannot put a return before its call; with
//     sender times only (TimeSend) calls are moved earlier by the skew
//     window instead. Messages that pair with nothing are counted and
//     reported in a warning.
//  2. Score possible nestings (§5.1.1.2, ScoreNestings), node by node.
//     (a) A call B→C is nested in every call A→B that was open at B when it
//     was made and returned after it; the comparison is loosened by the
//     skew window. (b) Actors (an addition; actors.go, with the counts and
//     the gate of package sameactor, which linking shares): where messages name
//     the thread that sent and received them, the calls of B with a single
//     candidate show how often a call leaves from the actor that received
//     its parent; where that share is at least ActorMin (99 %) and chance
//     agreement is ruled out (probability ≤ ActorChance, 10⁻⁶, against the
//     agreement unrelated actors would show; an event loop's one actor
//     always agrees), each call keeps only the candidates its own actor
//     received (all of them if none). (c) Each remaining candidate adds 1/N
//     (N = the child's number of candidates) to the scoreboard histogram of
//     (A, B, C) at its nesting delay, on log-1.05 bins from 1 ms (340 bins,
//     to about 2 h; delays below the first bin share one bin, as do those
//     above the last). (d) The histograms are optionally smoothed with a
//     Gaussian.
//  3. Choose one parent per call (§5.1.1.3, FindNestedPairs): the candidate
//     with the highest scoreboard value, scaled by the overlapping-child,
//     same-child and generic-child penalties (1+c)^-x, (1+c)^-y, (1+c)^-z,
//     where c counts the children already given to that parent (x = 2,
//     y = z = 0 by default). Ties go to the earliest parent.
//  4. Build call paths from the calls without a parent and aggregate them
//     into patterns (§5.1.1.4, FindCallPaths): each step keeps the call
//     delay (Step.Wait) and the latency (Step.Latency) as weighted
//     statistics, and the most frequent patterns also as histograms.
//
// Times. Project 5's sniffed traces carry one timestamp per message. wap5
// traces carry both the send and the receive time, each on its own node's
// clock, so by default (TimeLocal) every comparison of step 2 and every
// delay of step 4 is made on the clock of the node concerned: a nesting at B
// compares B's receipt of the parent call, B's sending of the child call,
// B's receipt of the child's return and B's sending of the parent's return.
// Clock offsets between nodes then do not matter. TimeSend uses the sending
// time only, as Project 5 did; the skew window and smoothing exist for it.
//
// Cost is linear in the number of messages times the mean per-node
// parallelism (§5.1.2), plus sorting when the input is not in time order.
// Step 1 takes the messages in the callee's clock order through a small
// queue (a message leaves it once no later one can come before it: the
// least lead of a call's arrival over its sending bounds that), not by
// sorting them all, and on the guess that the input is in time order,
// checked as it goes (else it starts over after a pass that finds the
// order and the lead).
// Only nodes with calls both in and out get steps 2 and 3's records.
// Steps 2 and 3 run node by node on compact records of each node's calls
// in time order, written in one pass over the calls; all scratch memory
// comes from an arena outside the Go heap in transparent huge pages
// (arena.go), reused from step to step and freed when Nest returns. The
// pass reads only the messages' envelopes (trace.Envelope: no ids, sizes
// or texts); NestEnvelopes takes them as trace.ReadFileEnvelopes decodes
// them, Nest makes them in its arena. Fresh memory costs page faults, so
// after step 1 the ties and the later steps' scratch go into the
// envelopes' memory (Nest, and NestEnvelopesScratch, which wap5 nest
// calls), and the calls into a mapping the reader is done with when the
// caller keeps those (hugemem.Keep).
package nesting
