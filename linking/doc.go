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
// message at a time (the remaining steps are shared):
//
//	J1. Pair RPCs: kind=call/return with call= ids where the trace has them,
//	    otherwise request/response alternation on a connection (a message
//	    pairs with the next message in the other direction on the same
//	    endpoints; the order within a connection is taken on the clock both
//	    events share).
//	J2. Initialise one delay model per transition class (incoming edge →
//	    outgoing edge at a node) from step 1's λ.
//	J3. At every traced node, sweep its sends in time order and give each one
//	    parent among the node's received messages, jointly: a received message
//	    opens or continues a span (a request's span ends when its paired reply
//	    is sent); a reply may only descend from its own request's span, a call
//	    only from a span still open when its return arrives; each received
//	    message normally causes one send (further children pay a learned
//	    fan-out cost); the cost of a link is −log of its class's delay density
//	    and a spontaneous send pays the WAP5 spontaneous weight. A message from
//	    an untraced node descends from its paired request (or, unpaired, from
//	    the most likely A→B message, §5.1).
//	J4. Refit the class delay models (gamma by moments, or exponential) and
//	    fan-out costs from the chosen links and repeat J3 until the choices
//	    settle.
//	J5. Every message now has at most one parent: the instances are the trees
//	    under the parentless messages; an instance's probability is the product
//	    of each choice's normalised weight among its admissible alternatives.
//
// The windowed mode (Options.Stream) runs the same algorithm over time chunks
// with an overlap of the window x, carrying the delay models from chunk to
// chunk, so memory is bounded by the chunk rather than the trace.
package linking
