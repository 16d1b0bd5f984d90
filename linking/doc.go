// Package linking infers causal paths from a message trace by message
// linking: WAP5 §5 (Reynolds et al., "WAP5: Black-box Performance Debugging
// for Wide-Area Systems", WWW 2006), faithfully as method "wap5", and a
// concurrency-aware joint linker as method "joint" (the default; see
// ARCHITECTURE.md, "Linking under concurrency").
//
// Method "wap5" (WAP5 §5.1–5.2, §2.5, §6.6), the steps as numbered in the code:
//
//  1. Estimate the average causal delay d(B→C) of every communicating pair:
//     for each message B→C, the smallest delay since a message into B within
//     the window x (no such message: spontaneous, not counted); λ = 1/d.
//     A message from an untraced node B to A uses A's clock and only A→B
//     messages (A→B→A causality, §5.1).
//  2. Score every candidate parent of every message by the delay density
//     f(t) = λe^{−λt} (or the gamma density λ²te^{−λt}, §5.1, as an option),
//     add the spontaneous alternative with the weight of a delay y·d,
//     normalise to probabilities, and invert the parent lists into child
//     lists. Optionally iterate steps 1–2, re-estimating d from the
//     probability-weighted delays, until λ settles (the paper's suggestion).
//  3. Build path instances from each root down: every link is probably true,
//     probably false, or — when its probability is near 0.5 or it is the most
//     likely cause of its child — try both, within a try-both budget per
//     tree; an instance's probability is the product of its decisions (p for
//     a link taken, 1−p for one left out). Aggregate instances into patterns
//     with count, expected count (sum of probabilities), maximum probability
//     and the composite metrics of §6.6 (expected/count, expected/√count).
//  4. Measure node delays (Step.Wait: parent received → child sent, one
//     clock) per pattern node and network delays (Step.Net: send → receive,
//     corrected with the trace's clock corrections) per pattern edge, weighted
//     by instance probability, with log histograms (WAP5 Figure 11).
//  5. Optionally aggregate clients (§2.5): a port is fixed when it talks to
//     many other ports, a node is a server when it uses a fixed port; other
//     nodes are named CLIENT (and their ephemeral ports *) before patterns are
//     aggregated.
//
// Method "joint" replaces steps 2–3 by choices made together rather than one
// message at a time (steps 1, 4 and 5 are shared):
//
//	J1. Pair RPCs: kind=call/return with call= ids where the trace has them,
//	    otherwise request/response alternation on a connection (a message
//	    pairs with the next message in the other direction on the same
//	    endpoints, ordered on the clock both events share; a reply from a
//	    server port with no request open is left alone, so a trace or chunk
//	    that starts mid-connection is not inverted).
//	J2. One delay model per transition class (the sender of the received
//	    message, the node, the destination of the sent one, their roles;
//	    every client counts as one sender and one destination),
//	    starting from step 1's exponential; on the first pass, the delays
//	    from every send to every earlier received message are collected per
//	    class: true links pile up in a peak above the even spread of false
//	    ones, and the peak seeds the class.
//	J2b. Actors (actors.go; package sameactor, shared with nesting's step
//	    2b): where messages name their threads (sa=/da=), learn per node
//	    from the calls that fit in exactly one request span whether calls
//	    leave from the thread that received the span's request; where they
//	    do in ≥ Options.ActorMin (99 %) of them and chance agreement is
//	    ruled out (≤ ActorChance, 10⁻⁶; never with one receiving thread), a
//	    call from another thread costs 20 nats in a span (J3's candidates of
//	    that span, J4's span costs). Without actors nothing changes.
//	J3. Sweep: at every traced node, each send in time order takes the
//	    cheapest admissible received message as its parent. A received
//	    request opens a span that ends when its paired reply is sent; a
//	    reply may only descend from its own request's span, a call only from
//	    a span still open when its return arrives, and a call with an open
//	    span at hand is spontaneous only at a high price. The cost of a link
//	    is −log(density of its class at the delay × P(class | trigger class))
//	    plus a learned fan-out cost; a spontaneous send pays the WAP5 weight
//	    of a delay y·d. A message from an untraced node descends from its
//	    paired request (or, unpaired, from the most likely message the other
//	    way, §5.1); a request from an untraced node starts a path.
//	J4. Repair (the joint step, on the last passes): calls are grouped by
//	    what usually causes calls to their destination, and each group is
//	    assigned to the request spans at once — a minimum-cost assignment
//	    (Hungarian algorithm, in overlapping blocks) where a call's cost in a
//	    span is what it adds to the span's cost: the delay of every send of
//	    the span after the latest message the span received before it, the
//	    fan-out of every received message, and the span's number of calls
//	    per destination, counted per span class (the node, and whether the
//	    request came from the node itself, so that two services on one node
//	    keep apart; prior from
//	    the trace: calls per request at the node, then learned from the
//	    unambiguous spans of the class). After the assignment, a tie-breaker:
//	    a call on another connection than the one the span's neighbours on
//	    its incoming connection used for that destination costs a little
//	    (up to 2 nats, learned: how often such neighbours share it). Then
//	    moves and swaps between spans while they lower the cost (swaps of
//	    calls to one destination, and of a call with another span's call
//	    to another destination: two moves that each cost more alone).
//	    Every send of a span gets as parent the latest message the span
//	    received before it — except a parallel call (one of a class and destination whose
//	    calls are often sent while another call of the span is outstanding,
//	    learned from the spans), whose parent is the request — and every
//	    call a probability: its span against the others. Under message loss
//	    the spans include half spans: an unpaired request received (its
//	    reply lost) lasts at most the node's longest span; an unpaired reply
//	    sent (its request lost) began at most that long before, and its
//	    sends before any return have no parent. A send whose cause may have
//	    been lost (the node sent a call without return or received a return
//	    without call since the span's latest message) costs at most
//	    −log(the loss rate, from the unpaired share) plus a uniform delay;
//	    an unpaired reply ends its path where it arrives. So a lost message
//	    breaks its own path only.
//	J5. Refit the class densities (gamma by moments, or exponential, fitted
//	    within two interquartile ranges), transition and fan-out
//	    probabilities and the count models from the links — first from the
//	    unambiguous links only (one admissible parent), after a repair from
//	    all — and repeat J3 (sweeps alone until they settle, then two passes
//	    with J4).
//	J5b. Count structure test (structure.go, whole traces only): where the
//	    assignment contradicts a count model's one-call prior (≥ 20 % of the
//	    class's spans with calls have two or more), run structPasses more
//	    passes from the prior "no call or two" with the same mean, and keep
//	    whichever final assignment has the lower total span cost (J4's cost
//	    summed over all spans, each under the models fitted from its own
//	    assignment). Nothing runs where no count model is in doubt.
//	J5c. Settling (whole traces). Where fewer than Options.SettleSweep
//	    (default 1 %) of the first sweep's sends chose a parent less likely
//	    than 0.99, the second sweep alone is skipped: the repair passes
//	    follow the first. Where the first pass with J4 changed fewer than
//	    Options.Settle (default 10⁻³) of the links the sweeps had chosen,
//	    the assignment has settled and that pass is the last (it scores
//	    every call; its refit is the count models, for J5b, and what
//	    compare reads) — unless J5b doubts a count model. On the CoDeeN-sized trace 0.16 % of the
//	    first sweep's sends are unsure (the second sweep changed 378 of
//	    4.7 M links), the first repair pass changes 2·10⁻⁴ of the links
//	    and the second would change 4; patterns and instances are the
//	    same as with every pass (only the fit line differs). On the
//	    concurrent scenarios (multitier: 38 % unsure, 23 % changed by the
//	    first repair) every pass runs.
//	    Per node (whole traces, not under loss): a node where fewer than
//	    Options.SettleNode (default 1 %) of the sends the last sweep
//	    before the repair passes linked chose a parent less likely than
//	    0.99 is settled. The repair passes do not sweep it again (its
//	    links, children and spans stand as that sweep left them), and J4
//	    assigns only its open calls, those the sweep was unsure of: the
//	    others stay in their spans (but for a swap with an open call),
//	    part of the costs of the spans they are in; then
//	    every send of its spans gets its parent from the span and, on the
//	    scoring pass, every call its probability as anywhere else. A send
//	    of a settled node that J4 does not link (a root call, a message
//	    without a reply) keeps the parent and probability of that sweep,
//	    under the models before its refit. On the CoDeeN-sized trace all
//	    115 proxies settle (4,721 of 2.9 M sends unsure, at most 0.25 %
//	    at a node): the repair pass sweeps nothing and its assignment
//	    takes 4,712 of 872 k calls; its instances are more often right
//	    than with the second sweep (exact-set precision and recall
//	    0.99983 / 0.99991 → 0.99998 / 0.99998), the top patterns the same.
//	    On multitier 2 of 8 nodes settle (the client and a leaf).
//	J6. Every message now has at most one parent: the instances are the trees
//	    under the parentless messages; an instance's probability is the product
//	    of its choices' probabilities.
//
// Steps 3–4 build the patterns in rank order after every instance is
// counted; Options.OnPattern takes each one as it is built instead of
// Paths.Patterns, so that a caller writing them out (wap5 link --json)
// holds one at a time: a large noisy trace has hundreds of thousands.
//
// Options.Lean (wap5 link) lets a whole trace's joint run drop the trace's
// messages from J2 to J6: the passes read what they need of a message from
// their own per-message records (its times, edge, endpoints, threads), and
// the messages are made again after J6 (without the columns linking does
// not read); on the CoDeeN-sized trace the messages are ~290 MiB of heap.
// A WAP5 run instead packs them in place into the first half of their
// array (times, endpoints, threads, kind: 32 bytes) and gives the second
// half's pages back for steps 1–3 and the aggregation, which read the
// packed messages and their edges (msgView). With Options.DropMessages
// (wap5 link without --instances) neither method makes the messages again:
// the joint linker's aggregation reads its own records (hot, kinds).
//
// The windowed mode (Options.Stream) runs the same algorithm over time chunks
// with an overlap of the window x, carrying the delay models from chunk to
// chunk, so memory is bounded by the chunk rather than the trace; instances
// are handed to Options.OnInstance as each chunk is linked, and the result's
// StreamPatterns rank their patterns at the end. Its pattern table keeps
// the patterns' counts in memory and spills their shapes and delay
// accumulators beyond Options.StreamMemory to a temporary file, reading each
// back when it is met again and at the end (spill.go); the joint linker's
// carried classes beyond the same budget that a chunk did not use go to
// another (classspill.go) and are read back when a later chunk meets them:
// the same result, bit for bit, with memory bounded but for a small entry
// per pattern and an index slot per spilled class.
package linking
